// The accumulator is the target description's: f32 for cuda, f64 for cpu.
// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen-set-target{target=cuda},optgen.optimizer(optgen.rule(optgen-set-accumulators)))' | FileCheck %s --check-prefix=F32
// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen-set-target{target=cpu},optgen.optimizer(optgen.rule(optgen-set-accumulators)))' | FileCheck %s --check-prefix=F64
// RUN: not %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-set-accumulators)))' 2>&1 | FileCheck %s --check-prefix=BAD
// The same pass on a global names its partials' accumulators.
// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen-set-target{target=cpu},optgen.optimizer(optgen.global(optgen-set-accumulators)))' | FileCheck %s --check-prefix=GLOBAL

// Every reduction names its accumulator, inside kernels too; one already
// named keeps its type.
// F32-LABEL: optgen.rule @norms
// F32: optgen.reduce norm %g {accumulator = f32}
// F32: optgen.reduce sum %{{.*}} {accumulator = f32}
// F32: optgen.reduce max %g {accumulator = f64}
// F64-LABEL: optgen.rule @norms
// F64: optgen.reduce norm %g {accumulator = f64}
// F64: optgen.reduce sum %{{.*}} {accumulator = f64}
// F64: optgen.reduce max %g {accumulator = f64}
// Without a target description there is no accumulator to choose.
// BAD: error: optgen-set-accumulators needs the module's target description ('optgen.target', set by optgen-set-target)
optgen.optimizer @o {
  optgen.rule @norms inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], bf16>, %g: !optgen.tensor<[m, n], bf16>):
    %n = optgen.reduce norm %g : !optgen.tensor<[m, n], bf16>
    %k:2 = optgen.kernel -> (!optgen.tensor<[m, n], bf16>, bf16) {
      %sq = optgen.mul %g, %g : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, n], bf16>
      %s = optgen.reduce sum %sq : !optgen.tensor<[m, n], bf16>
      optgen.yield %sq, %s : !optgen.tensor<[m, n], bf16>, bf16
    }
    %x = optgen.reduce max %g {accumulator = f64} : !optgen.tensor<[m, n], bf16>
    optgen.update %p : !optgen.tensor<[m, n], bf16>
  }
}

// -----

// GLOBAL-LABEL: optgen.global @norm_and_peak
// GLOBAL: optgen.reduce_params sum %{{.*}} {accumulator = f64}
// GLOBAL: optgen.reduce_params max %g {accumulator = f32}
// F32-LABEL: optgen.global @norm_and_peak
// F32: optgen.reduce_params sum %{{.*}} : !optgen.tensor<*, f32>
optgen.optimizer @o {
  optgen.global @norm_and_peak inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
    %1 = optgen.reduce_params sum %0 : !optgen.tensor<*, f32>
    %2 = optgen.reduce_params max %g {accumulator = f32} : !optgen.tensor<*, f32>
    %3 = optgen.add %1, %2 : f32, f32
    optgen.yield %3 : f32
  }
}
