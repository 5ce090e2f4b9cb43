module {
  optgen.optimizer @clip_adamw {
    optgen.global @grad_norm inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      %1 = optgen.reduce_params sum %0 {accumulator = f64} : !optgen.tensor<*, f32>
      %2 = optgen.sqrt %1 : f32
      optgen.yield %2 : f32
    }
    optgen.rule @adamw inputs ["p", "g"] attributes {optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 0 : i64} : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 1 : i64} : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 3 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 4 : i64} : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %max_norm = optgen.hyper "max_norm" default(1.000000e+00 : f32) {offset = 5 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %v = optgen.state "v" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %grad_norm = optgen.global_value @grad_norm : f32
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13 = optgen.cmp lt, %grad_norm, %max_norm : f32, f32
      %14:3 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
        %15 = optgen.div %g, %grad_norm : !optgen.tensor<*, f32>, f32
        %16 = optgen.mul %15, %max_norm : !optgen.tensor<*, f32>, f32
        %17 = optgen.select %13, %g, %16 : i1, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %18 = optgen.mul %17, %17 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %19 = optgen.lerp %v, %18, %2 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %20 = optgen.div %19, %9 : !optgen.tensor<*, f32>, f32
        %21 = optgen.sqrt %20 : !optgen.tensor<*, f32>
        %22 = optgen.add %21, %eps : !optgen.tensor<*, f32>, f32
        %23 = optgen.lerp %m, %17, %4 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %24 = optgen.mul %12, %23 : f32, !optgen.tensor<*, f32>
        %25 = optgen.div %24, %22 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %26 = optgen.mul %p, %6 : !optgen.tensor<*, f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        optgen.yield %19, %23, %27 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %14#2 state(%14#1, %14#0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.rule @adamw_64x16 inputs ["p", "g"] attributes {optgen.specializes = @adamw, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[64, 16], f32>, %g: !optgen.tensor<[64, 16], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 0 : i64} : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 1 : i64} : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 3 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 4 : i64} : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %max_norm = optgen.hyper "max_norm" default(1.000000e+00 : f32) {offset = 5 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %grad_norm = optgen.global_value @grad_norm : f32
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13 = optgen.cmp lt, %grad_norm, %max_norm : f32, f32
      %14:3 = optgen.kernel -> (!optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>) {
        %15 = optgen.div %g, %grad_norm : !optgen.tensor<[64, 16], f32>, f32
        %16 = optgen.mul %15, %max_norm : !optgen.tensor<[64, 16], f32>, f32
        %17 = optgen.select %13, %g, %16 : i1, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %18 = optgen.mul %17, %17 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %19 = optgen.lerp %v, %18, %2 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %20 = optgen.div %19, %9 : !optgen.tensor<[64, 16], f32>, f32
        %21 = optgen.sqrt %20 : !optgen.tensor<[64, 16], f32>
        %22 = optgen.add %21, %eps : !optgen.tensor<[64, 16], f32>, f32
        %23 = optgen.lerp %m, %17, %4 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %24 = optgen.mul %12, %23 : f32, !optgen.tensor<[64, 16], f32>
        %25 = optgen.div %24, %22 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %26 = optgen.mul %p, %6 : !optgen.tensor<[64, 16], f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        optgen.yield %19, %23, %27 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %14#2 state(%14#1, %14#0 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>) : !optgen.tensor<[64, 16], f32>
    }
    optgen.rule @adamw_3 inputs ["p", "g"] attributes {optgen.specializes = @adamw, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[3], f32>, %g: !optgen.tensor<[3], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 0 : i64} : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 1 : i64} : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 3 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 4 : i64} : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %max_norm = optgen.hyper "max_norm" default(1.000000e+00 : f32) {offset = 5 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[3], f32> -> !optgen.tensor<[3], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[3], f32> -> !optgen.tensor<[3], f32>
      %grad_norm = optgen.global_value @grad_norm : f32
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13 = optgen.cmp lt, %grad_norm, %max_norm : f32, f32
      %14:3 = optgen.kernel -> (!optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>) {
        %15 = optgen.div %g, %grad_norm : !optgen.tensor<[3], f32>, f32
        %16 = optgen.mul %15, %max_norm : !optgen.tensor<[3], f32>, f32
        %17 = optgen.select %13, %g, %16 : i1, !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        %18 = optgen.mul %17, %17 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        %19 = optgen.lerp %v, %18, %2 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, f32
        %20 = optgen.div %19, %9 : !optgen.tensor<[3], f32>, f32
        %21 = optgen.sqrt %20 : !optgen.tensor<[3], f32>
        %22 = optgen.add %21, %eps : !optgen.tensor<[3], f32>, f32
        %23 = optgen.lerp %m, %17, %4 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, f32
        %24 = optgen.mul %12, %23 : f32, !optgen.tensor<[3], f32>
        %25 = optgen.div %24, %22 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        %26 = optgen.mul %p, %6 : !optgen.tensor<[3], f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        optgen.yield %19, %23, %27 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %14#2 state(%14#1, %14#0 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>) : !optgen.tensor<[3], f32>
    }
    optgen.rule @adamw_16x16 inputs ["p", "g"] attributes {optgen.specializes = @adamw, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[16, 16], f32>, %g: !optgen.tensor<[16, 16], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 0 : i64} : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 1 : i64} : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 3 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 4 : i64} : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %max_norm = optgen.hyper "max_norm" default(1.000000e+00 : f32) {offset = 5 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %grad_norm = optgen.global_value @grad_norm : f32
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13 = optgen.cmp lt, %grad_norm, %max_norm : f32, f32
      %14:3 = optgen.kernel -> (!optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>) {
        %15 = optgen.div %g, %grad_norm : !optgen.tensor<[16, 16], f32>, f32
        %16 = optgen.mul %15, %max_norm : !optgen.tensor<[16, 16], f32>, f32
        %17 = optgen.select %13, %g, %16 : i1, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %18 = optgen.mul %17, %17 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %19 = optgen.lerp %v, %18, %2 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
        %20 = optgen.div %19, %9 : !optgen.tensor<[16, 16], f32>, f32
        %21 = optgen.sqrt %20 : !optgen.tensor<[16, 16], f32>
        %22 = optgen.add %21, %eps : !optgen.tensor<[16, 16], f32>, f32
        %23 = optgen.lerp %m, %17, %4 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
        %24 = optgen.mul %12, %23 : f32, !optgen.tensor<[16, 16], f32>
        %25 = optgen.div %24, %22 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %26 = optgen.mul %p, %6 : !optgen.tensor<[16, 16], f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        optgen.yield %19, %23, %27 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %14#2 state(%14#1, %14#0 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>) : !optgen.tensor<[16, 16], f32>
    }
    optgen.rule @adamw_16x64 inputs ["p", "g"] attributes {optgen.specializes = @adamw, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[16, 64], f32>, %g: !optgen.tensor<[16, 64], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 0 : i64} : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 1 : i64} : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 3 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 4 : i64} : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %max_norm = optgen.hyper "max_norm" default(1.000000e+00 : f32) {offset = 5 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %grad_norm = optgen.global_value @grad_norm : f32
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13 = optgen.cmp lt, %grad_norm, %max_norm : f32, f32
      %14:3 = optgen.kernel -> (!optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>) {
        %15 = optgen.div %g, %grad_norm : !optgen.tensor<[16, 64], f32>, f32
        %16 = optgen.mul %15, %max_norm : !optgen.tensor<[16, 64], f32>, f32
        %17 = optgen.select %13, %g, %16 : i1, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %18 = optgen.mul %17, %17 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %19 = optgen.lerp %v, %18, %2 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
        %20 = optgen.div %19, %9 : !optgen.tensor<[16, 64], f32>, f32
        %21 = optgen.sqrt %20 : !optgen.tensor<[16, 64], f32>
        %22 = optgen.add %21, %eps : !optgen.tensor<[16, 64], f32>, f32
        %23 = optgen.lerp %m, %17, %4 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
        %24 = optgen.mul %12, %23 : f32, !optgen.tensor<[16, 64], f32>
        %25 = optgen.div %24, %22 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %26 = optgen.mul %p, %6 : !optgen.tensor<[16, 64], f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        optgen.yield %19, %23, %27 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %14#2 state(%14#1, %14#0 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>) : !optgen.tensor<[16, 64], f32>
    }
    optgen.rule @adamw_1x1 inputs ["p", "g"] attributes {optgen.specializes = @adamw, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[1, 1], f32>, %g: !optgen.tensor<[1, 1], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" default(1.000000e-03 : f32) {offset = 0 : i64} : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 1 : i64} : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 3 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.00999999977 : f32) {offset = 4 : i64} : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %max_norm = optgen.hyper "max_norm" default(1.000000e+00 : f32) {offset = 5 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %v = optgen.state "v" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %grad_norm = optgen.global_value @grad_norm : f32
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13 = optgen.cmp lt, %grad_norm, %max_norm : f32, f32
      %14:3 = optgen.kernel -> (!optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>) {
        %15 = optgen.div %g, %grad_norm : !optgen.tensor<[1, 1], f32>, f32
        %16 = optgen.mul %15, %max_norm : !optgen.tensor<[1, 1], f32>, f32
        %17 = optgen.select %13, %g, %16 : i1, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %18 = optgen.mul %17, %17 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %19 = optgen.lerp %v, %18, %2 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
        %20 = optgen.div %19, %9 : !optgen.tensor<[1, 1], f32>, f32
        %21 = optgen.sqrt %20 : !optgen.tensor<[1, 1], f32>
        %22 = optgen.add %21, %eps : !optgen.tensor<[1, 1], f32>, f32
        %23 = optgen.lerp %m, %17, %4 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
        %24 = optgen.mul %12, %23 : f32, !optgen.tensor<[1, 1], f32>
        %25 = optgen.div %24, %22 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %26 = optgen.mul %p, %6 : !optgen.tensor<[1, 1], f32>, f32
        %27 = optgen.sub %26, %25 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        optgen.yield %19, %23, %27 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %14#2 state(%14#1, %14#0 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>) : !optgen.tensor<[1, 1], f32>
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
    optgen.distribute zero2 {small_numel = 1024 : i64}
    optgen.schedule world_size 2 {
      %small = optgen.unit small ["resid_lambdas", "transformer.h.0.attn.c_q.weight", "transformer.h.1.one.weight"] offsets [0, 3, 259] rules [@adamw_3, @adamw_16x16, @adamw_1x1] counts [260]
      %flat = optgen.unit flat ["lm_head.weight", "transformer.h.0.mlp.c_fc.weight", "transformer.h.1.mlp.c_fc.weight", "transformer.wte.weight", "transformer.h.0.mlp.c_proj.weight"] offsets [0, 1024, 2048, 3072, 4096] rules [@adamw_64x16, @adamw_64x16, @adamw_64x16, @adamw_64x16, @adamw_16x64] counts [2560, 2560]
      %0 = optgen.all_reduce %small payload f32
      %1 = optgen.reduce_scatter %flat payload f32
      optgen.wait %0
      optgen.partials %small
      optgen.wait %1
      optgen.partials %flat
      %2 = optgen.gather_partials
      optgen.wait %2
      optgen.finish_globals
      optgen.compute %small
      optgen.compute %flat
      %3 = optgen.all_gather %flat payload f32
      optgen.wait %3
    }
  }
}

