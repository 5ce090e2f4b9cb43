module {
  optgen.optimizer @muon_newton_schulz {
    optgen.rule @muon inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0 = optgen.constant -1 : i64
      %1 = optgen.dim %p, %0 : !optgen.tensor<[m, n], f32>
      %2 = optgen.constant -2 : i64
      %3 = optgen.dim %p, %2 : !optgen.tensor<[m, n], f32>
      %4 = optgen.div %3, %1 : i64, i64
      %5 = optgen.constant 9.9999999999999995E-8 : f64
      %6 = optgen.constant 1 : i64
      %7 = optgen.max %6, %4 : i64, f32
      %8 = optgen.sqrt %7 : f32
      %lr = optgen.hyper "lr" default(2.000000e-02 : f32) : f32
      %9 = optgen.mul %lr, %8 : f32, f32
      %momentum = optgen.hyper "momentum" default(0.949999988 : f32) : f32
      %10 = optgen.sub %6, %momentum : i64, f32
      %ns_steps = optgen.hyper "ns_steps" default(5 : i64) : i64
      %buf = optgen.state "buf" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32>
      %11:3 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], bf16>, bf16) {
        %16 = optgen.lerp %buf, %g, %10 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
        %17 = optgen.lerp %g, %16, %momentum : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
        %18 = optgen.cast %17 : !optgen.tensor<[m, n], f32> to !optgen.tensor<[m, n], bf16>
        %19 = optgen.reduce norm %18 : !optgen.tensor<[m, n], bf16>
        optgen.yield %16, %18, %19 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], bf16>, bf16
      }
      %12 = optgen.add %11#2, %5 : bf16, f64
      %13 = optgen.kernel -> (!optgen.tensor<[m, n], bf16>) {
        %16 = optgen.div %11#1, %12 : !optgen.tensor<[m, n], bf16>, bf16
        optgen.yield %16 : !optgen.tensor<[m, n], bf16>
      }
      %14 = optgen.for_table %ns_steps over dense<[[3.444500e+00, -4.775000e+00, 2.031500e+00], [3.444500e+00, -4.775000e+00, 2.031500e+00], [3.444500e+00, -4.775000e+00, 2.031500e+00], [3.444500e+00, -4.775000e+00, 2.031500e+00], [3.444500e+00, -4.775000e+00, 2.031500e+00]]> : tensor<5x3xf64> iter %13 : !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, n], bf16> {
      ^bb0(%arg0: f32, %arg1: f32, %arg2: f32, %arg3: !optgen.tensor<[m, n], bf16>):
        %16 = optgen.dim %arg3, %2 : !optgen.tensor<[m, n], bf16>
        %17 = optgen.dim %arg3, %0 : !optgen.tensor<[m, n], bf16>
        %18 = optgen.cmp gt, %16, %17 : i64, i64
        %19 = optgen.if %18 -> (!optgen.tensor<[m, n], bf16>) {
          %20 = optgen.gemm %arg3 transposed, %arg3 symmetric : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[n, n], bf16>
          %21 = optgen.gemm %20, %20 transposed scaled %arg2 : f32 plus %20 : !optgen.tensor<[n, n], bf16> scaled %arg1 : f32 symmetric : !optgen.tensor<[n, n], bf16>, !optgen.tensor<[n, n], bf16> -> !optgen.tensor<[n, n], bf16>
          %22 = optgen.gemm %arg3, %21 plus %arg3 : !optgen.tensor<[m, n], bf16> scaled %arg0 : f32 : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[n, n], bf16> -> !optgen.tensor<[m, n], bf16>
          optgen.yield %22 : !optgen.tensor<[m, n], bf16>
        } else {
          %20 = optgen.gemm %arg3, %arg3 transposed symmetric : !optgen.tensor<[m, n], bf16>, !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, m], bf16>
          %21 = optgen.gemm %20, %20 transposed scaled %arg2 : f32 plus %20 : !optgen.tensor<[m, m], bf16> scaled %arg1 : f32 symmetric : !optgen.tensor<[m, m], bf16>, !optgen.tensor<[m, m], bf16> -> !optgen.tensor<[m, m], bf16>
          %22 = optgen.gemm %21, %arg3 plus %arg3 : !optgen.tensor<[m, n], bf16> scaled %arg0 : f32 : !optgen.tensor<[m, m], bf16>, !optgen.tensor<[m, n], bf16> -> !optgen.tensor<[m, n], bf16>
          optgen.yield %22 : !optgen.tensor<[m, n], bf16>
        }
        optgen.yield %19 : !optgen.tensor<[m, n], bf16>
      }
      %15 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %16 = optgen.mul %9, %14 : f32, !optgen.tensor<[m, n], bf16>
        %17 = optgen.sub %p, %16 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], bf16>
        optgen.yield %17 : !optgen.tensor<[m, n], f32>
      }
      optgen.update %15 state(%11#0 : !optgen.tensor<[m, n], f32>) : !optgen.tensor<[m, n], f32>
    }
    optgen.group @matrices = @muon match ["*"] {} where {
    ^bb0(%param: !optgen.tensor<*, f32>):
      %0 = optgen.ndim %param : !optgen.tensor<*, f32>
      %1 = optgen.constant 2 : i64
      %2 = optgen.cmp eq, %0, %1 : i64, i64
      optgen.yield %2 : i1
    }
    optgen.distribute none
  }
}

