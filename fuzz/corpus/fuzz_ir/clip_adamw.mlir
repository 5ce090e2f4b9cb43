module {
  optgen.optimizer @clip_adamw {
    optgen.global @grad_norm inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %1 = optgen.reduce_params sum %0 : !optgen.tensor<*, f32>
      %2 = optgen.sqrt %1 : f32
      optgen.yield %2 : f32
    }
    optgen.rule @adamw inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %max_norm = optgen.hyper "max_norm" default(1.000000e+00 : f32) : f32
      %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %v = optgen.state "v" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %grad_norm = optgen.global_value @grad_norm : f32
      %0 = optgen.cmp lt, %grad_norm, %max_norm : f32, f32
      %grad_norm_0 = optgen.global_value @grad_norm : f32
      %1 = optgen.div %g, %grad_norm_0 : !optgen.tensor<*, f32>, f32
      %2 = optgen.mul %1, %max_norm : !optgen.tensor<*, f32>, f32
      %3 = optgen.select %0, %g, %2 : i1, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %4 = optgen.constant 1 : i64
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %4, %5 : i64, f32
      %7 = optgen.mul %p, %6 : !optgen.tensor<*, f32>, f32
      %8 = optgen.constant 1 : i64
      %9 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %10 = optgen.sub %8, %9 : i64, f32
      %11 = optgen.lerp %m, %3, %10 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %12 = optgen.mul %3, %3 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %13 = optgen.constant 1 : i64
      %14 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %15 = optgen.sub %13, %14 : i64, f32
      %16 = optgen.lerp %v, %12, %15 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %17 = optgen.constant 1 : i64
      %18 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %19 = optgen.step : i64
      %20 = optgen.pow %18, %19 : f32, i64
      %21 = optgen.sub %17, %20 : i64, f32
      %22 = optgen.div %lr, %21 : f32, f32
      %23 = optgen.constant 1 : i64
      %24 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %25 = optgen.step : i64
      %26 = optgen.pow %24, %25 : f32, i64
      %27 = optgen.sub %23, %26 : i64, f32
      %28 = optgen.mul %22, %11 : f32, !optgen.tensor<*, f32>
      %29 = optgen.div %16, %27 : !optgen.tensor<*, f32>, f32
      %30 = optgen.sqrt %29 : !optgen.tensor<*, f32>
      %31 = optgen.add %30, %eps : !optgen.tensor<*, f32>, f32
      %32 = optgen.div %28, %31 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %33 = optgen.sub %7, %32 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      optgen.update %33 state(%11, %16 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.group @no_decay = @adamw match ["*.bias", "*norm*"] {weight_decay = 0.000000e+00 : f32}
    optgen.group @all = @adamw match ["*"] {}
    optgen.distribute zero2 {small_numel = 1024 : i64}
  }
}

