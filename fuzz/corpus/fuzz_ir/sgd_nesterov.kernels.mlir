module {
  optgen.optimizer @sgd_nesterov {
    optgen.rule @sgd inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-01 : f32) : f32
      %momentum = optgen.hyper "momentum" default(0.899999976 : f32) : f32
      %dampening = optgen.hyper "dampening" default(0.000000e+00 : f32) : f32
      %1 = optgen.sub %0, %dampening : i64, f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) : f32
      %buf = optgen.state "buf" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %2 = optgen.step : i64
      %3 = optgen.cmp eq, %2, %0 : i64, i64
      %4:2 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
        %5 = optgen.mul %weight_decay, %p : f32, !optgen.tensor<*, f32>
        %6 = optgen.add %g, %5 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %7 = optgen.mul %1, %6 : f32, !optgen.tensor<*, f32>
        %8 = optgen.mul %momentum, %buf : f32, !optgen.tensor<*, f32>
        %9 = optgen.add %8, %7 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %10 = optgen.select %3, %6, %9 : i1, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %11 = optgen.mul %momentum, %10 : f32, !optgen.tensor<*, f32>
        %12 = optgen.add %6, %11 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %13 = optgen.mul %lr, %12 : f32, !optgen.tensor<*, f32>
        %14 = optgen.sub %p, %13 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        optgen.yield %10, %14 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      }
      optgen.update %4#1 state(%4#0 : !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.group @all = @sgd match ["*"] {weight_decay = 5.000000e-04 : f32}
    optgen.distribute none
  }
}

