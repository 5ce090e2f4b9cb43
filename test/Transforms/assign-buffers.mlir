// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen-set-target{target=cpu},optgen.optimizer(optgen.rule(optgen-assign-buffers)))' | FileCheck %s

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
// temporaries get slots of their own shape; the if's result has a slot,
// which the product the branch yields is made in (no copy); the loop is
// double buffered (the next value's slot is exchanged with the carried
// one); the parameter's final value is written over it.
// CHECK-LABEL: optgen.rule @polar
// CHECK-SAME: optgen.workspace = [#optgen.slot<[m, n], f32>, #optgen.slot<[m, n], f32>, #optgen.slot<[n, n], f32>, #optgen.slot<[n, n], f32>]
// CHECK: %[[X:.*]] = optgen.kernel
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
// CHECK: optgen.for_table {{.*}} attributes {optgen.buffers = [#optgen.buffer<workspace, 0>], optgen.next_buffers = [#optgen.buffer<workspace, 1>]}
// CHECK: optgen.gemm {{.*}} {optgen.buffers = [#optgen.buffer<workspace, 2>]}
// CHECK: optgen.gemm {{.*}} {optgen.buffers = [#optgen.buffer<workspace, 3>]}
// CHECK: optgen.gemm {{.*}} {optgen.buffers = [#optgen.buffer<workspace, 1>]}
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

// -----

// An `if` whose branches yield what they make: the kernel result is made in
// the result's buffer; a value from above the `if` is copied there. A loop
// whose next value is the carried value itself is not double buffered.
// CHECK-LABEL: optgen.rule @branches
// CHECK: optgen.for_table {{.*}} attributes {optgen.buffers = [#optgen.buffer<workspace, 0>]} {
// CHECK: %[[T:.*]] = optgen.kernel
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
// CHECK: %[[U:.*]] = optgen.kernel
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 2>]}
// CHECK: optgen.yield %[[U]]
// CHECK: optgen.yield %[[T]]
// CHECK: } {optgen.buffers = [#optgen.buffer<workspace, 2>]}
// CHECK: optgen.yield %arg{{[0-9]+}} :
optgen.optimizer @o {
  optgen.rule @branches inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %steps = optgen.hyper "steps" : i64
    %rows = optgen.constant -2 : i64
    %cols = optgen.constant -1 : i64
    %x0 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.neg %g : !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    }
    %xn = optgen.for_table %steps over dense<[[1.0]]> : tensor<1x1xf64> iter %x0 : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32> {
    ^bb0(%a: f32, %x: !optgen.tensor<[m, n], f32>):
      %t = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %0 = optgen.mul %x, %a : !optgen.tensor<[m, n], f32>, f32
        optgen.yield %0 : !optgen.tensor<[m, n], f32>
      }
      %m = optgen.dim %x, %rows : !optgen.tensor<[m, n], f32>
      %n = optgen.dim %x, %cols : !optgen.tensor<[m, n], f32>
      %cond = optgen.cmp gt, %m, %n : i64, i64
      %y = optgen.if %cond -> (!optgen.tensor<[m, n], f32>) {
        %u = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
          %0 = optgen.exp %t : !optgen.tensor<[m, n], f32>
          optgen.yield %0 : !optgen.tensor<[m, n], f32>
        }
        optgen.yield %u : !optgen.tensor<[m, n], f32>
      } else {
        optgen.yield %t : !optgen.tensor<[m, n], f32>
      }
      %s = optgen.kernel -> (f32) {
        %0 = optgen.reduce sum %y : !optgen.tensor<[m, n], f32>
        optgen.yield %0 : f32
      }
      optgen.yield %x : !optgen.tensor<[m, n], f32>
    }
    %p1 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.sub %p, %xn : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    }
    optgen.update %p1 : !optgen.tensor<[m, n], f32>
  }
}

// -----

// Extents the types leave open (`?`): the next value is copied, as slots of
// one type may then hold values of different sizes.
// CHECK-LABEL: optgen.rule @unknown
// CHECK: optgen.for_table {{.*}} attributes {optgen.buffers = [#optgen.buffer<workspace, 0>]} {
// CHECK-NOT: next_buffers
optgen.optimizer @o {
  optgen.rule @unknown inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[?, ?], f32>, %g: !optgen.tensor<[?, ?], f32>):
    %steps = optgen.hyper "steps" : i64
    %x0 = optgen.kernel -> (!optgen.tensor<[?, ?], f32>) {
      %0 = optgen.neg %g : !optgen.tensor<[?, ?], f32>
      optgen.yield %0 : !optgen.tensor<[?, ?], f32>
    }
    %xn = optgen.for_table %steps over dense<[[1.0]]> : tensor<1x1xf64> iter %x0 : !optgen.tensor<[?, ?], f32> -> !optgen.tensor<[?, ?], f32> {
    ^bb0(%a: f32, %x: !optgen.tensor<[?, ?], f32>):
      %y = optgen.gemm %x, %x transposed plus %x : !optgen.tensor<[?, ?], f32> scaled %a : f32 : !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32> -> !optgen.tensor<[?, ?], f32>
      optgen.yield %y : !optgen.tensor<[?, ?], f32>
    }
    %p1 = optgen.kernel -> (!optgen.tensor<[?, ?], f32>) {
      %0 = optgen.sub %p, %xn : !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>
      optgen.yield %0 : !optgen.tensor<[?, ?], f32>
    }
    optgen.update %p1 : !optgen.tensor<[?, ?], f32>
  }
}
