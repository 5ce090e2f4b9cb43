module {
  optgen.optimizer @nanochat_muon_adamw {
    optgen.rule @adamw inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %exp_avg = optgen.state "exp_avg" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %exp_avg_sq = optgen.state "exp_avg_sq" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13:3 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
        %14 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %15 = optgen.lerp %exp_avg_sq, %14, %2 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %16 = optgen.div %15, %9 : !optgen.tensor<*, f32>, f32
        %17 = optgen.sqrt %16 : !optgen.tensor<*, f32>
        %18 = optgen.add %17, %eps : !optgen.tensor<*, f32>, f32
        %19 = optgen.lerp %exp_avg, %g, %4 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %20 = optgen.mul %12, %19 : f32, !optgen.tensor<*, f32>
        %21 = optgen.div %20, %18 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %22 = optgen.mul %p, %6 : !optgen.tensor<*, f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        optgen.yield %15, %19, %23 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      }
      optgen.update %13#2 state(%13#1, %13#0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.rule @muon inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0 = optgen.constant 1.000000e-10 : f64
      %1 = optgen.constant 2 : i64
      %2 = optgen.constant 1.010000e+00 : f64
      %3 = optgen.constant 9.9999999999999995E-7 : f64
      %4 = optgen.constant 0 : i64
      %5 = optgen.constant 1 : i64
      %6 = optgen.constant -1 : i64
      %7 = optgen.dim %g, %6 : !optgen.tensor<[m, n], f32>
      %8 = optgen.dim %p, %6 : !optgen.tensor<[m, n], f32>
      %9 = optgen.constant -2 : i64
      %10 = optgen.dim %g, %9 : !optgen.tensor<[m, n], f32>
      %11 = optgen.min %10, %7 : i64, i64
      %12 = optgen.sqrt %11 : i64
      %13 = optgen.sqrt %10 : i64
      %14 = optgen.dim %p, %9 : !optgen.tensor<[m, n], f32>
      %15 = optgen.div %14, %8 : i64, i64
      %16 = optgen.max %5, %15 : i64, f32
      %17 = optgen.sqrt %16 : f32
      %18 = optgen.cmp ge, %14, %8 : i64, i64
      %19 = optgen.select %18, %5, %4 : i1, i64, i64
      %20 = optgen.dim %g, %19 : !optgen.tensor<[m, n], f32>
      %lr = optgen.hyper "lr" : f32
      %21 = optgen.mul %lr, %17 : f32, f32
      %momentum = optgen.hyper "momentum" default(0.949999988 : f32) : f32
      %22 = optgen.sub %5, %momentum : i64, f32
      %ns_steps = optgen.hyper "ns_steps" default(5 : i64) : i64
      %beta2 = optgen.hyper "beta2" default(0.949999988 : f32) : f32
      %23 = optgen.sub %5, %beta2 : i64, f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) : f32
      %24 = optgen.mul %21, %weight_decay : f32, f32
      %momentum_buffer = optgen.state "momentum_buffer" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32>
      %second_momentum_buffer = optgen.state "second_momentum_buffer" like %p : !optgen.tensor<[m, n], f32> reduced %19 -> !optgen.tensor<[?, ?], f32>
      %25:4 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], bf16>, f32, !optgen.tensor<[m, 1], f32>) {
        %44 = optgen.lerp %momentum_buffer, %g, %22 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
        %45 = optgen.lerp %g, %44, %momentum : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
        %46 = optgen.cast %45 : !optgen.tensor<[m, n], f32> to !optgen.tensor<[m, n], bf16>
        %47 = optgen.cast %46 : !optgen.tensor<[m, n], bf16> to !optgen.tensor<[m, n], f32>
        %48 = optgen.reduce norm %47 : !optgen.tensor<[m, n], f32>
        %49 = optgen.reduce norm %47 along %5 : !optgen.tensor<[m, n], f32>
        optgen.yield %44, %46, %48, %49 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], bf16>, f32, !optgen.tensor<[m, 1], f32>
      }
      %26 = optgen.div %25#2, %13 : f32, f32
      %27 = optgen.kernel -> (!optgen.tensor<[m, 1], bf16>) {
        %44 = optgen.max %25#3, %3 : !optgen.tensor<[m, 1], f32>, f64
        %45 = optgen.div %26, %44 : f32, !optgen.tensor<[m, 1], f32>
        %46 = optgen.cast %45 : !optgen.tensor<[m, 1], f32> to !optgen.tensor<[m, 1], bf16>
        optgen.yield %46 : !optgen.tensor<[m, 1], bf16>
      }
      %28:2 = optgen.kernel -> (!optgen.tensor<[m, n], bf16>, bf16) {
        %44 = optgen.mul %25#1, %27 : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, 1], bf16>
        %45 = optgen.reduce norm %44 : !optgen.tensor<[m, n], bf16>
        optgen.yield %44, %45 : !optgen.tensor<[m, n], bf16>, bf16
      }
      %29 = optgen.mul %28#1, %2 : bf16, f64
      %30 = optgen.add %29, %3 : bf16, f64
      %31 = optgen.kernel -> (!optgen.tensor<[m, n], bf16>) {
        %44 = optgen.div %28#0, %30 : !optgen.tensor<[m, n], bf16>, bf16
        optgen.yield %44 : !optgen.tensor<[m, n], bf16>
      }
      %32 = optgen.for_table %ns_steps over dense<[[8.1565545249024609, -22.483292925577949, 15.878769915207462], [4.0429299351667387, -2.8089174659087139, 0.50001784510513159], [3.8916678022926607, -2.7724841532176852, 0.5060648178503393], [3.285753657755655, -2.3681294933425376, 0.46449024233003106], [2.3465413258596377, -1.7097828382687081, 0.42323551169305323]]> : tensor<5x3xf64> iter %31 : !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, n], bf16> {
      ^bb0(%arg0: f32, %arg1: f32, %arg2: f32, %arg3: !optgen.tensor<[m, n], bf16>):
        %44 = optgen.dim %arg3, %9 : !optgen.tensor<[m, n], bf16>
        %45 = optgen.dim %arg3, %6 : !optgen.tensor<[m, n], bf16>
        %46 = optgen.cmp gt, %44, %45 : i64, i64
        %47 = optgen.if %46 -> (!optgen.tensor<[m, n], bf16>) {
          %48 = optgen.gemm %arg3 transposed, %arg3 symmetric : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[n, n], bf16>
          %49 = optgen.gemm %48, %48 transposed scaled %arg2 : f32 plus %48 : !optgen.tensor<[n, n], bf16> scaled %arg1 : f32 symmetric : !optgen.tensor<[n, n], bf16>, !optgen.tensor<[n, n], bf16> -> !optgen.tensor<[n, n], bf16>
          %50 = optgen.gemm %arg3, %49 plus %arg3 : !optgen.tensor<[m, n], bf16> scaled %arg0 : f32 : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[n, n], bf16> -> !optgen.tensor<[m, n], bf16>
          optgen.yield %50 : !optgen.tensor<[m, n], bf16>
        } else {
          %48 = optgen.gemm %arg3, %arg3 transposed symmetric : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, m], bf16>
          %49 = optgen.gemm %48, %48 transposed scaled %arg2 : f32 plus %48 : !optgen.tensor<[m, m], bf16> scaled %arg1 : f32 symmetric : !optgen.tensor<[m, m], bf16>, !optgen.tensor<[m, m], bf16> -> !optgen.tensor<[m, m], bf16>
          %50 = optgen.gemm %49, %arg3 plus %arg3 : !optgen.tensor<[m, n], bf16> scaled %arg0 : f32 : !optgen.tensor<[m, m], bf16>, !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, n], bf16>
          optgen.yield %50 : !optgen.tensor<[m, n], bf16>
        }
        optgen.yield %47 : !optgen.tensor<[m, n], bf16>
      }
      %33:2 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, f32) {
        %44 = optgen.cast %32 : !optgen.tensor<[m, n], bf16> to !optgen.tensor<[m, n], f32>
        %45 = optgen.reduce norm %44 : !optgen.tensor<[m, n], f32>
        optgen.yield %44, %45 : !optgen.tensor<[m, n], f32>, f32
      }
      %34 = optgen.max %33#1, %3 : f32, f64
      %35 = optgen.div %12, %34 : f32, f32
      %36:2 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[?, ?], f32>) {
        %44 = optgen.mul %33#0, %35 : !optgen.tensor<[m, n], f32>, f32
        %45 = optgen.pow %44, %1 : !optgen.tensor<[m, n], f32>, i64
        %46 = optgen.reduce mean %45 along %19 : !optgen.tensor<[m, n], f32>
        optgen.yield %44, %46 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[?, ?], f32>
      }
      %37:4 = optgen.kernel -> (f32, !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>, f32) {
        %44 = optgen.reduce sum %36#1 : !optgen.tensor<[?, ?], f32>
        %45 = optgen.lerp %second_momentum_buffer, %36#1, %23 : !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>, f32
        %46 = optgen.max %45, %0 : !optgen.tensor<[?, ?], f32>, f64
        %47 = optgen.rsqrt %46 : !optgen.tensor<[?, ?], f32>
        %48 = optgen.pow %47, %1 : !optgen.tensor<[?, ?], f32>, i64
        %49 = optgen.mul %36#1, %20 : !optgen.tensor<[?, ?], f32>, i64
        %50 = optgen.mul %49, %48 : !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>
        %51 = optgen.reduce sum %50 : !optgen.tensor<[?, ?], f32>
        optgen.yield %44, %45, %47, %51 : f32, !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>, f32
      }
      %38 = optgen.mul %37#0, %20 : f32, i64
      %39 = optgen.sqrt %38 : f32
      %40 = optgen.sqrt %37#3 : f32
      %41 = optgen.max %40, %0 : f32, f64
      %42 = optgen.kernel -> (!optgen.tensor<[?, ?], f32>) {
        %44 = optgen.mul %37#2, %39 : !optgen.tensor<[?, ?], f32>, f32
        %45 = optgen.div %44, %41 : !optgen.tensor<[?, ?], f32>, f32
        optgen.yield %45 : !optgen.tensor<[?, ?], f32>
      }
      %43 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %44 = optgen.mul %36#0, %42 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[?, ?], f32>
        %45 = optgen.mul %44, %p : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        %46 = optgen.cmp ge, %45, %4 : !optgen.tensor<[m, n], f32>, i64
        %47 = optgen.mul %24, %p : f32, !optgen.tensor<[m, n], f32>
        %48 = optgen.mul %47, %46 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], i1>
        %49 = optgen.mul %21, %44 : f32, !optgen.tensor<[m, n], f32>
        %50 = optgen.add %49, %48 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        %51 = optgen.sub %p, %50 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %51 : !optgen.tensor<[m, n], f32>
      }
      optgen.update %43 state(%25#0, %37#1 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[?, ?], f32>) : !optgen.tensor<[m, n], f32>
    }
    optgen.group @lm_head = @adamw match ["lm_head.*"] {betas = [8.000000e-01 : f32, 0.959999978 : f32], eps = 1.000000e-10 : f32, lr = 4.000000e-03 : f32, weight_decay = 0.00999999977 : f32}
    optgen.group @embeddings = @adamw match ["transformer.wte.*", "value_embeds.*"] {betas = [8.000000e-01 : f32, 9.950000e-01 : f32], eps = 1.000000e-10 : f32, lr = 2.000000e-01 : f32, weight_decay = 1.000000e-03 : f32}
    optgen.group @scalars = @adamw match ["*lambdas"] {betas = [8.000000e-01 : f32, 0.949999988 : f32], eps = 1.000000e-10 : f32, lr = 5.000000e-03 : f32}
    optgen.group @matrices = @muon match ["transformer.h.*"] {beta2 = 0.899999976 : f32, lr = 2.000000e-02 : f32} where {
    ^bb0(%param: !optgen.tensor<*, f32>):
      %0 = optgen.ndim %param : !optgen.tensor<*, f32>
      %1 = optgen.constant 2 : i64
      %2 = optgen.cmp eq, %0, %1 : i64, i64
      optgen.yield %2 : i1
    }
    optgen.distribute zero2 {small_numel = 1024 : i64}
  }
}

