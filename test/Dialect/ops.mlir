// RUN: %optgen-opt %s | %optgen-opt | FileCheck %s
// RUN: %optgen-opt %s --mlir-print-op-generic | %optgen-opt | FileCheck %s
// Every op of the dialect prints as it parses.

// CHECK-LABEL: optgen.optimizer @everything
optgen.optimizer @everything {
  // CHECK: optgen.rule @r inputs ["p", "g"]
  // CHECK-NEXT: ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    // CHECK: %lr = optgen.hyper "lr" : f32
    %lr = optgen.hyper "lr" : f32
    // CHECK: %betas = optgen.hyper "betas" default([8.000000e-01 : f32, 0.949999988 : f32]) : tuple<f32, f32>
    %betas = optgen.hyper "betas" default([0.8 : f32, 0.95 : f32]) : tuple<f32, f32>
    // CHECK: %ns_steps = optgen.hyper "ns_steps" default(5 : i64) : i64
    %ns_steps = optgen.hyper "ns_steps" default(5 : i64) : i64
    // CHECK: optgen.tuple_get %betas[0] : tuple<f32, f32>
    %b1 = optgen.tuple_get %betas[0] : tuple<f32, f32>
    // CHECK: %m = optgen.state "m" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], bf16>
    %m = optgen.state "m" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], bf16>
    %c1 = optgen.constant 1 : i64
    %c0 = optgen.constant 0 : i64
    // CHECK: %r = optgen.state "r" like %p : !optgen.tensor<[m, n], f32> reduced %{{.*}} -> !optgen.tensor<[m, 1], f32>
    %r = optgen.state "r" like %p : !optgen.tensor<[m, n], f32> reduced %c1 -> !optgen.tensor<[m, 1], f32>
    // CHECK: %count = optgen.state "count" -> f32
    %count = optgen.state "count" -> f32
    // CHECK: optgen.step : i64
    %t = optgen.step : i64
    // CHECK: optgen.constant 1.010000e+00 : f64
    %lit = optgen.constant 1.01 : f64
    // CHECK: optgen.constant true
    %yes = optgen.constant true
    // CHECK: optgen.add %p, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    %0 = optgen.add %p, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    // CHECK: optgen.sub %{{.*}}, %{{.*}} : i64, f32
    %1 = optgen.sub %c1, %b1 : i64, f32
    // CHECK: optgen.mul %m, %{{.*}} : !optgen.tensor<[m, n], bf16>, f64
    %2 = optgen.mul %m, %lit : !optgen.tensor<[m, n], bf16>, f64
    // CHECK: optgen.div %{{.*}}, %{{.*}} : i64, i64
    %3 = optgen.div %c1, %c0 : i64, i64
    // CHECK: optgen.pow %{{.*}}, %{{.*}} : f32, i64
    %4 = optgen.pow %b1, %t : f32, i64
    // CHECK: optgen.min %r, %lr : !optgen.tensor<[m, 1], f32>, f32
    %5 = optgen.min %r, %lr : !optgen.tensor<[m, 1], f32>, f32
    // CHECK: optgen.max %p, %r : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
    %6 = optgen.max %p, %r : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
    // CHECK: optgen.cmp ge, %p, %lr : !optgen.tensor<[m, n], f32>, f32
    %mask = optgen.cmp ge, %p, %lr : !optgen.tensor<[m, n], f32>, f32
    // CHECK: optgen.and %{{.*}}, %{{.*}} : !optgen.tensor<[m, n], i1>, i1
    %7 = optgen.and %mask, %yes : !optgen.tensor<[m, n], i1>, i1
    // CHECK: optgen.or %{{.*}}, %{{.*}} : i1, i1
    %8 = optgen.or %yes, %yes : i1, i1
    // CHECK: optgen.not %{{.*}} : !optgen.tensor<[m, n], i1>
    %9 = optgen.not %mask : !optgen.tensor<[m, n], i1>
    // CHECK: optgen.neg %g
    %10 = optgen.neg %g : !optgen.tensor<[m, n], f32>
    // CHECK: optgen.sqrt %g
    %11 = optgen.sqrt %g : !optgen.tensor<[m, n], f32>
    // CHECK: optgen.rsqrt %r
    %12 = optgen.rsqrt %r : !optgen.tensor<[m, 1], f32>
    // CHECK: optgen.abs %g
    %13 = optgen.abs %g : !optgen.tensor<[m, n], f32>
    // CHECK: optgen.sign %g
    %14 = optgen.sign %g : !optgen.tensor<[m, n], f32>
    // CHECK: optgen.exp %lr : f32
    %15 = optgen.exp %lr : f32
    // CHECK: optgen.log %g
    %16 = optgen.log %g : !optgen.tensor<[m, n], f32>
    // CHECK: optgen.lerp %p, %g, %lr : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
    %17 = optgen.lerp %p, %g, %lr : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
    // CHECK: optgen.clamp %g, %lr, %lr : !optgen.tensor<[m, n], f32>, f32, f32
    %18 = optgen.clamp %g, %lr, %lr : !optgen.tensor<[m, n], f32>, f32, f32
    // CHECK: optgen.select %{{.*}}, %p, %g : !optgen.tensor<[m, n], i1>, !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    %19 = optgen.select %mask, %p, %g : !optgen.tensor<[m, n], i1>, !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    // CHECK: optgen.cast %p : !optgen.tensor<[m, n], f32> to !optgen.tensor<[m, n], bf16>
    %x = optgen.cast %p : !optgen.tensor<[m, n], f32> to !optgen.tensor<[m, n], bf16>
    // CHECK: optgen.reduce norm %{{.*}} : !optgen.tensor<[m, n], bf16>
    %20 = optgen.reduce norm %x : !optgen.tensor<[m, n], bf16>
    // CHECK: optgen.reduce mean %p along %{{.*}} : !optgen.tensor<[m, n], f32>
    %21 = optgen.reduce mean %p along %c1 : !optgen.tensor<[m, n], f32>
    // CHECK: optgen.reduce sum
    %22 = optgen.reduce sum %p : !optgen.tensor<[m, n], f32>
    // CHECK: optgen.reduce max
    %23 = optgen.reduce max %p : !optgen.tensor<[m, n], f32>
    // CHECK: optgen.transpose %{{.*}} : !optgen.tensor<[m, n], bf16>
    %xt = optgen.transpose %x : !optgen.tensor<[m, n], bf16>
    // CHECK: optgen.matmul %{{.*}}, %{{.*}} : !optgen.tensor<[n, m], bf16>, !optgen.tensor<[m, n], bf16>
    %A = optgen.matmul %xt, %x : !optgen.tensor<[n, m], bf16>, !optgen.tensor<[m, n], bf16>
    // CHECK: optgen.dim %p, %{{.*}} : !optgen.tensor<[m, n], f32>
    %rows = optgen.dim %p, %c0 : !optgen.tensor<[m, n], f32>
    %cols = optgen.dim %p, %c1 : !optgen.tensor<[m, n], f32>
    // CHECK: optgen.ndim %p
    %rank = optgen.ndim %p : !optgen.tensor<[m, n], f32>
    // CHECK: optgen.numel %p
    %numel = optgen.numel %p : !optgen.tensor<[m, n], f32>
    %tall = optgen.cmp gt, %rows, %cols : i64, i64
    // CHECK: optgen.if %{{.*}} -> (!optgen.tensor<[m, n], bf16>) {
    // CHECK: } else {
    %y = optgen.if %tall -> (!optgen.tensor<[m, n], bf16>) {
      optgen.yield %x : !optgen.tensor<[m, n], bf16>
    } else {
      optgen.yield %x : !optgen.tensor<[m, n], bf16>
    }
    // CHECK: optgen.for_table %ns_steps over dense<{{\[\[}}3.444500e+00, -4.775000e+00, 2.031500e+00]]> : tensor<1x3xf64> iter %{{.*}} : !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, n], bf16> {
    // CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: !optgen.tensor<[m, n], bf16>):
    %z = optgen.for_table %ns_steps over dense<[[3.4445, -4.775, 2.0315]]> : tensor<1x3xf64> iter %y : !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, n], bf16> {
    ^bb0(%a: f32, %b: f32, %c: f32, %xi: !optgen.tensor<[m, n], bf16>):
      %ax = optgen.mul %a, %xi : f32, !optgen.tensor<[m, n], bf16>
      optgen.yield %ax : !optgen.tensor<[m, n], bf16>
    }
    %pz = optgen.sub %p, %z : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], bf16>
    // CHECK: optgen.update %{{.*}} state(%m, %r, %count : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, 1], f32>, f32) : !optgen.tensor<[m, n], f32>
    optgen.update %pz state(%m, %r, %count : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, 1], f32>, f32) : !optgen.tensor<[m, n], f32>
  }
  // CHECK: optgen.group @g = @r match ["a.*", "b?[0-9]"] {lr = 1.000000e-01 : f32} where {
  // CHECK-NEXT: ^bb0(%param: !optgen.tensor<*, f32>):
  optgen.group @g = @r match ["a.*", "b?[0-9]"] {lr = 0.1 : f32} where {
  ^bb0(%param: !optgen.tensor<*, f32>):
    %n = optgen.ndim %param : !optgen.tensor<*, f32>
    %two = optgen.constant 2 : i64
    %ok = optgen.cmp eq, %n, %two : i64, i64
    optgen.yield %ok : i1
  }
  // CHECK: optgen.group @h = @r match ["*"] {lr = 2.000000e-01 : f32}
  // CHECK-NOT: where
  optgen.group @h = @r match ["*"] {lr = 0.2 : f32}
  // CHECK: optgen.distribute zero2 {small_numel = 1024 : i64}
  optgen.distribute zero2 {small_numel = 1024 : i64}
}

// CHECK-LABEL: optgen.optimizer @any_rank
optgen.optimizer @any_rank {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" default(1.000000e-01 : f32) : f32
    %0 = optgen.mul %lr, %g : f32, !optgen.tensor<*, f32>
    %1 = optgen.sub %p, %0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
    // CHECK: optgen.update %{{.*}} : !optgen.tensor<*, f32>
    optgen.update %1 : !optgen.tensor<*, f32>
  }
  // CHECK: optgen.distribute none
  optgen.distribute none
  // CHECK: optgen.on_nonfinite skip
  optgen.on_nonfinite skip
}
