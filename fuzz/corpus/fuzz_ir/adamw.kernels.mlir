module {
  optgen.optimizer @adamw {
    optgen.rule @adamw inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %v = optgen.state "v" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13:3 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
        %14 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %15 = optgen.lerp %v, %14, %2 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %16 = optgen.div %15, %9 : !optgen.tensor<*, f32>, f32
        %17 = optgen.sqrt %16 : !optgen.tensor<*, f32>
        %18 = optgen.add %17, %eps : !optgen.tensor<*, f32>, f32
        %19 = optgen.lerp %m, %g, %4 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %20 = optgen.mul %12, %19 : f32, !optgen.tensor<*, f32>
        %21 = optgen.div %20, %18 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %22 = optgen.mul %p, %6 : !optgen.tensor<*, f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        optgen.yield %15, %19, %23 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      }
      optgen.update %13#2 state(%13#1, %13#0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.rule @adamw_64x16 inputs ["p", "g"] attributes {optgen.specializes = @adamw} {
    ^bb0(%p: !optgen.tensor<[64, 16], f32>, %g: !optgen.tensor<[64, 16], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %m = optgen.state "m" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13:3 = optgen.kernel -> (!optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>) {
        %14 = optgen.mul %g, %g : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %15 = optgen.lerp %v, %14, %2 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %16 = optgen.div %15, %9 : !optgen.tensor<[64, 16], f32>, f32
        %17 = optgen.sqrt %16 : !optgen.tensor<[64, 16], f32>
        %18 = optgen.add %17, %eps : !optgen.tensor<[64, 16], f32>, f32
        %19 = optgen.lerp %m, %g, %4 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %20 = optgen.mul %12, %19 : f32, !optgen.tensor<[64, 16], f32>
        %21 = optgen.div %20, %18 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %22 = optgen.mul %p, %6 : !optgen.tensor<[64, 16], f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        optgen.yield %15, %19, %23 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
      }
      optgen.update %13#2 state(%13#1, %13#0 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>) : !optgen.tensor<[64, 16], f32>
    }
    optgen.rule @adamw_3 inputs ["p", "g"] attributes {optgen.specializes = @adamw} {
    ^bb0(%p: !optgen.tensor<[3], f32>, %g: !optgen.tensor<[3], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %m = optgen.state "m" like %p : !optgen.tensor<[3], f32> -> !optgen.tensor<[3], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[3], f32> -> !optgen.tensor<[3], f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13:3 = optgen.kernel -> (!optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>) {
        %14 = optgen.mul %g, %g : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        %15 = optgen.lerp %v, %14, %2 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, f32
        %16 = optgen.div %15, %9 : !optgen.tensor<[3], f32>, f32
        %17 = optgen.sqrt %16 : !optgen.tensor<[3], f32>
        %18 = optgen.add %17, %eps : !optgen.tensor<[3], f32>, f32
        %19 = optgen.lerp %m, %g, %4 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, f32
        %20 = optgen.mul %12, %19 : f32, !optgen.tensor<[3], f32>
        %21 = optgen.div %20, %18 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        %22 = optgen.mul %p, %6 : !optgen.tensor<[3], f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        optgen.yield %15, %19, %23 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
      }
      optgen.update %13#2 state(%13#1, %13#0 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>) : !optgen.tensor<[3], f32>
    }
    optgen.rule @adamw_16x16 inputs ["p", "g"] attributes {optgen.specializes = @adamw} {
    ^bb0(%p: !optgen.tensor<[16, 16], f32>, %g: !optgen.tensor<[16, 16], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %m = optgen.state "m" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13:3 = optgen.kernel -> (!optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>) {
        %14 = optgen.mul %g, %g : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %15 = optgen.lerp %v, %14, %2 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
        %16 = optgen.div %15, %9 : !optgen.tensor<[16, 16], f32>, f32
        %17 = optgen.sqrt %16 : !optgen.tensor<[16, 16], f32>
        %18 = optgen.add %17, %eps : !optgen.tensor<[16, 16], f32>, f32
        %19 = optgen.lerp %m, %g, %4 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
        %20 = optgen.mul %12, %19 : f32, !optgen.tensor<[16, 16], f32>
        %21 = optgen.div %20, %18 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %22 = optgen.mul %p, %6 : !optgen.tensor<[16, 16], f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        optgen.yield %15, %19, %23 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
      }
      optgen.update %13#2 state(%13#1, %13#0 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>) : !optgen.tensor<[16, 16], f32>
    }
    optgen.rule @adamw_16x64 inputs ["p", "g"] attributes {optgen.specializes = @adamw} {
    ^bb0(%p: !optgen.tensor<[16, 64], f32>, %g: !optgen.tensor<[16, 64], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %m = optgen.state "m" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13:3 = optgen.kernel -> (!optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>) {
        %14 = optgen.mul %g, %g : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %15 = optgen.lerp %v, %14, %2 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
        %16 = optgen.div %15, %9 : !optgen.tensor<[16, 64], f32>, f32
        %17 = optgen.sqrt %16 : !optgen.tensor<[16, 64], f32>
        %18 = optgen.add %17, %eps : !optgen.tensor<[16, 64], f32>, f32
        %19 = optgen.lerp %m, %g, %4 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
        %20 = optgen.mul %12, %19 : f32, !optgen.tensor<[16, 64], f32>
        %21 = optgen.div %20, %18 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %22 = optgen.mul %p, %6 : !optgen.tensor<[16, 64], f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        optgen.yield %15, %19, %23 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
      }
      optgen.update %13#2 state(%13#1, %13#0 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>) : !optgen.tensor<[16, 64], f32>
    }
    optgen.rule @adamw_1x1 inputs ["p", "g"] attributes {optgen.specializes = @adamw} {
    ^bb0(%p: !optgen.tensor<[1, 1], f32>, %g: !optgen.tensor<[1, 1], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %m = optgen.state "m" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13:3 = optgen.kernel -> (!optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>) {
        %14 = optgen.mul %g, %g : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %15 = optgen.lerp %v, %14, %2 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
        %16 = optgen.div %15, %9 : !optgen.tensor<[1, 1], f32>, f32
        %17 = optgen.sqrt %16 : !optgen.tensor<[1, 1], f32>
        %18 = optgen.add %17, %eps : !optgen.tensor<[1, 1], f32>, f32
        %19 = optgen.lerp %m, %g, %4 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
        %20 = optgen.mul %12, %19 : f32, !optgen.tensor<[1, 1], f32>
        %21 = optgen.div %20, %18 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %22 = optgen.mul %p, %6 : !optgen.tensor<[1, 1], f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        optgen.yield %15, %19, %23 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
      }
      optgen.update %13#2 state(%13#1, %13#0 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>) : !optgen.tensor<[1, 1], f32>
    }
    optgen.group @no_decay = @adamw match ["*.bias", "*norm*"] {weight_decay = 0.000000e+00 : f32}
    optgen.group @all = @adamw match ["*"] {}
    optgen.param "lm_head.weight" [64, 16] -> @all
    optgen.param "resid_lambdas" [3] -> @all
    optgen.param "transformer.h.0.attn.c_q.weight" [16, 16] -> @all
    optgen.param "transformer.h.0.mlp.c_fc.weight" [64, 16] -> @all
    optgen.param "transformer.h.0.mlp.c_proj.weight" [16, 64] -> @all
    optgen.param "transformer.h.1.mlp.c_fc.weight" [64, 16] -> @all
    optgen.param "transformer.h.1.one.weight" [1, 1] -> @all
    optgen.param "transformer.wte.weight" [64, 16] -> @all
    optgen.bucket @all [64, 16] ["lm_head.weight", "transformer.h.0.mlp.c_fc.weight", "transformer.h.1.mlp.c_fc.weight", "transformer.wte.weight"] rule @adamw_64x16
    optgen.bucket @all [3] ["resid_lambdas"] rule @adamw_3
    optgen.bucket @all [16, 16] ["transformer.h.0.attn.c_q.weight"] rule @adamw_16x16
    optgen.bucket @all [16, 64] ["transformer.h.0.mlp.c_proj.weight"] rule @adamw_16x64
    optgen.bucket @all [1, 1] ["transformer.h.1.one.weight"] rule @adamw_1x1
    optgen.distribute none
  }
}

