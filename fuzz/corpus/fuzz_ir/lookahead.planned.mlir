module {
  optgen.optimizer @lookahead {
    optgen.rule @adamw inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %0 = optgen.constant 1 : i64
      %1 = optgen.mul %lr, %weight_decay : f32, f32
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.mul %p, %2 : !optgen.tensor<*, f32>, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %v = optgen.state "v" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
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
      %18 = optgen.constant 1 : i64
      %19 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %20 = optgen.step : i64
      %21 = optgen.pow %19, %20 : f32, i64
      %22 = optgen.sub %18, %21 : i64, f32
      %23 = optgen.div %7, %17 : !optgen.tensor<*, f32>, f32
      %24 = optgen.div %12, %22 : !optgen.tensor<*, f32>, f32
      %25 = optgen.sqrt %24 : !optgen.tensor<*, f32>
      %26 = optgen.add %25, %eps : !optgen.tensor<*, f32>, f32
      %27 = optgen.div %23, %26 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %28 = optgen.mul %lr, %27 : f32, !optgen.tensor<*, f32>
      %29 = optgen.sub %3, %28 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      optgen.update %29 state(%7, %12 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.rule @adamw_3 inputs ["p", "g"] attributes {optgen.specializes = @adamw} {
    ^bb0(%p: !optgen.tensor<[3], f32>, %g: !optgen.tensor<[3], f32>):
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %0 = optgen.constant 1 : i64
      %1 = optgen.mul %lr, %weight_decay : f32, f32
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.mul %p, %2 : !optgen.tensor<[3], f32>, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[3], f32> -> !optgen.tensor<[3], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[3], f32> -> !optgen.tensor<[3], f32>
      %4 = optgen.constant 1 : i64
      %5 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %6 = optgen.sub %4, %5 : i64, f32
      %7 = optgen.lerp %m, %g, %6 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, f32
      %8 = optgen.mul %g, %g : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
      %9 = optgen.constant 1 : i64
      %10 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %11 = optgen.sub %9, %10 : i64, f32
      %12 = optgen.lerp %v, %8, %11 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, f32
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
      %23 = optgen.div %7, %17 : !optgen.tensor<[3], f32>, f32
      %24 = optgen.div %12, %22 : !optgen.tensor<[3], f32>, f32
      %25 = optgen.sqrt %24 : !optgen.tensor<[3], f32>
      %26 = optgen.add %25, %eps : !optgen.tensor<[3], f32>, f32
      %27 = optgen.div %23, %26 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
      %28 = optgen.mul %lr, %27 : f32, !optgen.tensor<[3], f32>
      %29 = optgen.sub %3, %28 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
      optgen.update %29 state(%7, %12 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>) : !optgen.tensor<[3], f32>
    }
    optgen.rule @lookahead inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %k = optgen.hyper "k" default(5 : i64) : i64
      %alpha = optgen.hyper "alpha" default(5.000000e-01 : f32) : f32
      %slow = optgen.state "slow" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %0 = optgen.step : i64
      %1 = optgen.constant 1 : i64
      %2 = optgen.cmp eq, %0, %1 : i64, i64
      %3 = optgen.select %2, %p, %slow : i1, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %4 = optgen.constant 1 : i64
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %4, %5 : i64, f32
      %7 = optgen.mul %p, %6 : !optgen.tensor<*, f32>, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %v = optgen.state "v" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %8 = optgen.constant 1 : i64
      %9 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %10 = optgen.sub %8, %9 : i64, f32
      %11 = optgen.lerp %m, %g, %10 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %12 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %13 = optgen.constant 1 : i64
      %14 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %15 = optgen.sub %13, %14 : i64, f32
      %16 = optgen.lerp %v, %12, %15 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %17 = optgen.constant 1 : i64
      %18 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %19 = optgen.step : i64
      %20 = optgen.pow %18, %19 : f32, i64
      %21 = optgen.sub %17, %20 : i64, f32
      %22 = optgen.constant 1 : i64
      %23 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %24 = optgen.step : i64
      %25 = optgen.pow %23, %24 : f32, i64
      %26 = optgen.sub %22, %25 : i64, f32
      %27 = optgen.div %11, %21 : !optgen.tensor<*, f32>, f32
      %28 = optgen.div %16, %26 : !optgen.tensor<*, f32>, f32
      %29 = optgen.sqrt %28 : !optgen.tensor<*, f32>
      %30 = optgen.add %29, %eps : !optgen.tensor<*, f32>, f32
      %31 = optgen.div %27, %30 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %32 = optgen.mul %lr, %31 : f32, !optgen.tensor<*, f32>
      %33 = optgen.sub %7, %32 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %34 = optgen.step : i64
      %35 = optgen.mod %34, %k : i64, i64
      %36 = optgen.constant 0 : i64
      %37 = optgen.cmp eq, %35, %36 : i64, i64
      %38 = optgen.lerp %3, %33, %alpha : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
      %39 = optgen.select %37, %38, %3 : i1, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %40 = optgen.select %37, %38, %33 : i1, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      optgen.update %40 state(%39, %11, %16 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.rule @lookahead_64x16 inputs ["p", "g"] attributes {optgen.specializes = @lookahead} {
    ^bb0(%p: !optgen.tensor<[64, 16], f32>, %g: !optgen.tensor<[64, 16], f32>):
      %k = optgen.hyper "k" default(5 : i64) : i64
      %alpha = optgen.hyper "alpha" default(5.000000e-01 : f32) : f32
      %slow = optgen.state "slow" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %0 = optgen.step : i64
      %1 = optgen.constant 1 : i64
      %2 = optgen.cmp eq, %0, %1 : i64, i64
      %3 = optgen.select %2, %p, %slow : i1, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %4 = optgen.constant 1 : i64
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %4, %5 : i64, f32
      %7 = optgen.mul %p, %6 : !optgen.tensor<[64, 16], f32>, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %8 = optgen.constant 1 : i64
      %9 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %10 = optgen.sub %8, %9 : i64, f32
      %11 = optgen.lerp %m, %g, %10 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
      %12 = optgen.mul %g, %g : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
      %13 = optgen.constant 1 : i64
      %14 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %15 = optgen.sub %13, %14 : i64, f32
      %16 = optgen.lerp %v, %12, %15 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
      %17 = optgen.constant 1 : i64
      %18 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %19 = optgen.step : i64
      %20 = optgen.pow %18, %19 : f32, i64
      %21 = optgen.sub %17, %20 : i64, f32
      %22 = optgen.constant 1 : i64
      %23 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %24 = optgen.step : i64
      %25 = optgen.pow %23, %24 : f32, i64
      %26 = optgen.sub %22, %25 : i64, f32
      %27 = optgen.div %11, %21 : !optgen.tensor<[64, 16], f32>, f32
      %28 = optgen.div %16, %26 : !optgen.tensor<[64, 16], f32>, f32
      %29 = optgen.sqrt %28 : !optgen.tensor<[64, 16], f32>
      %30 = optgen.add %29, %eps : !optgen.tensor<[64, 16], f32>, f32
      %31 = optgen.div %27, %30 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
      %32 = optgen.mul %lr, %31 : f32, !optgen.tensor<[64, 16], f32>
      %33 = optgen.sub %7, %32 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
      %34 = optgen.step : i64
      %35 = optgen.mod %34, %k : i64, i64
      %36 = optgen.constant 0 : i64
      %37 = optgen.cmp eq, %35, %36 : i64, i64
      %38 = optgen.lerp %3, %33, %alpha : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
      %39 = optgen.select %37, %38, %3 : i1, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
      %40 = optgen.select %37, %38, %33 : i1, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
      optgen.update %40 state(%39, %11, %16 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>) : !optgen.tensor<[64, 16], f32>
    }
    optgen.rule @lookahead_16x16 inputs ["p", "g"] attributes {optgen.specializes = @lookahead} {
    ^bb0(%p: !optgen.tensor<[16, 16], f32>, %g: !optgen.tensor<[16, 16], f32>):
      %k = optgen.hyper "k" default(5 : i64) : i64
      %alpha = optgen.hyper "alpha" default(5.000000e-01 : f32) : f32
      %slow = optgen.state "slow" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %0 = optgen.step : i64
      %1 = optgen.constant 1 : i64
      %2 = optgen.cmp eq, %0, %1 : i64, i64
      %3 = optgen.select %2, %p, %slow : i1, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %4 = optgen.constant 1 : i64
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %4, %5 : i64, f32
      %7 = optgen.mul %p, %6 : !optgen.tensor<[16, 16], f32>, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %8 = optgen.constant 1 : i64
      %9 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %10 = optgen.sub %8, %9 : i64, f32
      %11 = optgen.lerp %m, %g, %10 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
      %12 = optgen.mul %g, %g : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
      %13 = optgen.constant 1 : i64
      %14 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %15 = optgen.sub %13, %14 : i64, f32
      %16 = optgen.lerp %v, %12, %15 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
      %17 = optgen.constant 1 : i64
      %18 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %19 = optgen.step : i64
      %20 = optgen.pow %18, %19 : f32, i64
      %21 = optgen.sub %17, %20 : i64, f32
      %22 = optgen.constant 1 : i64
      %23 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %24 = optgen.step : i64
      %25 = optgen.pow %23, %24 : f32, i64
      %26 = optgen.sub %22, %25 : i64, f32
      %27 = optgen.div %11, %21 : !optgen.tensor<[16, 16], f32>, f32
      %28 = optgen.div %16, %26 : !optgen.tensor<[16, 16], f32>, f32
      %29 = optgen.sqrt %28 : !optgen.tensor<[16, 16], f32>
      %30 = optgen.add %29, %eps : !optgen.tensor<[16, 16], f32>, f32
      %31 = optgen.div %27, %30 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
      %32 = optgen.mul %lr, %31 : f32, !optgen.tensor<[16, 16], f32>
      %33 = optgen.sub %7, %32 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
      %34 = optgen.step : i64
      %35 = optgen.mod %34, %k : i64, i64
      %36 = optgen.constant 0 : i64
      %37 = optgen.cmp eq, %35, %36 : i64, i64
      %38 = optgen.lerp %3, %33, %alpha : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
      %39 = optgen.select %37, %38, %3 : i1, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
      %40 = optgen.select %37, %38, %33 : i1, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
      optgen.update %40 state(%39, %11, %16 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>) : !optgen.tensor<[16, 16], f32>
    }
    optgen.rule @lookahead_16x64 inputs ["p", "g"] attributes {optgen.specializes = @lookahead} {
    ^bb0(%p: !optgen.tensor<[16, 64], f32>, %g: !optgen.tensor<[16, 64], f32>):
      %k = optgen.hyper "k" default(5 : i64) : i64
      %alpha = optgen.hyper "alpha" default(5.000000e-01 : f32) : f32
      %slow = optgen.state "slow" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %0 = optgen.step : i64
      %1 = optgen.constant 1 : i64
      %2 = optgen.cmp eq, %0, %1 : i64, i64
      %3 = optgen.select %2, %p, %slow : i1, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %4 = optgen.constant 1 : i64
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %4, %5 : i64, f32
      %7 = optgen.mul %p, %6 : !optgen.tensor<[16, 64], f32>, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %8 = optgen.constant 1 : i64
      %9 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %10 = optgen.sub %8, %9 : i64, f32
      %11 = optgen.lerp %m, %g, %10 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
      %12 = optgen.mul %g, %g : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
      %13 = optgen.constant 1 : i64
      %14 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %15 = optgen.sub %13, %14 : i64, f32
      %16 = optgen.lerp %v, %12, %15 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
      %17 = optgen.constant 1 : i64
      %18 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %19 = optgen.step : i64
      %20 = optgen.pow %18, %19 : f32, i64
      %21 = optgen.sub %17, %20 : i64, f32
      %22 = optgen.constant 1 : i64
      %23 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %24 = optgen.step : i64
      %25 = optgen.pow %23, %24 : f32, i64
      %26 = optgen.sub %22, %25 : i64, f32
      %27 = optgen.div %11, %21 : !optgen.tensor<[16, 64], f32>, f32
      %28 = optgen.div %16, %26 : !optgen.tensor<[16, 64], f32>, f32
      %29 = optgen.sqrt %28 : !optgen.tensor<[16, 64], f32>
      %30 = optgen.add %29, %eps : !optgen.tensor<[16, 64], f32>, f32
      %31 = optgen.div %27, %30 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
      %32 = optgen.mul %lr, %31 : f32, !optgen.tensor<[16, 64], f32>
      %33 = optgen.sub %7, %32 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
      %34 = optgen.step : i64
      %35 = optgen.mod %34, %k : i64, i64
      %36 = optgen.constant 0 : i64
      %37 = optgen.cmp eq, %35, %36 : i64, i64
      %38 = optgen.lerp %3, %33, %alpha : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
      %39 = optgen.select %37, %38, %3 : i1, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
      %40 = optgen.select %37, %38, %33 : i1, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
      optgen.update %40 state(%39, %11, %16 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>) : !optgen.tensor<[16, 64], f32>
    }
    optgen.rule @lookahead_1x1 inputs ["p", "g"] attributes {optgen.specializes = @lookahead} {
    ^bb0(%p: !optgen.tensor<[1, 1], f32>, %g: !optgen.tensor<[1, 1], f32>):
      %k = optgen.hyper "k" default(5 : i64) : i64
      %alpha = optgen.hyper "alpha" default(5.000000e-01 : f32) : f32
      %slow = optgen.state "slow" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %0 = optgen.step : i64
      %1 = optgen.constant 1 : i64
      %2 = optgen.cmp eq, %0, %1 : i64, i64
      %3 = optgen.select %2, %p, %slow : i1, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) : f32
      %4 = optgen.constant 1 : i64
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %4, %5 : i64, f32
      %7 = optgen.mul %p, %6 : !optgen.tensor<[1, 1], f32>, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) : tuple<f32, f32>
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %8 = optgen.constant 1 : i64
      %9 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %10 = optgen.sub %8, %9 : i64, f32
      %11 = optgen.lerp %m, %g, %10 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
      %12 = optgen.mul %g, %g : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
      %13 = optgen.constant 1 : i64
      %14 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %15 = optgen.sub %13, %14 : i64, f32
      %16 = optgen.lerp %v, %12, %15 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
      %17 = optgen.constant 1 : i64
      %18 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %19 = optgen.step : i64
      %20 = optgen.pow %18, %19 : f32, i64
      %21 = optgen.sub %17, %20 : i64, f32
      %22 = optgen.constant 1 : i64
      %23 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %24 = optgen.step : i64
      %25 = optgen.pow %23, %24 : f32, i64
      %26 = optgen.sub %22, %25 : i64, f32
      %27 = optgen.div %11, %21 : !optgen.tensor<[1, 1], f32>, f32
      %28 = optgen.div %16, %26 : !optgen.tensor<[1, 1], f32>, f32
      %29 = optgen.sqrt %28 : !optgen.tensor<[1, 1], f32>
      %30 = optgen.add %29, %eps : !optgen.tensor<[1, 1], f32>, f32
      %31 = optgen.div %27, %30 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
      %32 = optgen.mul %lr, %31 : f32, !optgen.tensor<[1, 1], f32>
      %33 = optgen.sub %7, %32 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
      %34 = optgen.step : i64
      %35 = optgen.mod %34, %k : i64, i64
      %36 = optgen.constant 0 : i64
      %37 = optgen.cmp eq, %35, %36 : i64, i64
      %38 = optgen.lerp %3, %33, %alpha : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
      %39 = optgen.select %37, %38, %3 : i1, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
      %40 = optgen.select %37, %38, %33 : i1, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
      optgen.update %40 state(%39, %11, %16 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>) : !optgen.tensor<[1, 1], f32>
    }
    optgen.group @matrices = @lookahead match ["*"] {k = 2 : i64} where {
    ^bb0(%param: !optgen.tensor<*, f32>):
      %0 = optgen.ndim %param : !optgen.tensor<*, f32>
      %1 = optgen.constant 2 : i64
      %2 = optgen.cmp eq, %0, %1 : i64, i64
      optgen.yield %2 : i1
    }
    optgen.group @rest = @adamw match ["*"] {weight_decay = 0.000000e+00 : f32}
    optgen.param "lm_head.weight" [64, 16] -> @matrices
    optgen.param "resid_lambdas" [3] -> @rest
    optgen.param "transformer.h.0.attn.c_q.weight" [16, 16] -> @matrices
    optgen.param "transformer.h.0.mlp.c_fc.weight" [64, 16] -> @matrices
    optgen.param "transformer.h.0.mlp.c_proj.weight" [16, 64] -> @matrices
    optgen.param "transformer.h.1.mlp.c_fc.weight" [64, 16] -> @matrices
    optgen.param "transformer.h.1.one.weight" [1, 1] -> @matrices
    optgen.param "transformer.wte.weight" [64, 16] -> @matrices
    optgen.bucket @matrices [64, 16] ["lm_head.weight", "transformer.h.0.mlp.c_fc.weight", "transformer.h.1.mlp.c_fc.weight", "transformer.wte.weight"] rule @lookahead_64x16
    optgen.bucket @matrices [16, 16] ["transformer.h.0.attn.c_q.weight"] rule @lookahead_16x16
    optgen.bucket @matrices [16, 64] ["transformer.h.0.mlp.c_proj.weight"] rule @lookahead_16x64
    optgen.bucket @matrices [1, 1] ["transformer.h.1.one.weight"] rule @lookahead_1x1
    optgen.bucket @rest [3] ["resid_lambdas"] rule @adamw_3
    optgen.distribute none
  }
}

