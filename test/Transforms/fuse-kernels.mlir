// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-fuse-kernels)))' | FileCheck %s

// One AdamW step is one kernel: it reads p, g, m, v once and yields p, m, v;
// the bias corrections, scalar math, run before it.
// CHECK-LABEL: optgen.rule @adamw
// CHECK: %[[STEP:.*]] = optgen.step
// CHECK: optgen.pow %{{.*}}, %[[STEP]]
// CHECK: %[[K:.*]]:3 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
// CHECK-NOT: optgen.kernel
// CHECK: optgen.yield
// CHECK-NEXT: }
// CHECK-NEXT: optgen.update %[[K]]#2 state(%[[K]]#{{[01]}}, %[[K]]#{{[01]}}
optgen.optimizer @o {
  optgen.rule @adamw inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" : f32
    %beta1 = optgen.hyper "beta1" default(0.9 : f32) : f32
    %beta2 = optgen.hyper "beta2" default(0.999 : f32) : f32
    %eps = optgen.hyper "eps" default(1.0e-8 : f32) : f32
    %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
    %v = optgen.state "v" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
    %one = optgen.constant 1 : i64
    %w1 = optgen.sub %one, %beta1 : i64, f32
    %m1 = optgen.lerp %m, %g, %w1 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
    %gg = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
    %w2 = optgen.sub %one, %beta2 : i64, f32
    %v1 = optgen.lerp %v, %gg, %w2 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
    %t = optgen.step : i64
    %b1 = optgen.pow %beta1, %t : f32, i64
    %c1 = optgen.sub %one, %b1 : i64, f32
    %s = optgen.div %lr, %c1 : f32, f32
    %sq = optgen.sqrt %v1 : !optgen.tensor<*, f32>
    %den = optgen.add %sq, %eps : !optgen.tensor<*, f32>, f32
    %num = optgen.mul %s, %m1 : f32, !optgen.tensor<*, f32>
    %u = optgen.div %num, %den : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
    %p1 = optgen.sub %p, %u : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
    optgen.update %p1 state(%m1, %v1 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
  }
}

// -----

// A value a reduction computes is used only after the kernel that reduces:
// normalising by the norm takes two kernels, with the scalar math between.
// Element types do not split kernels: the bf16 division and the f32 update
// share one.
// CHECK-LABEL: optgen.rule @normalize
// CHECK: %[[K1:.*]]:2 = optgen.kernel -> (!optgen.tensor<[m, n], bf16>, bf16) {
// CHECK-NEXT: optgen.cast
// CHECK-NEXT: optgen.reduce norm
// CHECK: %[[D:.*]] = optgen.add %[[K1]]#1
// CHECK: optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
// CHECK-NEXT: optgen.div %[[K1]]#0, %[[D]]
// CHECK-NEXT: optgen.sub %p
optgen.optimizer @o {
  optgen.rule @normalize inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %x = optgen.cast %g : !optgen.tensor<[m, n], f32> to !optgen.tensor<[m, n], bf16>
    %n = optgen.reduce norm %x : !optgen.tensor<[m, n], bf16>
    %eps = optgen.constant 1.0e-6 : f64
    %d = optgen.add %n, %eps : bf16, f64
    %y = optgen.div %x, %d : !optgen.tensor<[m, n], bf16>, bf16
    %p1 = optgen.sub %p, %y : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], bf16>
    optgen.update %p1 : !optgen.tensor<[m, n], f32>
  }
}

// -----

