module {
  optgen.optimizer @nanochat_muon_adamw {
    optgen.rule @adamw inputs ["p", "g"] attributes {optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 1 : i64} : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 3 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) {offset = 4 : i64} : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %exp_avg = optgen.state "exp_avg" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %exp_avg_sq = optgen.state "exp_avg_sq" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13:3 = optgen.kernel -> (!optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) {
        %14 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %15 = optgen.lerp %exp_avg_sq, %14, %2 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %16 = optgen.div %15, %9 : !optgen.tensor<*, f32>, f32
        %17 = optgen.sqrt %16 : !optgen.tensor<*, f32>
        %18 = optgen.add %17, %eps : !optgen.tensor<*, f32>, f32
        %19 = optgen.lerp %exp_avg, %g, %4 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, f32
        %20 = optgen.mul %12, %19 : f32, !optgen.tensor<*, f32>
        %21 = optgen.div %20, %18 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        %22 = optgen.mul %p, %6 : !optgen.tensor<*, f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
        optgen.yield %15, %19, %23 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %13#2 state(%13#1, %13#0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
    }
    optgen.rule @adamw_64x16 inputs ["p", "g"] attributes {optgen.specializes = @adamw, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[64, 16], f32>, %g: !optgen.tensor<[64, 16], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 1 : i64} : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 3 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) {offset = 4 : i64} : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %exp_avg = optgen.state "exp_avg" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %exp_avg_sq = optgen.state "exp_avg_sq" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13:3 = optgen.kernel -> (!optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>) {
        %14 = optgen.mul %g, %g : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %15 = optgen.lerp %exp_avg_sq, %14, %2 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %16 = optgen.div %15, %9 : !optgen.tensor<[64, 16], f32>, f32
        %17 = optgen.sqrt %16 : !optgen.tensor<[64, 16], f32>
        %18 = optgen.add %17, %eps : !optgen.tensor<[64, 16], f32>, f32
        %19 = optgen.lerp %exp_avg, %g, %4 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %20 = optgen.mul %12, %19 : f32, !optgen.tensor<[64, 16], f32>
        %21 = optgen.div %20, %18 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %22 = optgen.mul %p, %6 : !optgen.tensor<[64, 16], f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        optgen.yield %15, %19, %23 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %13#2 state(%13#1, %13#0 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>) : !optgen.tensor<[64, 16], f32>
    }
    optgen.rule @adamw_3 inputs ["p", "g"] attributes {optgen.specializes = @adamw, optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[3], f32>, %g: !optgen.tensor<[3], f32>):
      %0 = optgen.constant 1 : i64
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      %betas = optgen.hyper "betas" default([0.899999976 : f32, 9.990000e-01 : f32]) {offset = 1 : i64} : tuple<f32, f32>
      %1 = optgen.tuple_get %betas[1] : tuple<f32, f32>
      %2 = optgen.sub %0, %1 : i64, f32
      %3 = optgen.tuple_get %betas[0] : tuple<f32, f32>
      %4 = optgen.sub %0, %3 : i64, f32
      %eps = optgen.hyper "eps" default(9.99999993E-9 : f32) {offset = 3 : i64} : f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) {offset = 4 : i64} : f32
      %5 = optgen.mul %lr, %weight_decay : f32, f32
      %6 = optgen.sub %0, %5 : i64, f32
      %exp_avg = optgen.state "exp_avg" like %p : !optgen.tensor<[3], f32> -> !optgen.tensor<[3], f32>
      %exp_avg_sq = optgen.state "exp_avg_sq" like %p : !optgen.tensor<[3], f32> -> !optgen.tensor<[3], f32>
      %7 = optgen.step : i64
      %8 = optgen.pow %1, %7 : f32, i64
      %9 = optgen.sub %0, %8 : i64, f32
      %10 = optgen.pow %3, %7 : f32, i64
      %11 = optgen.sub %0, %10 : i64, f32
      %12 = optgen.div %lr, %11 : f32, f32
      %13:3 = optgen.kernel -> (!optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>) {
        %14 = optgen.mul %g, %g : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        %15 = optgen.lerp %exp_avg_sq, %14, %2 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, f32
        %16 = optgen.div %15, %9 : !optgen.tensor<[3], f32>, f32
        %17 = optgen.sqrt %16 : !optgen.tensor<[3], f32>
        %18 = optgen.add %17, %eps : !optgen.tensor<[3], f32>, f32
        %19 = optgen.lerp %exp_avg, %g, %4 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, f32
        %20 = optgen.mul %12, %19 : f32, !optgen.tensor<[3], f32>
        %21 = optgen.div %20, %18 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        %22 = optgen.mul %p, %6 : !optgen.tensor<[3], f32>, f32
        %23 = optgen.sub %22, %21 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
        optgen.yield %15, %19, %23 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>
      } {optgen.buffers = [#optgen.buffer<state, 1>, #optgen.buffer<state, 0>, #optgen.buffer<param, 0>]}
      optgen.update %13#2 state(%13#1, %13#0 : !optgen.tensor<[3], f32>, !optgen.tensor<[3], f32>) : !optgen.tensor<[3], f32>
    }
    optgen.rule @muon inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, n], f32>, #optgen.slot<[m, 1], f32>, #optgen.slot<[m, 1], f64>, #optgen.slot<[m, n], f32>, #optgen.slot<[n, n], f32>, #optgen.slot<[n, n], f32>, #optgen.slot<[m, m], f32>, #optgen.slot<[m, m], f32>, #optgen.slot<[?, ?], f32>, #optgen.slot<[?, ?], f64>, #optgen.slot<[?, ?], f32>, #optgen.slot<[?, ?], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0 = optgen.constant 1.000000e-10 : f64
      %1 = optgen.constant 2 : i64
      %2 = optgen.constant 1.010000e+00 : f64
      %3 = optgen.constant 9.9999999999999995E-7 : f64
      %4 = optgen.constant 0 : i64
      %5 = optgen.constant 1 : i64
      %6 = optgen.constant -1 : i64
      %7 = optgen.dim %g, %6 : !optgen.tensor<[m, n], f32>
      %8 = optgen.dim %p, %6 : !optgen.tensor<[m, n], f32>
      %9 = optgen.constant -2 : i64
      %10 = optgen.dim %g, %9 : !optgen.tensor<[m, n], f32>
      %11 = optgen.min %10, %7 : i64, i64
      %12 = optgen.sqrt %11 : i64
      %13 = optgen.sqrt %10 : i64
      %14 = optgen.dim %p, %9 : !optgen.tensor<[m, n], f32>
      %15 = optgen.div %14, %8 : i64, i64
      %16 = optgen.max %5, %15 : i64, f32
      %17 = optgen.sqrt %16 : f32
      %18 = optgen.cmp ge, %14, %8 : i64, i64
      %19 = optgen.select %18, %5, %4 : i1, i64, i64
      %20 = optgen.dim %g, %19 : !optgen.tensor<[m, n], f32>
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      %21 = optgen.mul %lr, %17 : f32, f32
      %momentum = optgen.hyper "momentum" default(0.949999988 : f32) {offset = 1 : i64} : f32
      %22 = optgen.sub %5, %momentum : i64, f32
      %ns_steps = optgen.hyper "ns_steps" default(5 : i64) {offset = 2 : i64} : i64
      %beta2 = optgen.hyper "beta2" default(0.949999988 : f32) {offset = 3 : i64} : f32
      %23 = optgen.sub %5, %beta2 : i64, f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) {offset = 4 : i64} : f32
      %24 = optgen.mul %21, %weight_decay : f32, f32
      %momentum_buffer = optgen.state "momentum_buffer" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32>
      %second_momentum_buffer = optgen.state "second_momentum_buffer" like %p : !optgen.tensor<[m, n], f32> reduced %19 -> !optgen.tensor<[?, ?], f32>
      %25:4 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], bf16>, f32, !optgen.tensor<[m, 1], f32>) {
        %44 = optgen.lerp %momentum_buffer, %g, %22 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
        %45 = optgen.lerp %g, %44, %momentum : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
        %46 = optgen.cast %45 : !optgen.tensor<[m, n], f32> to !optgen.tensor<[m, n], bf16>
        %47 = optgen.cast %46 : !optgen.tensor<[m, n], bf16> to !optgen.tensor<[m, n], f32>
        %48 = optgen.reduce norm %47 {accumulator = f64} : !optgen.tensor<[m, n], f32>
        %49 = optgen.reduce norm %47 along %5 {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 2>]} : !optgen.tensor<[m, n], f32>
        optgen.yield %44, %46, %48, %49 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], bf16>, f32, !optgen.tensor<[m, 1], f32>
      } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 0>, unit, #optgen.buffer<workspace, 1>]}
      %26 = optgen.div %25#2, %13 : f32, f32
      %27 = optgen.kernel -> (!optgen.tensor<[m, 1], bf16>) {
        %44 = optgen.max %25#3, %3 : !optgen.tensor<[m, 1], f32>, f64
        %45 = optgen.div %26, %44 : f32, !optgen.tensor<[m, 1], f32>
        %46 = optgen.cast %45 : !optgen.tensor<[m, 1], f32> to !optgen.tensor<[m, 1], bf16>
        optgen.yield %46 : !optgen.tensor<[m, 1], bf16>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      %28:2 = optgen.kernel -> (!optgen.tensor<[m, n], bf16>, bf16) {
        %44 = optgen.mul %25#1, %27 : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, 1], bf16>
        %45 = optgen.reduce norm %44 {accumulator = f64} : !optgen.tensor<[m, n], bf16>
        optgen.yield %44, %45 : !optgen.tensor<[m, n], bf16>, bf16
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, unit]}
      %29 = optgen.mul %28#1, %2 : bf16, f64
      %30 = optgen.add %29, %3 : bf16, f64
      %31 = optgen.kernel -> (!optgen.tensor<[m, n], bf16>) {
        %44 = optgen.div %28#0, %30 : !optgen.tensor<[m, n], bf16>, bf16
        optgen.yield %44 : !optgen.tensor<[m, n], bf16>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
      %32 = optgen.for_table %ns_steps over dense<[[8.1565545249024609, -22.483292925577949, 15.878769915207462], [4.0429299351667387, -2.8089174659087139, 0.50001784510513159], [3.8916678022926607, -2.7724841532176852, 0.5060648178503393], [3.285753657755655, -2.3681294933425376, 0.46449024233003106], [2.3465413258596377, -1.7097828382687081, 0.42323551169305323]]> : tensor<5x3xf64> iter %31 : !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, n], bf16> attributes {optgen.buffers = [#optgen.buffer<workspace, 0>], optgen.next_buffers = [#optgen.buffer<workspace, 3>]} {
      ^bb0(%arg0: f32, %arg1: f32, %arg2: f32, %arg3: !optgen.tensor<[m, n], bf16>):
        %44 = optgen.dim %arg3, %9 : !optgen.tensor<[m, n], bf16>
        %45 = optgen.dim %arg3, %6 : !optgen.tensor<[m, n], bf16>
        %46 = optgen.cmp gt, %44, %45 : i64, i64
        %47 = optgen.if %46 -> (!optgen.tensor<[m, n], bf16>) {
          %48 = optgen.gemm %arg3 transposed, %arg3 symmetric {optgen.buffers = [#optgen.buffer<workspace, 4>]} : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[n, n], bf16>
          %49 = optgen.gemm %48, %48 transposed scaled %arg2 : f32 plus %48 : !optgen.tensor<[n, n], bf16> scaled %arg1 : f32 symmetric {optgen.buffers = [#optgen.buffer<workspace, 5>]} : !optgen.tensor<[n, n], bf16>, !optgen.tensor<[n, n], bf16> -> !optgen.tensor<[n, n], bf16>
          %50 = optgen.gemm %arg3, %49 plus %arg3 : !optgen.tensor<[m, n], bf16> scaled %arg0 : f32 {optgen.buffers = [#optgen.buffer<workspace, 3>]} : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[n, n], bf16> -> !optgen.tensor<[m, n], bf16>
          optgen.yield %50 : !optgen.tensor<[m, n], bf16>
        } else {
          %48 = optgen.gemm %arg3, %arg3 transposed symmetric {optgen.buffers = [#optgen.buffer<workspace, 6>]} : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, m], bf16>
          %49 = optgen.gemm %48, %48 transposed scaled %arg2 : f32 plus %48 : !optgen.tensor<[m, m], bf16> scaled %arg1 : f32 symmetric {optgen.buffers = [#optgen.buffer<workspace, 7>]} : !optgen.tensor<[m, m], bf16>, !optgen.tensor<[m, m], bf16> -> !optgen.tensor<[m, m], bf16>
          %50 = optgen.gemm %49, %arg3 plus %arg3 : !optgen.tensor<[m, n], bf16> scaled %arg0 : f32 {optgen.buffers = [#optgen.buffer<workspace, 3>]} : !optgen.tensor<[m, m], bf16>, !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, n], bf16>
          optgen.yield %50 : !optgen.tensor<[m, n], bf16>
        } {optgen.buffers = [#optgen.buffer<workspace, 3>]}
        optgen.yield %47 : !optgen.tensor<[m, n], bf16>
      }
      %33:2 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, f32) {
        %44 = optgen.cast %32 : !optgen.tensor<[m, n], bf16> to !optgen.tensor<[m, n], f32>
        %45 = optgen.reduce norm %44 {accumulator = f64} : !optgen.tensor<[m, n], f32>
        optgen.yield %44, %45 : !optgen.tensor<[m, n], f32>, f32
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, unit]}
      %34 = optgen.max %33#1, %3 : f32, f64
      %35 = optgen.div %12, %34 : f32, f32
      %36:2 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[?, ?], f32>) {
        %44 = optgen.mul %33#0, %35 : !optgen.tensor<[m, n], f32>, f32
        %45 = optgen.pow %44, %1 : !optgen.tensor<[m, n], f32>, i64
        %46 = optgen.reduce mean %45 along %19 {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 9>]} : !optgen.tensor<[m, n], f32>
        optgen.yield %44, %46 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[?, ?], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, #optgen.buffer<workspace, 8>]}
      %37:4 = optgen.kernel -> (f32, !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>, f32) {
        %44 = optgen.reduce sum %36#1 {accumulator = f64} : !optgen.tensor<[?, ?], f32>
        %45 = optgen.lerp %second_momentum_buffer, %36#1, %23 : !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>, f32
        %46 = optgen.max %45, %0 : !optgen.tensor<[?, ?], f32>, f64
        %47 = optgen.rsqrt %46 : !optgen.tensor<[?, ?], f32>
        %48 = optgen.pow %47, %1 : !optgen.tensor<[?, ?], f32>, i64
        %49 = optgen.mul %36#1, %20 : !optgen.tensor<[?, ?], f32>, i64
        %50 = optgen.mul %49, %48 : !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>
        %51 = optgen.reduce sum %50 {accumulator = f64} : !optgen.tensor<[?, ?], f32>
        optgen.yield %44, %45, %47, %51 : f32, !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>, f32
      } {optgen.buffers = [unit, #optgen.buffer<workspace, 10>, #optgen.buffer<workspace, 11>, unit]}
      %38 = optgen.mul %37#0, %20 : f32, i64
      %39 = optgen.sqrt %38 : f32
      %40 = optgen.sqrt %37#3 : f32
      %41 = optgen.max %40, %0 : f32, f64
      %42 = optgen.kernel -> (!optgen.tensor<[?, ?], f32>) {
        %44 = optgen.mul %37#2, %39 : !optgen.tensor<[?, ?], f32>, f32
        %45 = optgen.div %44, %41 : !optgen.tensor<[?, ?], f32>, f32
        optgen.yield %45 : !optgen.tensor<[?, ?], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 8>]}
      %43 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %44 = optgen.mul %36#0, %42 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[?, ?], f32>
        %45 = optgen.mul %44, %p : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        %46 = optgen.cmp ge, %45, %4 : !optgen.tensor<[m, n], f32>, i64
        %47 = optgen.mul %24, %p : f32, !optgen.tensor<[m, n], f32>
        %48 = optgen.mul %47, %46 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], i1>
        %49 = optgen.mul %21, %44 : f32, !optgen.tensor<[m, n], f32>
        %50 = optgen.add %49, %48 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        %51 = optgen.sub %p, %50 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %51 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %43 state(%25#0, %37#1 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[?, ?], f32>) : !optgen.tensor<[m, n], f32>
    }
    optgen.rule @muon_16x16 inputs ["p", "g"] attributes {optgen.specializes = @muon, optgen.workspace = [#optgen.slot<[16, 16], f32>, #optgen.slot<[16, 1], f32>, #optgen.slot<[16, 1], f64>, #optgen.slot<[16, 16], f32>, #optgen.slot<[16, 16], f32>]} {
    ^bb0(%p: !optgen.tensor<[16, 16], f32>, %g: !optgen.tensor<[16, 16], f32>):
      %0 = optgen.constant 16 : i64
      %1 = optgen.div %0, %0 : i64, i64
      %2 = optgen.min %0, %0 : i64, i64
      %3 = optgen.sqrt %2 : i64
      %4 = optgen.sqrt %0 : i64
      %5 = optgen.constant 1.000000e-10 : f64
      %6 = optgen.constant 2 : i64
      %7 = optgen.constant 1.010000e+00 : f64
      %8 = optgen.constant 9.9999999999999995E-7 : f64
      %9 = optgen.constant 0 : i64
      %10 = optgen.constant 1 : i64
      %11 = optgen.max %10, %1 : i64, f32
      %12 = optgen.sqrt %11 : f32
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      %13 = optgen.mul %lr, %12 : f32, f32
      %momentum = optgen.hyper "momentum" default(0.949999988 : f32) {offset = 1 : i64} : f32
      %14 = optgen.sub %10, %momentum : i64, f32
      %ns_steps = optgen.hyper "ns_steps" default(5 : i64) {offset = 2 : i64} : i64
      %beta2 = optgen.hyper "beta2" default(0.949999988 : f32) {offset = 3 : i64} : f32
      %15 = optgen.sub %10, %beta2 : i64, f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) {offset = 4 : i64} : f32
      %16 = optgen.mul %13, %weight_decay : f32, f32
      %momentum_buffer = optgen.state "momentum_buffer" like %p : !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
      %second_momentum_buffer = optgen.state "second_momentum_buffer" like %p : !optgen.tensor<[16, 16], f32> reduced %10 -> !optgen.tensor<[16, 1], f32>
      %17:4 = optgen.kernel -> (!optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], bf16>, f32, !optgen.tensor<[16, 1], f32>) {
        %36 = optgen.lerp %momentum_buffer, %g, %14 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
        %37 = optgen.lerp %g, %36, %momentum : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>, f32
        %38 = optgen.cast %37 : !optgen.tensor<[16, 16], f32> to !optgen.tensor<[16, 16], bf16>
        %39 = optgen.cast %38 : !optgen.tensor<[16, 16], bf16> to !optgen.tensor<[16, 16], f32>
        %40 = optgen.reduce norm %39 {accumulator = f64} : !optgen.tensor<[16, 16], f32>
        %41 = optgen.reduce norm %39 along %10 {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 2>]} : !optgen.tensor<[16, 16], f32>
        optgen.yield %36, %38, %40, %41 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], bf16>, f32, !optgen.tensor<[16, 1], f32>
      } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 0>, unit, #optgen.buffer<workspace, 1>]}
      %18 = optgen.div %17#2, %4 : f32, f32
      %19 = optgen.kernel -> (!optgen.tensor<[16, 1], bf16>) {
        %36 = optgen.max %17#3, %8 : !optgen.tensor<[16, 1], f32>, f64
        %37 = optgen.div %18, %36 : f32, !optgen.tensor<[16, 1], f32>
        %38 = optgen.cast %37 : !optgen.tensor<[16, 1], f32> to !optgen.tensor<[16, 1], bf16>
        optgen.yield %38 : !optgen.tensor<[16, 1], bf16>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      %20:2 = optgen.kernel -> (!optgen.tensor<[16, 16], bf16>, bf16) {
        %36 = optgen.mul %17#1, %19 : !optgen.tensor<[16, 16], bf16>, !optgen.tensor<[16, 1], bf16>
        %37 = optgen.reduce norm %36 {accumulator = f64} : !optgen.tensor<[16, 16], bf16>
        optgen.yield %36, %37 : !optgen.tensor<[16, 16], bf16>, bf16
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, unit]}
      %21 = optgen.mul %20#1, %7 : bf16, f64
      %22 = optgen.add %21, %8 : bf16, f64
      %23 = optgen.kernel -> (!optgen.tensor<[16, 16], bf16>) {
        %36 = optgen.div %20#0, %22 : !optgen.tensor<[16, 16], bf16>, bf16
        optgen.yield %36 : !optgen.tensor<[16, 16], bf16>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
      %24 = optgen.for_table %ns_steps over dense<[[8.1565545249024609, -22.483292925577949, 15.878769915207462], [4.0429299351667387, -2.8089174659087139, 0.50001784510513159], [3.8916678022926607, -2.7724841532176852, 0.5060648178503393], [3.285753657755655, -2.3681294933425376, 0.46449024233003106], [2.3465413258596377, -1.7097828382687081, 0.42323551169305323]]> : tensor<5x3xf64> iter %23 : !optgen.tensor<[16, 16], bf16> -> !optgen.tensor<[16, 16], bf16> attributes {optgen.buffers = [#optgen.buffer<workspace, 0>], optgen.next_buffers = [#optgen.buffer<workspace, 3>]} {
      ^bb0(%arg0: f32, %arg1: f32, %arg2: f32, %arg3: !optgen.tensor<[16, 16], bf16>):
        %36 = optgen.gemm %arg3, %arg3 transposed symmetric {optgen.buffers = [#optgen.buffer<workspace, 3>]} : !optgen.tensor<[16, 16], bf16>, !optgen.tensor<[16, 16], bf16> -> !optgen.tensor<[16, 16], bf16>
        %37 = optgen.gemm %36, %36 transposed scaled %arg2 : f32 plus %36 : !optgen.tensor<[16, 16], bf16> scaled %arg1 : f32 symmetric {optgen.buffers = [#optgen.buffer<workspace, 4>]} : !optgen.tensor<[16, 16], bf16>, !optgen.tensor<[16, 16], bf16> -> !optgen.tensor<[16, 16], bf16>
        %38 = optgen.gemm %37, %arg3 plus %arg3 : !optgen.tensor<[16, 16], bf16> scaled %arg0 : f32 {optgen.buffers = [#optgen.buffer<workspace, 3>]} : !optgen.tensor<[16, 16], bf16>, !optgen.tensor<[16, 16], bf16> -> !optgen.tensor<[16, 16], bf16>
        optgen.yield %38 : !optgen.tensor<[16, 16], bf16>
      }
      %25:2 = optgen.kernel -> (!optgen.tensor<[16, 16], f32>, f32) {
        %36 = optgen.cast %24 : !optgen.tensor<[16, 16], bf16> to !optgen.tensor<[16, 16], f32>
        %37 = optgen.reduce norm %36 {accumulator = f64} : !optgen.tensor<[16, 16], f32>
        optgen.yield %36, %37 : !optgen.tensor<[16, 16], f32>, f32
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, unit]}
      %26 = optgen.max %25#1, %8 : f32, f64
      %27 = optgen.div %3, %26 : f32, f32
      %28:2 = optgen.kernel -> (!optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 1], f32>) {
        %36 = optgen.mul %25#0, %27 : !optgen.tensor<[16, 16], f32>, f32
        %37 = optgen.pow %36, %6 : !optgen.tensor<[16, 16], f32>, i64
        %38 = optgen.reduce mean %37 along %10 {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 2>]} : !optgen.tensor<[16, 16], f32>
        optgen.yield %36, %38 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 1], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, #optgen.buffer<workspace, 1>]}
      %29:4 = optgen.kernel -> (f32, !optgen.tensor<[16, 1], f32>, !optgen.tensor<[16, 1], f32>, f32) {
        %36 = optgen.reduce sum %28#1 {accumulator = f64} : !optgen.tensor<[16, 1], f32>
        %37 = optgen.lerp %second_momentum_buffer, %28#1, %15 : !optgen.tensor<[16, 1], f32>, !optgen.tensor<[16, 1], f32>, f32
        %38 = optgen.max %37, %5 : !optgen.tensor<[16, 1], f32>, f64
        %39 = optgen.rsqrt %38 : !optgen.tensor<[16, 1], f32>
        %40 = optgen.pow %39, %6 : !optgen.tensor<[16, 1], f32>, i64
        %41 = optgen.mul %28#1, %0 : !optgen.tensor<[16, 1], f32>, i64
        %42 = optgen.mul %41, %40 : !optgen.tensor<[16, 1], f32>, !optgen.tensor<[16, 1], f32>
        %43 = optgen.reduce sum %42 {accumulator = f64} : !optgen.tensor<[16, 1], f32>
        optgen.yield %36, %37, %39, %43 : f32, !optgen.tensor<[16, 1], f32>, !optgen.tensor<[16, 1], f32>, f32
      } {optgen.buffers = [unit, #optgen.buffer<state, 1>, #optgen.buffer<workspace, 1>, unit]}
      %30 = optgen.mul %29#0, %0 : f32, i64
      %31 = optgen.sqrt %30 : f32
      %32 = optgen.sqrt %29#3 : f32
      %33 = optgen.max %32, %5 : f32, f64
      %34 = optgen.kernel -> (!optgen.tensor<[16, 1], f32>) {
        %36 = optgen.mul %29#2, %31 : !optgen.tensor<[16, 1], f32>, f32
        %37 = optgen.div %36, %33 : !optgen.tensor<[16, 1], f32>, f32
        optgen.yield %37 : !optgen.tensor<[16, 1], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      %35 = optgen.kernel -> (!optgen.tensor<[16, 16], f32>) {
        %36 = optgen.mul %28#0, %34 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 1], f32>
        %37 = optgen.mul %36, %p : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %38 = optgen.cmp ge, %37, %9 : !optgen.tensor<[16, 16], f32>, i64
        %39 = optgen.mul %16, %p : f32, !optgen.tensor<[16, 16], f32>
        %40 = optgen.mul %39, %38 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], i1>
        %41 = optgen.mul %13, %36 : f32, !optgen.tensor<[16, 16], f32>
        %42 = optgen.add %41, %40 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        %43 = optgen.sub %p, %42 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
        optgen.yield %43 : !optgen.tensor<[16, 16], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %35 state(%17#0, %29#1 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 1], f32>) : !optgen.tensor<[16, 16], f32>
    }
    optgen.rule @muon_64x16 inputs ["p", "g"] attributes {optgen.specializes = @muon, optgen.workspace = [#optgen.slot<[64, 16], f32>, #optgen.slot<[64, 1], f32>, #optgen.slot<[64, 1], f64>, #optgen.slot<[16, 16], f32>, #optgen.slot<[16, 16], f32>, #optgen.slot<[64, 16], f32>]} {
    ^bb0(%p: !optgen.tensor<[64, 16], f32>, %g: !optgen.tensor<[64, 16], f32>):
      %0 = optgen.constant 16 : i64
      %1 = optgen.constant 64 : i64
      %2 = optgen.div %1, %0 : i64, i64
      %3 = optgen.min %1, %0 : i64, i64
      %4 = optgen.sqrt %3 : i64
      %5 = optgen.sqrt %1 : i64
      %6 = optgen.constant 1.000000e-10 : f64
      %7 = optgen.constant 2 : i64
      %8 = optgen.constant 1.010000e+00 : f64
      %9 = optgen.constant 9.9999999999999995E-7 : f64
      %10 = optgen.constant 0 : i64
      %11 = optgen.constant 1 : i64
      %12 = optgen.max %11, %2 : i64, f32
      %13 = optgen.sqrt %12 : f32
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      %14 = optgen.mul %lr, %13 : f32, f32
      %momentum = optgen.hyper "momentum" default(0.949999988 : f32) {offset = 1 : i64} : f32
      %15 = optgen.sub %11, %momentum : i64, f32
      %ns_steps = optgen.hyper "ns_steps" default(5 : i64) {offset = 2 : i64} : i64
      %beta2 = optgen.hyper "beta2" default(0.949999988 : f32) {offset = 3 : i64} : f32
      %16 = optgen.sub %11, %beta2 : i64, f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) {offset = 4 : i64} : f32
      %17 = optgen.mul %14, %weight_decay : f32, f32
      %momentum_buffer = optgen.state "momentum_buffer" like %p : !optgen.tensor<[64, 16], f32> -> !optgen.tensor<[64, 16], f32>
      %second_momentum_buffer = optgen.state "second_momentum_buffer" like %p : !optgen.tensor<[64, 16], f32> reduced %11 -> !optgen.tensor<[64, 1], f32>
      %18:4 = optgen.kernel -> (!optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], bf16>, f32, !optgen.tensor<[64, 1], f32>) {
        %37 = optgen.lerp %momentum_buffer, %g, %15 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %38 = optgen.lerp %g, %37, %momentum : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>, f32
        %39 = optgen.cast %38 : !optgen.tensor<[64, 16], f32> to !optgen.tensor<[64, 16], bf16>
        %40 = optgen.cast %39 : !optgen.tensor<[64, 16], bf16> to !optgen.tensor<[64, 16], f32>
        %41 = optgen.reduce norm %40 {accumulator = f64} : !optgen.tensor<[64, 16], f32>
        %42 = optgen.reduce norm %40 along %11 {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 2>]} : !optgen.tensor<[64, 16], f32>
        optgen.yield %37, %39, %41, %42 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], bf16>, f32, !optgen.tensor<[64, 1], f32>
      } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 0>, unit, #optgen.buffer<workspace, 1>]}
      %19 = optgen.div %18#2, %5 : f32, f32
      %20 = optgen.kernel -> (!optgen.tensor<[64, 1], bf16>) {
        %37 = optgen.max %18#3, %9 : !optgen.tensor<[64, 1], f32>, f64
        %38 = optgen.div %19, %37 : f32, !optgen.tensor<[64, 1], f32>
        %39 = optgen.cast %38 : !optgen.tensor<[64, 1], f32> to !optgen.tensor<[64, 1], bf16>
        optgen.yield %39 : !optgen.tensor<[64, 1], bf16>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      %21:2 = optgen.kernel -> (!optgen.tensor<[64, 16], bf16>, bf16) {
        %37 = optgen.mul %18#1, %20 : !optgen.tensor<[64, 16], bf16>, !optgen.tensor<[64, 1], bf16>
        %38 = optgen.reduce norm %37 {accumulator = f64} : !optgen.tensor<[64, 16], bf16>
        optgen.yield %37, %38 : !optgen.tensor<[64, 16], bf16>, bf16
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, unit]}
      %22 = optgen.mul %21#1, %8 : bf16, f64
      %23 = optgen.add %22, %9 : bf16, f64
      %24 = optgen.kernel -> (!optgen.tensor<[64, 16], bf16>) {
        %37 = optgen.div %21#0, %23 : !optgen.tensor<[64, 16], bf16>, bf16
        optgen.yield %37 : !optgen.tensor<[64, 16], bf16>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
      %25 = optgen.for_table %ns_steps over dense<[[8.1565545249024609, -22.483292925577949, 15.878769915207462], [4.0429299351667387, -2.8089174659087139, 0.50001784510513159], [3.8916678022926607, -2.7724841532176852, 0.5060648178503393], [3.285753657755655, -2.3681294933425376, 0.46449024233003106], [2.3465413258596377, -1.7097828382687081, 0.42323551169305323]]> : tensor<5x3xf64> iter %24 : !optgen.tensor<[64, 16], bf16> -> !optgen.tensor<[64, 16], bf16> attributes {optgen.buffers = [#optgen.buffer<workspace, 0>], optgen.next_buffers = [#optgen.buffer<workspace, 5>]} {
      ^bb0(%arg0: f32, %arg1: f32, %arg2: f32, %arg3: !optgen.tensor<[64, 16], bf16>):
        %37 = optgen.gemm %arg3 transposed, %arg3 symmetric {optgen.buffers = [#optgen.buffer<workspace, 3>]} : !optgen.tensor<[64, 16], bf16>, !optgen.tensor<[64, 16], bf16> -> !optgen.tensor<[16, 16], bf16>
        %38 = optgen.gemm %37, %37 transposed scaled %arg2 : f32 plus %37 : !optgen.tensor<[16, 16], bf16> scaled %arg1 : f32 symmetric {optgen.buffers = [#optgen.buffer<workspace, 4>]} : !optgen.tensor<[16, 16], bf16>, !optgen.tensor<[16, 16], bf16> -> !optgen.tensor<[16, 16], bf16>
        %39 = optgen.gemm %arg3, %38 plus %arg3 : !optgen.tensor<[64, 16], bf16> scaled %arg0 : f32 {optgen.buffers = [#optgen.buffer<workspace, 5>]} : !optgen.tensor<[64, 16], bf16>, !optgen.tensor<[16, 16], bf16> -> !optgen.tensor<[64, 16], bf16>
        optgen.yield %39 : !optgen.tensor<[64, 16], bf16>
      }
      %26:2 = optgen.kernel -> (!optgen.tensor<[64, 16], f32>, f32) {
        %37 = optgen.cast %25 : !optgen.tensor<[64, 16], bf16> to !optgen.tensor<[64, 16], f32>
        %38 = optgen.reduce norm %37 {accumulator = f64} : !optgen.tensor<[64, 16], f32>
        optgen.yield %37, %38 : !optgen.tensor<[64, 16], f32>, f32
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, unit]}
      %27 = optgen.max %26#1, %9 : f32, f64
      %28 = optgen.div %4, %27 : f32, f32
      %29:2 = optgen.kernel -> (!optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 1], f32>) {
        %37 = optgen.mul %26#0, %28 : !optgen.tensor<[64, 16], f32>, f32
        %38 = optgen.pow %37, %7 : !optgen.tensor<[64, 16], f32>, i64
        %39 = optgen.reduce mean %38 along %11 {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 2>]} : !optgen.tensor<[64, 16], f32>
        optgen.yield %37, %39 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 1], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, #optgen.buffer<workspace, 1>]}
      %30:4 = optgen.kernel -> (f32, !optgen.tensor<[64, 1], f32>, !optgen.tensor<[64, 1], f32>, f32) {
        %37 = optgen.reduce sum %29#1 {accumulator = f64} : !optgen.tensor<[64, 1], f32>
        %38 = optgen.lerp %second_momentum_buffer, %29#1, %16 : !optgen.tensor<[64, 1], f32>, !optgen.tensor<[64, 1], f32>, f32
        %39 = optgen.max %38, %6 : !optgen.tensor<[64, 1], f32>, f64
        %40 = optgen.rsqrt %39 : !optgen.tensor<[64, 1], f32>
        %41 = optgen.pow %40, %7 : !optgen.tensor<[64, 1], f32>, i64
        %42 = optgen.mul %29#1, %0 : !optgen.tensor<[64, 1], f32>, i64
        %43 = optgen.mul %42, %41 : !optgen.tensor<[64, 1], f32>, !optgen.tensor<[64, 1], f32>
        %44 = optgen.reduce sum %43 {accumulator = f64} : !optgen.tensor<[64, 1], f32>
        optgen.yield %37, %38, %40, %44 : f32, !optgen.tensor<[64, 1], f32>, !optgen.tensor<[64, 1], f32>, f32
      } {optgen.buffers = [unit, #optgen.buffer<state, 1>, #optgen.buffer<workspace, 1>, unit]}
      %31 = optgen.mul %30#0, %0 : f32, i64
      %32 = optgen.sqrt %31 : f32
      %33 = optgen.sqrt %30#3 : f32
      %34 = optgen.max %33, %6 : f32, f64
      %35 = optgen.kernel -> (!optgen.tensor<[64, 1], f32>) {
        %37 = optgen.mul %30#2, %32 : !optgen.tensor<[64, 1], f32>, f32
        %38 = optgen.div %37, %34 : !optgen.tensor<[64, 1], f32>, f32
        optgen.yield %38 : !optgen.tensor<[64, 1], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      %36 = optgen.kernel -> (!optgen.tensor<[64, 16], f32>) {
        %37 = optgen.mul %29#0, %35 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 1], f32>
        %38 = optgen.mul %37, %p : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %39 = optgen.cmp ge, %38, %10 : !optgen.tensor<[64, 16], f32>, i64
        %40 = optgen.mul %17, %p : f32, !optgen.tensor<[64, 16], f32>
        %41 = optgen.mul %40, %39 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], i1>
        %42 = optgen.mul %14, %37 : f32, !optgen.tensor<[64, 16], f32>
        %43 = optgen.add %42, %41 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        %44 = optgen.sub %p, %43 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 16], f32>
        optgen.yield %44 : !optgen.tensor<[64, 16], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %36 state(%18#0, %30#1 : !optgen.tensor<[64, 16], f32>, !optgen.tensor<[64, 1], f32>) : !optgen.tensor<[64, 16], f32>
    }
    optgen.rule @muon_16x64 inputs ["p", "g"] attributes {optgen.specializes = @muon, optgen.workspace = [#optgen.slot<[16, 64], f32>, #optgen.slot<[16, 1], f32>, #optgen.slot<[16, 1], f64>, #optgen.slot<[16, 16], f32>, #optgen.slot<[16, 16], f32>, #optgen.slot<[16, 64], f32>, #optgen.slot<[1, 64], f32>, #optgen.slot<[1, 64], f64>]} {
    ^bb0(%p: !optgen.tensor<[16, 64], f32>, %g: !optgen.tensor<[16, 64], f32>):
      %0 = optgen.constant 64 : i64
      %1 = optgen.constant 16 : i64
      %2 = optgen.div %1, %0 : i64, i64
      %3 = optgen.min %1, %0 : i64, i64
      %4 = optgen.sqrt %3 : i64
      %5 = optgen.sqrt %1 : i64
      %6 = optgen.constant 1.000000e-10 : f64
      %7 = optgen.constant 2 : i64
      %8 = optgen.constant 1.010000e+00 : f64
      %9 = optgen.constant 9.9999999999999995E-7 : f64
      %10 = optgen.constant 0 : i64
      %11 = optgen.constant 1 : i64
      %12 = optgen.max %11, %2 : i64, f32
      %13 = optgen.sqrt %12 : f32
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      %14 = optgen.mul %lr, %13 : f32, f32
      %momentum = optgen.hyper "momentum" default(0.949999988 : f32) {offset = 1 : i64} : f32
      %15 = optgen.sub %11, %momentum : i64, f32
      %ns_steps = optgen.hyper "ns_steps" default(5 : i64) {offset = 2 : i64} : i64
      %beta2 = optgen.hyper "beta2" default(0.949999988 : f32) {offset = 3 : i64} : f32
      %16 = optgen.sub %11, %beta2 : i64, f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) {offset = 4 : i64} : f32
      %17 = optgen.mul %14, %weight_decay : f32, f32
      %momentum_buffer = optgen.state "momentum_buffer" like %p : !optgen.tensor<[16, 64], f32> -> !optgen.tensor<[16, 64], f32>
      %second_momentum_buffer = optgen.state "second_momentum_buffer" like %p : !optgen.tensor<[16, 64], f32> reduced %10 -> !optgen.tensor<[1, 64], f32>
      %18:4 = optgen.kernel -> (!optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], bf16>, f32, !optgen.tensor<[16, 1], f32>) {
        %37 = optgen.lerp %momentum_buffer, %g, %15 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
        %38 = optgen.lerp %g, %37, %momentum : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>, f32
        %39 = optgen.cast %38 : !optgen.tensor<[16, 64], f32> to !optgen.tensor<[16, 64], bf16>
        %40 = optgen.cast %39 : !optgen.tensor<[16, 64], bf16> to !optgen.tensor<[16, 64], f32>
        %41 = optgen.reduce norm %40 {accumulator = f64} : !optgen.tensor<[16, 64], f32>
        %42 = optgen.reduce norm %40 along %11 {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 2>]} : !optgen.tensor<[16, 64], f32>
        optgen.yield %37, %39, %41, %42 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], bf16>, f32, !optgen.tensor<[16, 1], f32>
      } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 0>, unit, #optgen.buffer<workspace, 1>]}
      %19 = optgen.div %18#2, %5 : f32, f32
      %20 = optgen.kernel -> (!optgen.tensor<[16, 1], bf16>) {
        %37 = optgen.max %18#3, %9 : !optgen.tensor<[16, 1], f32>, f64
        %38 = optgen.div %19, %37 : f32, !optgen.tensor<[16, 1], f32>
        %39 = optgen.cast %38 : !optgen.tensor<[16, 1], f32> to !optgen.tensor<[16, 1], bf16>
        optgen.yield %39 : !optgen.tensor<[16, 1], bf16>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      %21:2 = optgen.kernel -> (!optgen.tensor<[16, 64], bf16>, bf16) {
        %37 = optgen.mul %18#1, %20 : !optgen.tensor<[16, 64], bf16>, !optgen.tensor<[16, 1], bf16>
        %38 = optgen.reduce norm %37 {accumulator = f64} : !optgen.tensor<[16, 64], bf16>
        optgen.yield %37, %38 : !optgen.tensor<[16, 64], bf16>, bf16
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, unit]}
      %22 = optgen.mul %21#1, %8 : bf16, f64
      %23 = optgen.add %22, %9 : bf16, f64
      %24 = optgen.kernel -> (!optgen.tensor<[16, 64], bf16>) {
        %37 = optgen.div %21#0, %23 : !optgen.tensor<[16, 64], bf16>, bf16
        optgen.yield %37 : !optgen.tensor<[16, 64], bf16>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
      %25 = optgen.for_table %ns_steps over dense<[[8.1565545249024609, -22.483292925577949, 15.878769915207462], [4.0429299351667387, -2.8089174659087139, 0.50001784510513159], [3.8916678022926607, -2.7724841532176852, 0.5060648178503393], [3.285753657755655, -2.3681294933425376, 0.46449024233003106], [2.3465413258596377, -1.7097828382687081, 0.42323551169305323]]> : tensor<5x3xf64> iter %24 : !optgen.tensor<[16, 64], bf16> -> !optgen.tensor<[16, 64], bf16> attributes {optgen.buffers = [#optgen.buffer<workspace, 0>], optgen.next_buffers = [#optgen.buffer<workspace, 5>]} {
      ^bb0(%arg0: f32, %arg1: f32, %arg2: f32, %arg3: !optgen.tensor<[16, 64], bf16>):
        %37 = optgen.gemm %arg3, %arg3 transposed symmetric {optgen.buffers = [#optgen.buffer<workspace, 3>]} : !optgen.tensor<[16, 64], bf16>, !optgen.tensor<[16, 64], bf16> -> !optgen.tensor<[16, 16], bf16>
        %38 = optgen.gemm %37, %37 transposed scaled %arg2 : f32 plus %37 : !optgen.tensor<[16, 16], bf16> scaled %arg1 : f32 symmetric {optgen.buffers = [#optgen.buffer<workspace, 4>]} : !optgen.tensor<[16, 16], bf16>, !optgen.tensor<[16, 16], bf16> -> !optgen.tensor<[16, 16], bf16>
        %39 = optgen.gemm %38, %arg3 plus %arg3 : !optgen.tensor<[16, 64], bf16> scaled %arg0 : f32 {optgen.buffers = [#optgen.buffer<workspace, 5>]} : !optgen.tensor<[16, 16], bf16>, !optgen.tensor<[16, 64], bf16> -> !optgen.tensor<[16, 64], bf16>
        optgen.yield %39 : !optgen.tensor<[16, 64], bf16>
      }
      %26:2 = optgen.kernel -> (!optgen.tensor<[16, 64], f32>, f32) {
        %37 = optgen.cast %25 : !optgen.tensor<[16, 64], bf16> to !optgen.tensor<[16, 64], f32>
        %38 = optgen.reduce norm %37 {accumulator = f64} : !optgen.tensor<[16, 64], f32>
        optgen.yield %37, %38 : !optgen.tensor<[16, 64], f32>, f32
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, unit]}
      %27 = optgen.max %26#1, %9 : f32, f64
      %28 = optgen.div %4, %27 : f32, f32
      %29:2 = optgen.kernel -> (!optgen.tensor<[16, 64], f32>, !optgen.tensor<[1, 64], f32>) {
        %37 = optgen.mul %26#0, %28 : !optgen.tensor<[16, 64], f32>, f32
        %38 = optgen.pow %37, %7 : !optgen.tensor<[16, 64], f32>, i64
        %39 = optgen.reduce mean %38 along %10 {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 7>]} : !optgen.tensor<[16, 64], f32>
        optgen.yield %37, %39 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[1, 64], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, #optgen.buffer<workspace, 6>]}
      %30:4 = optgen.kernel -> (f32, !optgen.tensor<[1, 64], f32>, !optgen.tensor<[1, 64], f32>, f32) {
        %37 = optgen.reduce sum %29#1 {accumulator = f64} : !optgen.tensor<[1, 64], f32>
        %38 = optgen.lerp %second_momentum_buffer, %29#1, %16 : !optgen.tensor<[1, 64], f32>, !optgen.tensor<[1, 64], f32>, f32
        %39 = optgen.max %38, %6 : !optgen.tensor<[1, 64], f32>, f64
        %40 = optgen.rsqrt %39 : !optgen.tensor<[1, 64], f32>
        %41 = optgen.pow %40, %7 : !optgen.tensor<[1, 64], f32>, i64
        %42 = optgen.mul %29#1, %1 : !optgen.tensor<[1, 64], f32>, i64
        %43 = optgen.mul %42, %41 : !optgen.tensor<[1, 64], f32>, !optgen.tensor<[1, 64], f32>
        %44 = optgen.reduce sum %43 {accumulator = f64} : !optgen.tensor<[1, 64], f32>
        optgen.yield %37, %38, %40, %44 : f32, !optgen.tensor<[1, 64], f32>, !optgen.tensor<[1, 64], f32>, f32
      } {optgen.buffers = [unit, #optgen.buffer<state, 1>, #optgen.buffer<workspace, 6>, unit]}
      %31 = optgen.mul %30#0, %1 : f32, i64
      %32 = optgen.sqrt %31 : f32
      %33 = optgen.sqrt %30#3 : f32
      %34 = optgen.max %33, %6 : f32, f64
      %35 = optgen.kernel -> (!optgen.tensor<[1, 64], f32>) {
        %37 = optgen.mul %30#2, %32 : !optgen.tensor<[1, 64], f32>, f32
        %38 = optgen.div %37, %34 : !optgen.tensor<[1, 64], f32>, f32
        optgen.yield %38 : !optgen.tensor<[1, 64], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 6>]}
      %36 = optgen.kernel -> (!optgen.tensor<[16, 64], f32>) {
        %37 = optgen.mul %29#0, %35 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[1, 64], f32>
        %38 = optgen.mul %37, %p : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %39 = optgen.cmp ge, %38, %10 : !optgen.tensor<[16, 64], f32>, i64
        %40 = optgen.mul %17, %p : f32, !optgen.tensor<[16, 64], f32>
        %41 = optgen.mul %40, %39 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], i1>
        %42 = optgen.mul %14, %37 : f32, !optgen.tensor<[16, 64], f32>
        %43 = optgen.add %42, %41 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        %44 = optgen.sub %p, %43 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[16, 64], f32>
        optgen.yield %44 : !optgen.tensor<[16, 64], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %36 state(%18#0, %30#1 : !optgen.tensor<[16, 64], f32>, !optgen.tensor<[1, 64], f32>) : !optgen.tensor<[16, 64], f32>
    }
    optgen.rule @muon_1x1 inputs ["p", "g"] attributes {optgen.specializes = @muon, optgen.workspace = [#optgen.slot<[1, 1], f32>, #optgen.slot<[1, 1], f32>, #optgen.slot<[1, 1], f64>, #optgen.slot<[1, 1], f32>]} {
    ^bb0(%p: !optgen.tensor<[1, 1], f32>, %g: !optgen.tensor<[1, 1], f32>):
      %0 = optgen.constant 1.000000e-10 : f64
      %1 = optgen.constant 2 : i64
      %2 = optgen.constant 1.010000e+00 : f64
      %3 = optgen.constant 9.9999999999999995E-7 : f64
      %4 = optgen.constant 0 : i64
      %5 = optgen.constant 1 : i64
      %6 = optgen.div %5, %5 : i64, i64
      %7 = optgen.max %5, %6 : i64, f32
      %8 = optgen.sqrt %7 : f32
      %9 = optgen.min %5, %5 : i64, i64
      %10 = optgen.sqrt %9 : i64
      %11 = optgen.sqrt %5 : i64
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      %12 = optgen.mul %lr, %8 : f32, f32
      %momentum = optgen.hyper "momentum" default(0.949999988 : f32) {offset = 1 : i64} : f32
      %13 = optgen.sub %5, %momentum : i64, f32
      %ns_steps = optgen.hyper "ns_steps" default(5 : i64) {offset = 2 : i64} : i64
      %beta2 = optgen.hyper "beta2" default(0.949999988 : f32) {offset = 3 : i64} : f32
      %14 = optgen.sub %5, %beta2 : i64, f32
      %weight_decay = optgen.hyper "weight_decay" default(0.000000e+00 : f32) {offset = 4 : i64} : f32
      %15 = optgen.mul %12, %weight_decay : f32, f32
      %momentum_buffer = optgen.state "momentum_buffer" like %p : !optgen.tensor<[1, 1], f32> -> !optgen.tensor<[1, 1], f32>
      %second_momentum_buffer = optgen.state "second_momentum_buffer" like %p : !optgen.tensor<[1, 1], f32> reduced %5 -> !optgen.tensor<[1, 1], f32>
      %16:4 = optgen.kernel -> (!optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], bf16>, f32, !optgen.tensor<[1, 1], f32>) {
        %33 = optgen.lerp %momentum_buffer, %g, %13 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
        %34 = optgen.lerp %g, %33, %momentum : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
        %35 = optgen.cast %34 : !optgen.tensor<[1, 1], f32> to !optgen.tensor<[1, 1], bf16>
        %36 = optgen.cast %35 : !optgen.tensor<[1, 1], bf16> to !optgen.tensor<[1, 1], f32>
        %37 = optgen.reduce norm %36 {accumulator = f64} : !optgen.tensor<[1, 1], f32>
        %38 = optgen.reduce norm %36 along %5 {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 2>]} : !optgen.tensor<[1, 1], f32>
        optgen.yield %33, %35, %37, %38 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], bf16>, f32, !optgen.tensor<[1, 1], f32>
      } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 0>, unit, #optgen.buffer<workspace, 1>]}
      %17 = optgen.div %16#2, %11 : f32, f32
      %18:2 = optgen.kernel -> (!optgen.tensor<[1, 1], bf16>, bf16) {
        %33 = optgen.max %16#3, %3 : !optgen.tensor<[1, 1], f32>, f64
        %34 = optgen.div %17, %33 : f32, !optgen.tensor<[1, 1], f32>
        %35 = optgen.cast %34 : !optgen.tensor<[1, 1], f32> to !optgen.tensor<[1, 1], bf16>
        %36 = optgen.mul %16#1, %35 : !optgen.tensor<[1, 1], bf16>, !optgen.tensor<[1, 1], bf16>
        %37 = optgen.reduce norm %36 {accumulator = f64} : !optgen.tensor<[1, 1], bf16>
        optgen.yield %36, %37 : !optgen.tensor<[1, 1], bf16>, bf16
      } {optgen.buffers = [#optgen.buffer<workspace, 1>, unit]}
      %19 = optgen.mul %18#1, %2 : bf16, f64
      %20 = optgen.add %19, %3 : bf16, f64
      %21 = optgen.kernel -> (!optgen.tensor<[1, 1], bf16>) {
        %33 = optgen.div %18#0, %20 : !optgen.tensor<[1, 1], bf16>, bf16
        optgen.yield %33 : !optgen.tensor<[1, 1], bf16>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      %22 = optgen.for_table %ns_steps over dense<[[8.1565545249024609, -22.483292925577949, 15.878769915207462], [4.0429299351667387, -2.8089174659087139, 0.50001784510513159], [3.8916678022926607, -2.7724841532176852, 0.5060648178503393], [3.285753657755655, -2.3681294933425376, 0.46449024233003106], [2.3465413258596377, -1.7097828382687081, 0.42323551169305323]]> : tensor<5x3xf64> iter %21 : !optgen.tensor<[1, 1], bf16> -> !optgen.tensor<[1, 1], bf16> attributes {optgen.buffers = [#optgen.buffer<workspace, 1>], optgen.next_buffers = [#optgen.buffer<workspace, 0>]} {
      ^bb0(%arg0: f32, %arg1: f32, %arg2: f32, %arg3: !optgen.tensor<[1, 1], bf16>):
        %33 = optgen.gemm %arg3, %arg3 transposed symmetric {optgen.buffers = [#optgen.buffer<workspace, 0>]} : !optgen.tensor<[1, 1], bf16>, !optgen.tensor<[1, 1], bf16> -> !optgen.tensor<[1, 1], bf16>
        %34 = optgen.gemm %33, %33 transposed scaled %arg2 : f32 plus %33 : !optgen.tensor<[1, 1], bf16> scaled %arg1 : f32 symmetric {optgen.buffers = [#optgen.buffer<workspace, 3>]} : !optgen.tensor<[1, 1], bf16>, !optgen.tensor<[1, 1], bf16> -> !optgen.tensor<[1, 1], bf16>
        %35 = optgen.gemm %34, %arg3 plus %arg3 : !optgen.tensor<[1, 1], bf16> scaled %arg0 : f32 {optgen.buffers = [#optgen.buffer<workspace, 0>]} : !optgen.tensor<[1, 1], bf16>, !optgen.tensor<[1, 1], bf16> -> !optgen.tensor<[1, 1], bf16>
        optgen.yield %35 : !optgen.tensor<[1, 1], bf16>
      }
      %23:2 = optgen.kernel -> (!optgen.tensor<[1, 1], f32>, f32) {
        %33 = optgen.cast %22 : !optgen.tensor<[1, 1], bf16> to !optgen.tensor<[1, 1], f32>
        %34 = optgen.reduce norm %33 {accumulator = f64} : !optgen.tensor<[1, 1], f32>
        optgen.yield %33, %34 : !optgen.tensor<[1, 1], f32>, f32
      } {optgen.buffers = [#optgen.buffer<workspace, 1>, unit]}
      %24 = optgen.max %23#1, %3 : f32, f64
      %25 = optgen.div %10, %24 : f32, f32
      %26:2 = optgen.kernel -> (!optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>) {
        %33 = optgen.mul %23#0, %25 : !optgen.tensor<[1, 1], f32>, f32
        %34 = optgen.pow %33, %1 : !optgen.tensor<[1, 1], f32>, i64
        %35 = optgen.reduce mean %34 along %5 {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 2>]} : !optgen.tensor<[1, 1], f32>
        optgen.yield %33, %35 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>, #optgen.buffer<workspace, 0>]}
      %27:4 = optgen.kernel -> (f32, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32) {
        %33 = optgen.reduce sum %26#1 {accumulator = f64} : !optgen.tensor<[1, 1], f32>
        %34 = optgen.lerp %second_momentum_buffer, %26#1, %14 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
        %35 = optgen.max %34, %0 : !optgen.tensor<[1, 1], f32>, f64
        %36 = optgen.rsqrt %35 : !optgen.tensor<[1, 1], f32>
        %37 = optgen.pow %36, %1 : !optgen.tensor<[1, 1], f32>, i64
        %38 = optgen.mul %26#1, %5 : !optgen.tensor<[1, 1], f32>, i64
        %39 = optgen.mul %38, %37 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %40 = optgen.reduce sum %39 {accumulator = f64} : !optgen.tensor<[1, 1], f32>
        optgen.yield %33, %34, %36, %40 : f32, !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>, f32
      } {optgen.buffers = [unit, #optgen.buffer<state, 1>, #optgen.buffer<workspace, 0>, unit]}
      %28 = optgen.mul %27#0, %5 : f32, i64
      %29 = optgen.sqrt %28 : f32
      %30 = optgen.sqrt %27#3 : f32
      %31 = optgen.max %30, %0 : f32, f64
      %32 = optgen.kernel -> (!optgen.tensor<[1, 1], f32>) {
        %33 = optgen.mul %27#2, %29 : !optgen.tensor<[1, 1], f32>, f32
        %34 = optgen.div %33, %31 : !optgen.tensor<[1, 1], f32>, f32
        %35 = optgen.mul %26#0, %34 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %36 = optgen.mul %35, %p : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %37 = optgen.cmp ge, %36, %4 : !optgen.tensor<[1, 1], f32>, i64
        %38 = optgen.mul %15, %p : f32, !optgen.tensor<[1, 1], f32>
        %39 = optgen.mul %38, %37 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], i1>
        %40 = optgen.mul %12, %35 : f32, !optgen.tensor<[1, 1], f32>
        %41 = optgen.add %40, %39 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        %42 = optgen.sub %p, %41 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>
        optgen.yield %42 : !optgen.tensor<[1, 1], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %32 state(%16#0, %27#1 : !optgen.tensor<[1, 1], f32>, !optgen.tensor<[1, 1], f32>) : !optgen.tensor<[1, 1], f32>
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
    optgen.param "lm_head.weight" [64, 16] -> @lm_head
    optgen.param "resid_lambdas" [3] -> @scalars
    optgen.param "transformer.h.0.attn.c_q.weight" [16, 16] -> @matrices
    optgen.param "transformer.h.0.mlp.c_fc.weight" [64, 16] -> @matrices
    optgen.param "transformer.h.0.mlp.c_proj.weight" [16, 64] -> @matrices
    optgen.param "transformer.h.1.mlp.c_fc.weight" [64, 16] -> @matrices
    optgen.param "transformer.h.1.one.weight" [1, 1] -> @matrices
    optgen.param "transformer.wte.weight" [64, 16] -> @embeddings
    optgen.bucket @lm_head [64, 16] ["lm_head.weight"] rule @adamw_64x16
    optgen.bucket @embeddings [64, 16] ["transformer.wte.weight"] rule @adamw_64x16
    optgen.bucket @scalars [3] ["resid_lambdas"] rule @adamw_3
    optgen.bucket @matrices [16, 16] ["transformer.h.0.attn.c_q.weight"] rule @muon_16x16
    optgen.bucket @matrices [64, 16] ["transformer.h.0.mlp.c_fc.weight", "transformer.h.1.mlp.c_fc.weight"] rule @muon_64x16
    optgen.bucket @matrices [16, 64] ["transformer.h.0.mlp.c_proj.weight"] rule @muon_16x64
    optgen.bucket @matrices [1, 1] ["transformer.h.1.one.weight"] rule @muon_1x1
    optgen.distribute zero2 {small_numel = 1024 : i64}
    optgen.schedule world_size 2 {
      %small = optgen.unit small ["resid_lambdas", "transformer.h.0.attn.c_q.weight", "transformer.h.1.one.weight"] offsets [0, 3, 259] rules [@adamw_3, @muon_16x16, @muon_1x1] counts [260]
      %flat = optgen.unit flat ["lm_head.weight", "transformer.wte.weight"] offsets [0, 1024] rules [@adamw_64x16, @adamw_64x16] counts [1024, 1024]
      %owned = optgen.unit owned ["transformer.h.0.mlp.c_fc.weight", "transformer.h.1.mlp.c_fc.weight"] offsets [0, 1024] rules [@muon_64x16, @muon_64x16] owners [0, 1] counts [1024, 1024]
      %owned_0 = optgen.unit owned ["transformer.h.0.mlp.c_proj.weight"] offsets [0] rules [@muon_16x64] owners [0] counts [1024, 0]
      %0 = optgen.all_reduce %small payload f32
      %1 = optgen.reduce_scatter %flat payload f32
      %2 = optgen.reduce_scatter %owned payload f32
      %3 = optgen.reduce_scatter %owned_0 payload f32
      optgen.wait %0
      optgen.compute %small
      optgen.wait %1
      optgen.compute %flat
      %4 = optgen.all_gather %flat payload f32
      optgen.wait %2
      optgen.compute %owned
      %5 = optgen.all_gather %owned payload f32
      optgen.wait %3
      optgen.compute %owned_0
      %6 = optgen.all_gather %owned_0 payload f32
      optgen.wait %4
      optgen.wait %5
      optgen.wait %6
    }
  }
}

