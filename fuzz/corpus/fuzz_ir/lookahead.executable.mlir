module {
  optgen.optimizer @lookahead {
    optgen.rule @adamw inputs ["p", "g"] attributes {optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 0 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 1 : i64} : f32
      %1 = optgen.mul %lr, %weight_decay : f32, f32
      %2 = optgen.sub %0, %1 : i64, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 2 : i64} : tuple<f32, f32>
      %3 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %5 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %6 = optgen.sub %0, %5 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 4 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %v = optgen.state "v" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %3, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %5, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12:3 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
        %13 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %14 = optgen.lerp %v, %13, %4 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %15 = optgen.div %14, %9 : !optgen.tensor<*, f32>, f32
        %16 = optgen.sqrt %15 : !optgen.tensor<*, f32>
        %17 = optgen.add %16, %eps : !optgen.tensor<*, f32>, f32
        %18 = optgen.lerp %m, %g, %6 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %19 = optgen.div %18, %11 : !optgen.tensor<*, f32>, f32
        %20 = optgen.div %19, %17 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %21 = optgen.mul %lr, %20 : f32, !optgen.tensor<*, f32>
        %22 = optgen.mul %p, %2 : !optgen.tensor<*, f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        optgen.yield %14, %18, %23 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %12#2 state(%12#1, %12#0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.rule @adamw_3 inputs ["p", "g"] attributes {optgen.specializes = @adamw, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[3], f32>, %g: !optgen.tensor<[3], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 0 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 1 : i64} : f32
      %1 = optgen.mul %lr, %weight_decay : f32, f32
      %2 = optgen.sub %0, %1 : i64, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 2 : i64} : tuple<f32, f32>
      %3 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %5 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %6 = optgen.sub %0, %5 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 4 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[3], f32> -> !optgen.tensor<[3], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[3], f32> -> !optgen.tensor<[3], f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %3, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %5, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12:3 = optgen.kernel -> (!optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>) {
        %13 = optgen.mul %g, %g : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        %14 = optgen.lerp %v, %13, %4 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, f32
        %15 = optgen.div %14, %9 : !optgen.tensor<[3], f32>, f32
        %16 = optgen.sqrt %15 : !optgen.tensor<[3], f32>
        %17 = optgen.add %16, %eps : !optgen.tensor<[3], f32>, f32
        %18 = optgen.lerp %m, %g, %6 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, f32
        %19 = optgen.div %18, %11 : !optgen.tensor<[3], f32>, f32
        %20 = optgen.div %19, %17 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        %21 = optgen.mul %lr, %20 : f32, !optgen.tensor<[3], f32>
        %22 = optgen.mul %p, %2 : !optgen.tensor<[3], f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        optgen.yield %14, %18, %23 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %12#2 state(%12#1, %12#0 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>) : !optgen.tensor<[3], f32>
    }
    optgen.rule @lookahead inputs ["p", "g"] attributes {optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.constant 0 : i64
      %1 = optgen.constant 1 : i64
      %k = optgen.hyper "k" default(5 : i64) {offset = 0 : i64} : i64
      %alpha = optgen.hyper "alpha" default(5.000000e-01 : f32) {offset = 1 : i64} : f32
      %slow = optgen.state "slow" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %2 = optgen.step : i64
      %3 = optgen.mod %2, %k : i64, i64
      %4 = optgen.cmp eq, %3, %0 : i64, i64
      %5 = optgen.cmp eq, %2, %1 : i64, i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 2 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 3 : i64} : f32
      %6 = optgen.mul %lr, %weight_decay : f32, f32
      %7 = optgen.sub %1, %6 : i64, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 4 : i64} : tuple<f32, f32>
      %8 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %9 = optgen.pow %8, %2 : f32, i64
      %10 = optgen.sub %1, %9 : i64, f32
      %11 = optgen.sub %1, %8 : i64, f32
      %12 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %13 = optgen.pow %12, %2 : f32, i64
      %14 = optgen.sub %1, %13 : i64, f32
      %15 = optgen.sub %1, %12 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 6 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %v = optgen.state "v" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %16:4 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
        %17 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %18 = optgen.lerp %v, %17, %11 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %19 = optgen.div %18, %10 : !optgen.tensor<*, f32>, f32
        %20 = optgen.sqrt %19 : !optgen.tensor<*, f32>
        %21 = optgen.add %20, %eps : !optgen.tensor<*, f32>, f32
        %22 = optgen.lerp %m, %g, %15 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %23 = optgen.div %22, %14 : !optgen.tensor<*, f32>, f32
        %24 = optgen.div %23, %21 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %25 = optgen.mul %lr, %24 : f32, !optgen.tensor<*, f32>
        %26 = optgen.mul %p, %7 : !optgen.tensor<*, f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %28 = optgen.select %5, %p, %slow : i1, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %29 = optgen.lerp %28, %27, %alpha : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %30 = optgen.select %4, %29, %27 : i1, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %31 = optgen.select %4, %29, %28 : i1, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        optgen.yield %18, %22, %30, %31 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      } {optgen.buffers = [#optgen.buffer<state, 2>, #optgen.buffer<state, 1>, #optgen.buffer<param, 0>, #optgen.buffer<state, 0>]}
      optgen.update %16#2 state(%16#3, %16#1, %16#0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.rule @lookahead_64x16 inputs ["p", "g"] attributes {optgen.specializes = @lookahead, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[64, 16], f32>, %g: !optgen.tensor<[64, 16], f32>):
      %0 = optgen.constant 0 : i64
      %1 = optgen.constant 1 : i64
      %k = optgen.hyper "k" default(5 : i64) {offset = 0 : i64} : i64
      %alpha = optgen.hyper "alpha" default(5.000000e-01 : f32) {offset = 1 : i64} : f32
      %slow = optgen.state "slow" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %2 = optgen.step : i64
      %3 = optgen.mod %2, %k : i64, i64
      %4 = optgen.cmp eq, %3, %0 : i64, i64
      %5 = optgen.cmp eq, %2, %1 : i64, i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 2 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 3 : i64} : f32
      %6 = optgen.mul %lr, %weight_decay : f32, f32
      %7 = optgen.sub %1, %6 : i64, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 4 : i64} : tuple<f32, f32>
      %8 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %9 = optgen.pow %8, %2 : f32, i64
      %10 = optgen.sub %1, %9 : i64, f32
      %11 = optgen.sub %1, %8 : i64, f32
      %12 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %13 = optgen.pow %12, %2 : f32, i64
      %14 = optgen.sub %1, %13 : i64, f32
      %15 = optgen.sub %1, %12 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 6 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %16:4 = optgen.kernel -> (!optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>) {
        %17 = optgen.mul %g, %g : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %18 = optgen.lerp %v, %17, %11 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %19 = optgen.div %18, %10 : !optgen.tensor<[64, 16], f32>, f32
        %20 = optgen.sqrt %19 : !optgen.tensor<[64, 16], f32>
        %21 = optgen.add %20, %eps : !optgen.tensor<[64, 16], f32>, f32
        %22 = optgen.lerp %m, %g, %15 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %23 = optgen.div %22, %14 : !optgen.tensor<[64, 16], f32>, f32
        %24 = optgen.div %23, %21 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %25 = optgen.mul %lr, %24 : f32, !optgen.tensor<[64, 16], f32>
        %26 = optgen.mul %p, %7 : !optgen.tensor<[64, 16], f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %28 = optgen.select %5, %p, %slow : i1, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %29 = optgen.lerp %28, %27, %alpha : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %30 = optgen.select %4, %29, %27 : i1, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %31 = optgen.select %4, %29, %28 : i1, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        optgen.yield %18, %22, %30, %31 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
      } {optgen.buffers = [#optgen.buffer<state, 2>, #optgen.buffer<state, 1>, #optgen.buffer<param, 0>, #optgen.buffer<state, 0>]}
      optgen.update %16#2 state(%16#3, %16#1, %16#0 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>) : !optgen.tensor<[64, 16], f32>
    }
    optgen.rule @lookahead_16x16 inputs ["p", "g"] attributes {optgen.specializes = @lookahead, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[16, 16], f32>, %g: !optgen.tensor<[16, 16], f32>):
      %0 = optgen.constant 0 : i64
      %1 = optgen.constant 1 : i64
      %k = optgen.hyper "k" default(5 : i64) {offset = 0 : i64} : i64
      %alpha = optgen.hyper "alpha" default(5.000000e-01 : f32) {offset = 1 : i64} : f32
      %slow = optgen.state "slow" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %2 = optgen.step : i64
      %3 = optgen.mod %2, %k : i64, i64
      %4 = optgen.cmp eq, %3, %0 : i64, i64
      %5 = optgen.cmp eq, %2, %1 : i64, i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 2 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 3 : i64} : f32
      %6 = optgen.mul %lr, %weight_decay : f32, f32
      %7 = optgen.sub %1, %6 : i64, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 4 : i64} : tuple<f32, f32>
      %8 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %9 = optgen.pow %8, %2 : f32, i64
      %10 = optgen.sub %1, %9 : i64, f32
      %11 = optgen.sub %1, %8 : i64, f32
      %12 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %13 = optgen.pow %12, %2 : f32, i64
      %14 = optgen.sub %1, %13 : i64, f32
      %15 = optgen.sub %1, %12 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 6 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %16:4 = optgen.kernel -> (!optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>) {
        %17 = optgen.mul %g, %g : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %18 = optgen.lerp %v, %17, %11 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
        %19 = optgen.div %18, %10 : !optgen.tensor<[16, 16], f32>, f32
        %20 = optgen.sqrt %19 : !optgen.tensor<[16, 16], f32>
        %21 = optgen.add %20, %eps : !optgen.tensor<[16, 16], f32>, f32
        %22 = optgen.lerp %m, %g, %15 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
        %23 = optgen.div %22, %14 : !optgen.tensor<[16, 16], f32>, f32
        %24 = optgen.div %23, %21 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %25 = optgen.mul %lr, %24 : f32, !optgen.tensor<[16, 16], f32>
        %26 = optgen.mul %p, %7 : !optgen.tensor<[16, 16], f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %28 = optgen.select %5, %p, %slow : i1, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %29 = optgen.lerp %28, %27, %alpha : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
        %30 = optgen.select %4, %29, %27 : i1, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %31 = optgen.select %4, %29, %28 : i1, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        optgen.yield %18, %22, %30, %31 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
      } {optgen.buffers = [#optgen.buffer<state, 2>, #optgen.buffer<state, 1>, #optgen.buffer<param, 0>, #optgen.buffer<state, 0>]}
      optgen.update %16#2 state(%16#3, %16#1, %16#0 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>) : !optgen.tensor<[16, 16], f32>
    }
    optgen.rule @lookahead_16x64 inputs ["p", "g"] attributes {optgen.specializes = @lookahead, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[16, 64], f32>, %g: !optgen.tensor<[16, 64], f32>):
      %0 = optgen.constant 0 : i64
      %1 = optgen.constant 1 : i64
      %k = optgen.hyper "k" default(5 : i64) {offset = 0 : i64} : i64
      %alpha = optgen.hyper "alpha" default(5.000000e-01 : f32) {offset = 1 : i64} : f32
      %slow = optgen.state "slow" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %2 = optgen.step : i64
      %3 = optgen.mod %2, %k : i64, i64
      %4 = optgen.cmp eq, %3, %0 : i64, i64
      %5 = optgen.cmp eq, %2, %1 : i64, i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 2 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 3 : i64} : f32
      %6 = optgen.mul %lr, %weight_decay : f32, f32
      %7 = optgen.sub %1, %6 : i64, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 4 : i64} : tuple<f32, f32>
      %8 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %9 = optgen.pow %8, %2 : f32, i64
      %10 = optgen.sub %1, %9 : i64, f32
      %11 = optgen.sub %1, %8 : i64, f32
      %12 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %13 = optgen.pow %12, %2 : f32, i64
      %14 = optgen.sub %1, %13 : i64, f32
      %15 = optgen.sub %1, %12 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 6 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %16:4 = optgen.kernel -> (!optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>) {
        %17 = optgen.mul %g, %g : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %18 = optgen.lerp %v, %17, %11 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
        %19 = optgen.div %18, %10 : !optgen.tensor<[16, 64], f32>, f32
        %20 = optgen.sqrt %19 : !optgen.tensor<[16, 64], f32>
        %21 = optgen.add %20, %eps : !optgen.tensor<[16, 64], f32>, f32
        %22 = optgen.lerp %m, %g, %15 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
        %23 = optgen.div %22, %14 : !optgen.tensor<[16, 64], f32>, f32
        %24 = optgen.div %23, %21 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %25 = optgen.mul %lr, %24 : f32, !optgen.tensor<[16, 64], f32>
        %26 = optgen.mul %p, %7 : !optgen.tensor<[16, 64], f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %28 = optgen.select %5, %p, %slow : i1, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %29 = optgen.lerp %28, %27, %alpha : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
        %30 = optgen.select %4, %29, %27 : i1, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %31 = optgen.select %4, %29, %28 : i1, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        optgen.yield %18, %22, %30, %31 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
      } {optgen.buffers = [#optgen.buffer<state, 2>, #optgen.buffer<state, 1>, #optgen.buffer<param, 0>, #optgen.buffer<state, 0>]}
      optgen.update %16#2 state(%16#3, %16#1, %16#0 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>) : !optgen.tensor<[16, 64], f32>
    }
    optgen.rule @lookahead_1x1 inputs ["p", "g"] attributes {optgen.specializes = @lookahead, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[1, 1], f32>, %g: !optgen.tensor<[1, 1], f32>):
      %0 = optgen.constant 0 : i64
      %1 = optgen.constant 1 : i64
      %k = optgen.hyper "k" default(5 : i64) {offset = 0 : i64} : i64
      %alpha = optgen.hyper "alpha" default(5.000000e-01 : f32) {offset = 1 : i64} : f32
      %slow = optgen.state "slow" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %2 = optgen.step : i64
      %3 = optgen.mod %2, %k : i64, i64
      %4 = optgen.cmp eq, %3, %0 : i64, i64
      %5 = optgen.cmp eq, %2, %1 : i64, i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 2 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 3 : i64} : f32
      %6 = optgen.mul %lr, %weight_decay : f32, f32
      %7 = optgen.sub %1, %6 : i64, f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 4 : i64} : tuple<f32, f32>
      %8 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %9 = optgen.pow %8, %2 : f32, i64
      %10 = optgen.sub %1, %9 : i64, f32
      %11 = optgen.sub %1, %8 : i64, f32
      %12 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %13 = optgen.pow %12, %2 : f32, i64
      %14 = optgen.sub %1, %13 : i64, f32
      %15 = optgen.sub %1, %12 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 6 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %16:4 = optgen.kernel -> (!optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>) {
        %17 = optgen.mul %g, %g : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %18 = optgen.lerp %v, %17, %11 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
        %19 = optgen.div %18, %10 : !optgen.tensor<[1, 1], f32>, f32
        %20 = optgen.sqrt %19 : !optgen.tensor<[1, 1], f32>
        %21 = optgen.add %20, %eps : !optgen.tensor<[1, 1], f32>, f32
        %22 = optgen.lerp %m, %g, %15 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
        %23 = optgen.div %22, %14 : !optgen.tensor<[1, 1], f32>, f32
        %24 = optgen.div %23, %21 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %25 = optgen.mul %lr, %24 : f32, !optgen.tensor<[1, 1], f32>
        %26 = optgen.mul %p, %7 : !optgen.tensor<[1, 1], f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %28 = optgen.select %5, %p, %slow : i1, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %29 = optgen.lerp %28, %27, %alpha : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
        %30 = optgen.select %4, %29, %27 : i1, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %31 = optgen.select %4, %29, %28 : i1, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        optgen.yield %18, %22, %30, %31 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
      } {optgen.buffers = [#optgen.buffer<state, 2>, #optgen.buffer<state, 1>, #optgen.buffer<param, 0>, #optgen.buffer<state, 0>]}
      optgen.update %16#2 state(%16#3, %16#1, %16#0 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>) : !optgen.tensor<[1, 1], f32>
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

