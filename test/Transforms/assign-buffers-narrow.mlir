// The storage is the target description's: narrow for cuda, wide for cpu.
// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen-set-target{target=cuda},optgen.optimizer(optgen.rule(optgen-assign-buffers)))' | FileCheck %s --check-prefixes=CHECK,NARROW
// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen-set-target{target=cpu},optgen.optimizer(optgen.rule(optgen-assign-buffers)))' | FileCheck %s --check-prefixes=CHECK,WIDE

// With narrow storage (device targets) a bf16 tensor lives in a bf16 slot,
// and so does a product of two (cuBLASLt reads and writes bf16); an f32
// result is not written over a dead bf16 input, nor a bf16 result over a
// dead f32 one: each takes a slot of its own storage. Without it, every
// tensor is stored as f32 and the dead input is reused.
// CHECK-LABEL: optgen.rule @mixed
// NARROW-SAME: attributes {optgen.workspace = [#optgen.slot<[m, n], bf16>, #optgen.slot<[n, n], bf16>, #optgen.slot<[m, n], f32>]}
// WIDE-SAME: attributes {optgen.workspace = [#optgen.slot<[m, n], f32>, #optgen.slot<[n, n], f32>]}
// CHECK: %[[X:.*]] = optgen.kernel
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
// CHECK: optgen.gemm {{.*}} {optgen.buffers = [#optgen.buffer<workspace, 1>]}
// The product's f32 copy: over x (dead) only when both are f32.
// CHECK: optgen.kernel
// NARROW: } {optgen.buffers = [#optgen.buffer<workspace, 2>]}
// WIDE: } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
// Back to bf16: over the dead f32 value when both are f32; else in x's bf16
// slot, free again.
// CHECK: optgen.kernel
// NARROW: } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
// WIDE: } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
// CHECK: optgen.kernel
// CHECK: } {optgen.buffers = [#optgen.buffer<param, 0>]}
optgen.optimizer @o {
  optgen.rule @mixed inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %x = optgen.kernel -> (!optgen.tensor<[m, n], bf16>) {
      %0 = optgen.cast %g : !optgen.tensor<[m, n], f32> to !optgen.tensor<[m, n], bf16>
      optgen.yield %0 : !optgen.tensor<[m, n], bf16>
    }
    %a = optgen.gemm %x transposed, %x : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[n, n], bf16>
    %y = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.cast %x : !optgen.tensor<[m, n], bf16> to !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    }
    %z = optgen.kernel -> (!optgen.tensor<[m, n], bf16>) {
      %0 = optgen.cast %y : !optgen.tensor<[m, n], f32> to !optgen.tensor<[m, n], bf16>
      optgen.yield %0 : !optgen.tensor<[m, n], bf16>
    }
    %q = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.cast %z : !optgen.tensor<[m, n], bf16> to !optgen.tensor<[m, n], f32>
      %1 = optgen.sub %p, %0 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      optgen.yield %1 : !optgen.tensor<[m, n], f32>
    }
    optgen.update %q : !optgen.tensor<[m, n], f32>
  }
}
