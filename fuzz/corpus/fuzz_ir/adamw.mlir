module {
  optgen.optimizer @adamw {
    optgen.rule @adamw inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %v = optgen.state "v" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %0 = optgen.constant 1 : i64
      %1 = optgen.mul %lr, %weight_decay : f32, f32
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.mul %p, %2 : !optgen.tensor<*, f32>, f32
      %4 = optgen.constant 1 : i64
      %5 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %6 = optgen.sub %4, %5 : i64, f32
      %7 = optgen.lerp %m, %g, %6 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %8 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %9 = optgen.constant 1 : i64
      %10 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %11 = optgen.sub %9, %10 : i64, f32
      %12 = optgen.lerp %v, %8, %11 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %13 = optgen.constant 1 : i64
      %14 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %15 = optgen.step : i64
      %16 = optgen.pow %14, %15 : f32, i64
      %17 = optgen.sub %13, %16 : i64, f32
      %18 = optgen.div %lr, %17 : f32, f32
      %19 = optgen.constant 1 : i64
      %20 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %21 = optgen.step : i64
      %22 = optgen.pow %20, %21 : f32, i64
      %23 = optgen.sub %19, %22 : i64, f32
      %24 = optgen.mul %18, %7 : f32, !optgen.tensor<*, f32>
      %25 = optgen.div %12, %23 : !optgen.tensor<*, f32>, f32
      %26 = optgen.sqrt %25 : !optgen.tensor<*, f32>
      %27 = optgen.add %26, %eps : !optgen.tensor<*, f32>, f32
      %28 = optgen.div %24, %27 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %29 = optgen.sub %3, %28 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      optgen.update %29 state(%7, %12 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.group @no_decay = @adamw match ["*.bias", "*norm*"] {weight_decay = 0.000000e+00 : f32}
    optgen.group @all = @adamw match ["*"] {}
    optgen.param "lm_head.weight" [64, 16]
    optgen.param "resid_lambdas" [3]
    optgen.param "transformer.h.0.attn.c_q.weight" [16, 16]
    optgen.param "transformer.h.0.mlp.c_fc.weight" [64, 16]
    optgen.param "transformer.h.0.mlp.c_proj.weight" [16, 64]
    optgen.param "transformer.h.1.mlp.c_fc.weight" [64, 16]
    optgen.param "transformer.h.1.one.weight" [1, 1]
    optgen.param "transformer.wte.weight" [64, 16]
    optgen.distribute none
  }
}