// Scalar math on a reduction (MuonEq's target norm) does not end the run
// when nothing in the run reads it: the row norms of the same values join
// the kernel, and the scalar math follows it. What does read it (the
// scaling by target / row_norm) starts the next kernel.
// CHECK-LABEL: optgen.rule @muoneq
// CHECK: %[[K:.*]]:3 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, f32, !optgen.tensor<[m, 1], f32>) {
// CHECK-NEXT: optgen.mul %g
// CHECK-NEXT: optgen.reduce norm
// CHECK-NEXT: optgen.reduce norm {{.*}} along
// CHECK-NEXT: optgen.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[T:.*]] = optgen.div %[[K]]#1
// CHECK-NEXT: optgen.kernel -> (!optgen.tensor<[m, 1], f32>) {
// CHECK-NEXT: optgen.div %[[T]], %[[K]]#2
optgen.optimizer @o {
  optgen.rule @muoneq inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %one = optgen.constant 1 : i64
    %two = optgen.constant 2.0 : f64
    %x = optgen.mul %g, %two : !optgen.tensor<[m, n], f32>, f64
    %n = optgen.reduce norm %x : !optgen.tensor<[m, n], f32>
    %target = optgen.div %n, %two : f32, f64
    %rn = optgen.reduce norm %x along %one : !optgen.tensor<[m, n], f32>
    %s = optgen.div %target, %rn : f32, !optgen.tensor<[m, 1], f32>
    %y = optgen.mul %x, %s : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
    %p1 = optgen.sub %p, %y : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    optgen.update %p1 : !optgen.tensor<[m, n], f32>
  }
}

// -----

// A shape query of a tensor the run makes still ends the run where it
// stands (just after the tensor): deferring it would make the kernel write
// that tensor out for it. The reductions after it share the next kernel.
// CHECK-LABEL: optgen.rule @shaped
// CHECK: %[[X:.*]] = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
// CHECK: optgen.dim %[[X]]
// CHECK: optgen.kernel -> (f32, !optgen.tensor<[m, 1], f32>) {
// CHECK-NEXT: optgen.reduce norm %[[X]] :
// CHECK-NEXT: optgen.reduce norm %[[X]] along
optgen.optimizer @o {
  optgen.rule @shaped inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %one = optgen.constant 1 : i64
    %two = optgen.constant 2.0 : f64
    %x = optgen.mul %g, %two : !optgen.tensor<[m, n], f32>, f64
    %n = optgen.reduce norm %x : !optgen.tensor<[m, n], f32>
    %cols = optgen.dim %x, %one : !optgen.tensor<[m, n], f32>
    %target = optgen.div %n, %cols : f32, i64
    %rn = optgen.reduce norm %x along %one : !optgen.tensor<[m, n], f32>
    %s = optgen.div %target, %rn : f32, !optgen.tensor<[m, 1], f32>
    %y = optgen.mul %x, %s : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
    %p1 = optgen.sub %p, %y : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    optgen.update %p1 : !optgen.tensor<[m, n], f32>
  }
}

// -----

// Matrix products stay outside kernels; an elementwise op waits for the
// product it is added to, so a * x and its sum with x @ B share a kernel,
// and b * A + c * AA share another.
// CHECK-LABEL: optgen.rule @quintic
// CHECK: %[[A:.*]] = optgen.matmul
// CHECK: %[[AA:.*]] = optgen.matmul %[[A]], %[[A]]
// CHECK: %[[B:.*]] = optgen.kernel -> (!optgen.tensor<[m, m], f32>) {
// CHECK-COUNT-2: optgen.mul
// CHECK-NEXT: optgen.add
// CHECK: %[[BX:.*]] = optgen.matmul %[[B]], %p
// CHECK: optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
// CHECK-NEXT: optgen.mul
// CHECK-NEXT: optgen.add %{{.*}}, %[[BX]]
optgen.optimizer @o {
  optgen.rule @quintic inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %a = optgen.constant 3.4445 : f64
    %b = optgen.constant -4.775 : f64
    %c = optgen.constant 2.0315 : f64
    %t = optgen.transpose %p : !optgen.tensor<[m, n], f32>
    %A = optgen.matmul %p, %t : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, m], f32>
    %ax = optgen.mul %a, %p : f64, !optgen.tensor<[m, n], f32>
    %bA = optgen.mul %b, %A : f64, !optgen.tensor<[m, m], f32>
    %AA = optgen.matmul %A, %A : !optgen.tensor<[m, m], f32>, !optgen.tensor<[m, m], f32>
    %cAA = optgen.mul %c, %AA : f64, !optgen.tensor<[m, m], f32>
    %B = optgen.add %bA, %cAA : !optgen.tensor<[m, m], f32>, !optgen.tensor<[m, m], f32>
    %Bx = optgen.matmul %B, %p : !optgen.tensor<[m, m], f32>, !optgen.tensor<[m, n], f32>
    %x1 = optgen.add %ax, %Bx : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    optgen.update %x1 : !optgen.tensor<[m, n], f32>
  }
}
