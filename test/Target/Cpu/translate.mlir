// RUN: %optgen-translate --optgen-to-cpu %s | FileCheck %s --strict-whitespace

// Emitter tests can start from IR: optgen-translate prints the files that
// `optgen compile --target=cpu` writes for executable IR, each after a
// `// ----- NAME` line. Values take their names from their locations; the
// comments cite this file, the source of the IR here.

// CHECK-LABEL: // ----- CMakeLists.txt
// CHECK:       optgen_add_generated_library(sgd sgd.cpp)
// CHECK-LABEL: // ----- sgd.cpp
// CHECK:       // Rule 'sgd', translate.mlir:{{[0-9]+}}.
// CHECK-NEXT:  void step_sgd(const optgen::runtime::RuleCall &call) {
// CHECK:         float *const slot0 = call.workspace + offsets[0];
// CHECK:         const float lr = static_cast<float>(call.hypers[0]);
// CHECK:         // Kernel: one pass over *, from spec line {{[0-9]+}}.
// CHECK:         optgen::runtime::Tile t{slot0, R_, C_};
// CHECK:         for (int64_t k = 0; k < R_ * C_; ++k) {
// CHECK-NEXT:      const float e_0 = (lr * g.data[k]);
// CHECK-NEXT:      const float e_1 = (p.data[k] - e_0);
// CHECK-NEXT:      t.data[k] = e_1;
// CHECK-NEXT:    }
// CHECK-NEXT:    // translate.mlir:{{[0-9]+}}
// CHECK-NEXT:    optgen::runtime::copyTile(t, call.param);
// CHECK-LABEL: // ----- sgd.h
// CHECK:       class sgd
module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536, supports = "shard_groups | skip_nonfinite">} {
optgen.optimizer @sgd {
  optgen.rule @sgd inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<*, f32>]} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" default(1.000000e-01 : f32) {offset = 0 : i64} : f32 loc("lr")
    %0 = optgen.kernel -> (!optgen.tensor<*, f32>) {
      %1 = optgen.mul %lr, %g : f32, !optgen.tensor<*, f32>
      %2 = optgen.sub %p, %1 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      optgen.yield %2 : !optgen.tensor<*, f32>
    } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
    optgen.update %0 : !optgen.tensor<*, f32>
  }
  optgen.group @all = @sgd match ["*"] {}
  optgen.distribute none
}
}
