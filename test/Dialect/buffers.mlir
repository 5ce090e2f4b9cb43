// RUN: %optgen-opt %s | %optgen-opt | FileCheck %s
// RUN: %optgen-opt %s --mlir-print-op-generic | %optgen-opt | FileCheck %s

// The memory plan of an executable rule round-trips.
// CHECK-LABEL: optgen.rule @r
// CHECK-SAME: attributes {optgen.workspace = [#optgen.slot<[m, n], f32>, #optgen.slot<[m, 1], f64>, #optgen.slot<*, f32>]}
// CHECK: optgen.reduce sum %{{.*}} along %{{.*}} {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 1>]}
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 0>, #optgen.buffer<state, 0>]}
optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, n], f32>, #optgen.slot<[m, 1], f64>, #optgen.slot<*, f32>]} {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %one = optgen.constant 1 : i64
    %m = optgen.state "m" like %p : !optgen.tensor<[m, n], f32> reduced %one -> !optgen.tensor<[m, 1], f32>
    %k:2 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>) {
      %0 = optgen.mul %g, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      %1 = optgen.reduce sum %0 along %one {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 1>]} : !optgen.tensor<[m, n], f32>
      optgen.yield %0, %1 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
    } {optgen.buffers = [#optgen.buffer<workspace, 0>, #optgen.buffer<state, 0>]}
    optgen.update %p state(%k#1 : !optgen.tensor<[m, 1], f32>) : !optgen.tensor<[m, n], f32>
  }
}

// A double-buffered loop: the slot its body makes the next value in.
// CHECK-LABEL: optgen.rule @loop
// CHECK: optgen.for_table {{.*}} attributes {optgen.buffers = [#optgen.buffer<workspace, 0>], optgen.next_buffers = [#optgen.buffer<workspace, 1>]}
optgen.optimizer @o2 {
  optgen.rule @loop inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, n], f32>, #optgen.slot<[m, n], f32>]} {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %steps = optgen.constant 2 : i64
    %x0 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.neg %g : !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
    %xn = optgen.for_table %steps over dense<[[1.0]]> : tensor<1x1xf64> iter %x0 : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32> attributes {optgen.buffers = [#optgen.buffer<workspace, 0>], optgen.next_buffers = [#optgen.buffer<workspace, 1>]} {
    ^bb0(%a: f32, %x: !optgen.tensor<[m, n], f32>):
      %y = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %0 = optgen.mul %x, %a : !optgen.tensor<[m, n], f32>, f32
        optgen.yield %0 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      optgen.yield %y : !optgen.tensor<[m, n], f32>
    }
    optgen.update %xn : !optgen.tensor<[m, n], f32>
  }
}
