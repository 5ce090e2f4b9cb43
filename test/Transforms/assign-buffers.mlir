// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-assign-buffers)))' | FileCheck %s

// One AdamW step writes p, m and v in place: no workspace at all.
// CHECK-LABEL: optgen.rule @adamw
// CHECK-SAME: attributes {optgen.workspace = []}
// CHECK: } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
optgen.optimizer @o {
  optgen.rule @adamw inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" : f32
    %w = optgen.hyper "w" : f32
    %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
    %v = optgen.state "v" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
    %k:3 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
      %gg = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %v1 = optgen.lerp %v, %gg, %w : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %m1 = optgen.lerp %m, %g, %w : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %u = optgen.div %m1, %v1 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %s = optgen.mul %lr, %u : f32, !optgen.tensor<*, f32>
      %p1 = optgen.sub %p, %s : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      optgen.yield %v1, %m1, %p1 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
    }
    optgen.update %k#2 state(%k#1, %k#0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
  }
}

// -----

// Temporaries: a dead one is overwritten in place, a live one is not; a
// slot is reused once the value in it is dead; the gradient is never
// written; the parameter only by its final value.
// CHECK-LABEL: optgen.rule @temporaries
// CHECK-SAME: attributes {optgen.workspace = [#optgen.slot<[m, n], f32>, #optgen.slot<[m, n], f32>]}
// CHECK: %[[A:.*]] = optgen.kernel
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
// CHECK: %[[B:.*]] = optgen.kernel
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
// CHECK: %[[C:.*]] = optgen.kernel
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
// CHECK: %[[D:.*]] = optgen.kernel
// CHECK: } {optgen.buffers = [#optgen.buffer<param, 0>]}
optgen.optimizer @o {
  optgen.rule @temporaries inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %a = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.mul %g, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    }
    %b = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.exp %a : !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    }
    %c = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.add %a, %b : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    }
    %d = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.sub %p, %c : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    }
    optgen.update %d : !optgen.tensor<[m, n], f32>
  }
}

// -----

// Polar Express: the loop's carried value takes over its initial value's
// slot; a gemm never writes over what it multiplies; each branch's
// temporaries get slots of their own shape; the if's result has a slot;
// the parameter's final value is written over it.
// CHECK-LABEL: optgen.rule @polar
// CHECK: %[[X:.*]] = optgen.kernel
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
// CHECK: optgen.for_table {{.*}} attributes {optgen.buffers = [#optgen.buffer<workspace, 0>]}
// CHECK: optgen.gemm {{.*}} {optgen.buffers = [#optgen.buffer<workspace, 2>]}
// CHECK: optgen.gemm {{.*}} {optgen.buffers = [#optgen.buffer<workspace, 3>]}
// CHECK: optgen.gemm {{.*}} {optgen.buffers = [#optgen.buffer<workspace, 4>]}
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
// CHECK: } {optgen.buffers = [#optgen.buffer<param, 0>]}
optgen.optimizer @o {
  optgen.rule @polar inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %steps = optgen.hyper "steps" : i64
    %x0 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.neg %g : !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    }
    %xn = optgen.for_table %steps over dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf64> iter %x0 : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32> {
    ^bb0(%a: f32, %b: f32, %c: f32, %x: !optgen.tensor<[m, n], f32>):
      %true = optgen.constant true
      %y = optgen.if %true -> (!optgen.tensor<[m, n], f32>) {
        %A = optgen.gemm %x transposed, %x symmetric : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[n, n], f32>
        %B = optgen.gemm %A, %A transposed scaled %c : f32 plus %A : !optgen.tensor<[n, n], f32> scaled %b : f32 symmetric : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
        %Y = optgen.gemm %x, %B plus %x : !optgen.tensor<[m, n], f32> scaled %a : f32 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[m, n], f32>
        optgen.yield %Y : !optgen.tensor<[m, n], f32>
      } else {
        optgen.yield %x : !optgen.tensor<[m, n], f32>
      }
      optgen.yield %y : !optgen.tensor<[m, n], f32>
    }
    %p1 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.sub %p, %xn : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    }
    optgen.update %p1 : !optgen.tensor<[m, n], f32>
  }
}
