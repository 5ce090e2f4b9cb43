module {
  optgen.optimizer @lion {
    optgen.rule @lion inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(9.99999974E-5 : f32) : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.900000e-01 : f32]) : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) : f32
      %3 = optgen.mul %lr, %weight_decay : f32, f32
      %4 = optgen.sub %0, %3 : i64, f32
      %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %5:2 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
        %6 = optgen.lerp %g, %m, %1 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %7 = optgen.lerp %g, %m, %2 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %8 = optgen.sign %7 : !optgen.tensor<*, f32>
        %9 = optgen.mul %lr, %8 : f32, !optgen.tensor<*, f32>
        %10 = optgen.mul %p, %4 : !optgen.tensor<*, f32>, f32
        %11 = optgen.sub %10, %9 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        optgen.yield %6, %11 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      }
      optgen.update %5#1 state(%5#0 : !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.group @all = @lion match ["*"] {lr = 3.000000e-05 : f32, weight_decay = 1.000000e-01 : f32}
    optgen.distribute none
  }
}

