// RUN: not %optgen-translate --optgen-to-cuda %s 2>&1 | FileCheck %s

// The printer decides nothing: which scalars the host computes is
// optgen-place-scalars' (the launches stage), and IR without it is an error
// that names the pass, at the op that lacks its mark. (The kernels are split
// into their launches, optgen-split-launches': needs-split-launches.mlir.)

module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @branched inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, n], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0 = optgen.constant 3 : i64
      %1 = optgen.constant 2 : i64
      %2 = optgen.constant -1 : i64
      %3 = optgen.dim %p, %2 : !optgen.tensor<[m, n], f32>
      %4 = optgen.constant -2 : i64
      %5 = optgen.dim %p, %4 : !optgen.tensor<[m, n], f32>
      // CHECK: needs-launches.mlir:[[@LINE+1]]:12: error: the CUDA printer needs the host's scalars placed; run --optgen-place-scalars first
      %6 = optgen.cmp gt, %5, %3 : i64, i64
      %7 = optgen.if %6 -> (!optgen.tensor<[m, n], f32>) {
        %9 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
          %l = optgen.launch space -> (!optgen.tensor<[m, n], f32>) {
            %10 = optgen.mul %g, %1 : !optgen.tensor<[m, n], f32>, i64
            optgen.yield %10 : !optgen.tensor<[m, n], f32>
          } {optgen.buffers = [#optgen.buffer<workspace, 0>], shape = #optgen.launch_shape<threads = 256, grid = elements, max_blocks = 1024>}
          optgen.yield %l : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
        optgen.yield %9 : !optgen.tensor<[m, n], f32>
      } else {
        %9 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
          %l = optgen.launch space -> (!optgen.tensor<[m, n], f32>) {
            %10 = optgen.mul %g, %0 : !optgen.tensor<[m, n], f32>, i64
            optgen.yield %10 : !optgen.tensor<[m, n], f32>
          } {optgen.buffers = [#optgen.buffer<workspace, 0>], shape = #optgen.launch_shape<threads = 256, grid = elements, max_blocks = 1024>}
          optgen.yield %l : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
        optgen.yield %9 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
      %8 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %l = optgen.launch space -> (!optgen.tensor<[m, n], f32>) {
          %10 = optgen.sub %p, %7 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
          optgen.yield %10 : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<param, 0>], shape = #optgen.launch_shape<threads = 256, grid = elements, max_blocks = 1024>}
        optgen.yield %l : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %8 : !optgen.tensor<[m, n], f32>
    }
  }
}
