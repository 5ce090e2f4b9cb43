module {
  optgen.optimizer @nanochat_muon_adamw {
    optgen.rule @adamw inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %lr = optgen.hyper "lr" : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) : f32
      %exp_avg = optgen.state "exp_avg" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %exp_avg_sq = optgen.state "exp_avg_sq" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %0 = optgen.constant 1 : i64
      %1 = optgen.mul %lr, %weight_decay : f32, f32
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.mul %p, %2 : !optgen.tensor<*, f32>, f32
      %4 = optgen.constant 1 : i64
      %5 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %6 = optgen.sub %4, %5 : i64, f32
      %7 = optgen.lerp %exp_avg, %g, %6 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %8 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %9 = optgen.constant 1 : i64
      %10 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %11 = optgen.sub %9, %10 : i64, f32
      %12 = optgen.lerp %exp_avg_sq, %8, %11 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %13 = optgen.constant 1 : i64
      %14 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %15 = optgen.step : i64
      %16 = optgen.pow %14, %15 : f32, i64
      %17 = optgen.sub %13, %16 : i64, f32
      %18 = optgen.constant 1 : i64
      %19 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %20 = optgen.step : i64
      %21 = optgen.pow %19, %20 : f32, i64
      %22 = optgen.sub %18, %21 : i64, f32
      %23 = optgen.div %lr, %17 : f32, f32
      %24 = optgen.mul %23, %7 : f32, !optgen.tensor<*, f32>
      %25 = optgen.div %12, %22 : !optgen.tensor<*, f32>, f32
      %26 = optgen.sqrt %25 : !optgen.tensor<*, f32>
      %27 = optgen.add %26, %eps : !optgen.tensor<*, f32>, f32
      %28 = optgen.div %24, %27 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %29 = optgen.sub %3, %28 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      optgen.update %29 state(%7, %12 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.rule @muon inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %lr = optgen.hyper "lr" : f32
      %momentum = optgen.hyper "momentum" default(0.949999988 : f32) : f32
      %ns_steps = optgen.hyper "ns_steps" default(5 : i64) : i64
      %beta2 = optgen.hyper "beta2" default(0.949999988 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) : f32
      %0 = optgen.constant -2 : i64
      %1 = optgen.dim %p, %0 : !optgen.tensor<[m, n], f32>
      %2 = optgen.constant -1 : i64
      %3 = optgen.dim %p, %2 : !optgen.tensor<[m, n], f32>
      %4 = optgen.cmp ge, %1, %3 : i64, i64
      %5 = optgen.constant 1 : i64
      %6 = optgen.constant 0 : i64
      %7 = optgen.select %4, %5, %6 : i1, i64, i64
      %momentum_buffer = optgen.state "momentum_buffer" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32>
      %second_momentum_buffer = optgen.state "second_momentum_buffer" like %p : !optgen.tensor<[m, n], f32> reduced %7 -> !optgen.tensor<[?, ?], f32>
      %8 = optgen.constant 1 : i64
      %9 = optgen.sub %8, %momentum : i64, f32
      %10 = optgen.lerp %momentum_buffer, %g, %9 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
      %11 = optgen.lerp %g, %10, %momentum : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
      %12 = optgen.cast %11 : !optgen.tensor<[m, n], f32> to !optgen.tensor<[m, n], bf16>
      %13 = optgen.cast %12 : !optgen.tensor<[m, n], bf16> to !optgen.tensor<[m, n], f32>
      %14 = optgen.reduce norm %13 : !optgen.tensor<[m, n], f32>
      %15 = optgen.constant -2 : i64
      %16 = optgen.dim %12, %15 : !optgen.tensor<[m, n], bf16>
      %17 = optgen.sqrt %16 : i64
      %18 = optgen.div %14, %17 : f32, f32
      %19 = optgen.cast %12 : !optgen.tensor<[m, n], bf16> to !optgen.tensor<[m, n], f32>
      %20 = optgen.constant 1 : i64
      %21 = optgen.reduce norm %19 along %20 : !optgen.tensor<[m, n], f32>
      %22 = optgen.constant 9.9999999999999995E-7 : f64
      %23 = optgen.max %21, %22 : !optgen.tensor<[m, 1], f32>, f64
      %24 = optgen.div %18, %23 : f32, !optgen.tensor<[m, 1], f32>
      %25 = optgen.cast %24 : !optgen.tensor<[m, 1], f32> to !optgen.tensor<[m, 1], bf16>
      %26 = optgen.mul %12, %25 : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, 1], bf16>
      %27 = optgen.reduce norm %26 : !optgen.tensor<[m, n], bf16>
      %28 = optgen.constant 1.010000e+00 : f64
      %29 = optgen.mul %27, %28 : bf16, f64
      %30 = optgen.constant 9.9999999999999995E-7 : f64
      %31 = optgen.add %29, %30 : bf16, f64
      %32 = optgen.div %26, %31 : !optgen.tensor<[m, n], bf16>, bf16
      %33 = optgen.for_table %ns_steps over dense<[[8.1565545249024609, -22.483292925577949, 15.878769915207462], [4.0429299351667387, -2.8089174659087139, 0.50001784510513159], [3.8916678022926607, -2.7724841532176852, 0.5060648178503393], [3.285753657755655, -2.3681294933425376, 0.46449024233003106], [2.3465413258596377, -1.7097828382687081, 0.42323551169305323]]> : tensor<5x3xf64> iter %32 : !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, n], bf16> {
      ^bb0(%arg0: f32, %arg1: f32, %arg2: f32, %arg3: !optgen.tensor<[m, n], bf16>):
        %88 = optgen.constant -2 : i64
        %89 = optgen.dim %arg3, %88 : !optgen.tensor<[m, n], bf16>
        %90 = optgen.constant -1 : i64
        %91 = optgen.dim %arg3, %90 : !optgen.tensor<[m, n], bf16>
        %92 = optgen.cmp gt, %89, %91 : i64, i64
        %93 = optgen.if %92 -> (!optgen.tensor<[m, n], bf16>) {
          %94 = optgen.transpose %arg3 : !optgen.tensor<[m, n], bf16>
          %95 = optgen.matmul %94, %arg3 : !optgen.tensor<[n, m], bf16>, !optgen.tensor<[m, n], bf16>
          %96 = optgen.mul %arg0, %arg3 : f32, !optgen.tensor<[m, n], bf16>
          %97 = optgen.mul %arg1, %95 : f32, !optgen.tensor<[n, n], bf16>
          %98 = optgen.matmul %95, %95 : !optgen.tensor<[n, n], bf16>, !optgen.tensor<[n, n], bf16>
          %99 = optgen.mul %arg2, %98 : f32, !optgen.tensor<[n, n], bf16>
          %100 = optgen.add %97, %99 : !optgen.tensor<[n, n], bf16>, !optgen.tensor<[n, n], bf16>
          %101 = optgen.matmul %arg3, %100 : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[n, n], bf16>
          %102 = optgen.add %96, %101 : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, n], bf16>
          optgen.yield %102 : !optgen.tensor<[m, n], bf16>
        } else {
          %94 = optgen.transpose %arg3 : !optgen.tensor<[m, n], bf16>
          %95 = optgen.matmul %arg3, %94 : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[n, m], bf16>
          %96 = optgen.mul %arg0, %arg3 : f32, !optgen.tensor<[m, n], bf16>
          %97 = optgen.mul %arg1, %95 : f32, !optgen.tensor<[m, m], bf16>
          %98 = optgen.matmul %95, %95 : !optgen.tensor<[m, m], bf16>, !optgen.tensor<[m, m], bf16>
          %99 = optgen.mul %arg2, %98 : f32, !optgen.tensor<[m, m], bf16>
          %100 = optgen.add %97, %99 : !optgen.tensor<[m, m], bf16>, !optgen.tensor<[m, m], bf16>
          %101 = optgen.matmul %100, %arg3 : !optgen.tensor<[m, m], bf16>, !optgen.tensor<[m, n], bf16>
          %102 = optgen.add %96, %101 : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, n], bf16>
          optgen.yield %102 : !optgen.tensor<[m, n], bf16>
        }
        optgen.yield %93 : !optgen.tensor<[m, n], bf16>
      }
      %34 = optgen.cast %33 : !optgen.tensor<[m, n], bf16> to !optgen.tensor<[m, n], f32>
      %35 = optgen.constant -2 : i64
      %36 = optgen.dim %34, %35 : !optgen.tensor<[m, n], f32>
      %37 = optgen.constant -1 : i64
      %38 = optgen.dim %34, %37 : !optgen.tensor<[m, n], f32>
      %39 = optgen.min %36, %38 : i64, i64
      %40 = optgen.sqrt %39 : i64
      %41 = optgen.reduce norm %34 : !optgen.tensor<[m, n], f32>
      %42 = optgen.constant 9.9999999999999995E-7 : f64
      %43 = optgen.max %41, %42 : f32, f64
      %44 = optgen.div %40, %43 : f32, f32
      %45 = optgen.mul %34, %44 : !optgen.tensor<[m, n], f32>, f32
      %46 = optgen.constant 2 : i64
      %47 = optgen.pow %45, %46 : !optgen.tensor<[m, n], f32>, i64
      %48 = optgen.reduce mean %47 along %7 : !optgen.tensor<[m, n], f32>
      %49 = optgen.dim %45, %7 : !optgen.tensor<[m, n], f32>
      %50 = optgen.reduce sum %48 : !optgen.tensor<[?, ?], f32>
      %51 = optgen.mul %50, %49 : f32, i64
      %52 = optgen.sqrt %51 : f32
      %53 = optgen.constant 1 : i64
      %54 = optgen.sub %53, %beta2 : i64, f32
      %55 = optgen.lerp %second_momentum_buffer, %48, %54 : !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>, f32
      %56 = optgen.constant 1.000000e-10 : f64
      %57 = optgen.max %55, %56 : !optgen.tensor<[?, ?], f32>, f64
      %58 = optgen.rsqrt %57 : !optgen.tensor<[?, ?], f32>
      %59 = optgen.mul %48, %49 : !optgen.tensor<[?, ?], f32>, i64
      %60 = optgen.constant 2 : i64
      %61 = optgen.pow %58, %60 : !optgen.tensor<[?, ?], f32>, i64
      %62 = optgen.mul %59, %61 : !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>
      %63 = optgen.reduce sum %62 : !optgen.tensor<[?, ?], f32>
      %64 = optgen.sqrt %63 : f32
      %65 = optgen.mul %58, %52 : !optgen.tensor<[?, ?], f32>, f32
      %66 = optgen.constant 1.000000e-10 : f64
      %67 = optgen.max %64, %66 : f32, f64
      %68 = optgen.div %65, %67 : !optgen.tensor<[?, ?], f32>, f32
      %69 = optgen.mul %45, %68 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[?, ?], f32>
      %70 = optgen.constant 1 : i64
      %71 = optgen.constant -2 : i64
      %72 = optgen.dim %p, %71 : !optgen.tensor<[m, n], f32>
      %73 = optgen.constant -1 : i64
      %74 = optgen.dim %p, %73 : !optgen.tensor<[m, n], f32>
      %75 = optgen.div %72, %74 : i64, i64
      %76 = optgen.max %70, %75 : i64, f32
      %77 = optgen.sqrt %76 : f32
      %78 = optgen.mul %lr, %77 : f32, f32
      %79 = optgen.mul %78, %69 : f32, !optgen.tensor<[m, n], f32>
      %80 = optgen.mul %78, %weight_decay : f32, f32
      %81 = optgen.mul %80, %p : f32, !optgen.tensor<[m, n], f32>
      %82 = optgen.mul %69, %p : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      %83 = optgen.constant 0 : i64
      %84 = optgen.cmp ge, %82, %83 : !optgen.tensor<[m, n], f32>, i64
      %85 = optgen.mul %81, %84 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], i1>
      %86 = optgen.add %79, %85 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      %87 = optgen.sub %p, %86 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      optgen.update %87 state(%10, %55 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[?, ?], f32>) : !optgen.tensor<[m, n], f32>
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

