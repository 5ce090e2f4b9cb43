module {
  optgen.optimizer @adafactor {
    optgen.rule @adafactor inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0 = optgen.constant 0 : i64
      %1 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(0.00999999977 : f32) : f32
      %eps1 = optgen.hyper "eps1" default(1.000000e-30 : f32) : f32
      %eps2 = optgen.hyper "eps2" default(1.000000e-03 : f32) : f32
      %clip = optgen.hyper "clip" default(1.000000e+00 : f32) : f32
      %decay = optgen.hyper "decay" default(8.000000e-01 : f32) : f32
      %2 = optgen.neg %decay : f32
      %row = optgen.state "row" like %p : !optgen.tensor<[m, n], f32> reduced %1 -> !optgen.tensor<[m, 1], f32>
      %col = optgen.state "col" like %p : !optgen.tensor<[m, n], f32> reduced %0 -> !optgen.tensor<[1, n], f32>
      %3 = optgen.step : i64
      %4 = optgen.rsqrt %3 : i64
      %5 = optgen.min %lr, %4 : f32, f32
      %6 = optgen.pow %3, %2 : i64, f32
      %7 = optgen.sub %1, %6 : i64, f32
      %8 = optgen.sub %1, %7 : i64, f32
      %9:2 = optgen.kernel -> (!optgen.tensor<[m, 1], f32>, !optgen.tensor<[1, n], f32>) {
        %20 = optgen.mul %g, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        %21 = optgen.add %20, %eps1 : !optgen.tensor<[m, n], f32>, f32
        %22 = optgen.reduce mean %21 along %1 : !optgen.tensor<[m, n], f32>
        %23 = optgen.reduce mean %21 along %0 : !optgen.tensor<[m, n], f32>
        optgen.yield %22, %23 : !optgen.tensor<[m, 1], f32>, !optgen.tensor<[1, n], f32>
      }
      %10:2 = optgen.kernel -> (!optgen.tensor<[m, 1], f32>, f32) {
        %20 = optgen.lerp %row, %9#0, %8 : !optgen.tensor<[m, 1], f32>, !optgen.tensor<[m, 1], f32>, f32
        %21 = optgen.reduce mean %20 : !optgen.tensor<[m, 1], f32>
        optgen.yield %20, %21 : !optgen.tensor<[m, 1], f32>, f32
      }
      %11 = optgen.kernel -> (!optgen.tensor<[1, n], f32>) {
        %20 = optgen.lerp %col, %9#1, %8 : !optgen.tensor<[1, n], f32>, !optgen.tensor<[1, n], f32>, f32
        optgen.yield %20 : !optgen.tensor<[1, n], f32>
      }
      %12:3 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, f32, f32) {
        %20 = optgen.mul %10#0, %11 : !optgen.tensor<[m, 1], f32>, !optgen.tensor<[1, n], f32>
        %21 = optgen.div %20, %10#1 : !optgen.tensor<[m, n], f32>, f32
        %22 = optgen.rsqrt %21 : !optgen.tensor<[m, n], f32>
        %23 = optgen.mul %g, %22 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        %24 = optgen.mul %23, %23 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        %25 = optgen.reduce mean %24 : !optgen.tensor<[m, n], f32>
        %26 = optgen.mul %p, %p : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        %27 = optgen.reduce mean %26 : !optgen.tensor<[m, n], f32>
        optgen.yield %23, %25, %27 : !optgen.tensor<[m, n], f32>, f32, f32
      }
      %13 = optgen.sqrt %12#1 : f32
      %14 = optgen.div %13, %clip : f32, f32
      %15 = optgen.max %1, %14 : i64, f32
      %16 = optgen.sqrt %12#2 : f32
      %17 = optgen.max %eps2, %16 : f32, f32
      %18 = optgen.mul %17, %5 : f32, f32
      %19 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %20 = optgen.div %12#0, %15 : !optgen.tensor<[m, n], f32>, f32
        %21 = optgen.mul %18, %20 : f32, !optgen.tensor<[m, n], f32>
        %22 = optgen.sub %p, %21 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %22 : !optgen.tensor<[m, n], f32>
      }
      optgen.update %19 state(%10#0, %11 : !optgen.tensor<[m, 1], f32>, !optgen.tensor<[1, n], f32>) : !optgen.tensor<[m, n], f32>
    }
    optgen.group @matrices = @adafactor match ["*"] {} where {
    ^bb0(%param: !optgen.tensor<*, f32>):
      %0 = optgen.ndim %param : !optgen.tensor<*, f32>
      %1 = optgen.constant 2 : i64
      %2 = optgen.cmp eq, %0, %1 : i64, i64
      optgen.yield %2 : i1
    }
    optgen.distribute none
  }
}

