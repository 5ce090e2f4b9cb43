// RUN: not %optgen-translate --optgen-to-cuda %s 2>&1 | FileCheck %s

// The printer prints the launches optgen-split-launches made of each kernel
// (the launches stage); a kernel that is still one loop is an error that
// names the pass, at the kernel.

module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @sgd inputs ["p", "g"] attributes {optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      // CHECK: needs-split-launches.mlir:[[@LINE+1]]:12: error: the CUDA printer needs the kernel's launches; run --optgen-split-launches first
      %0 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %1 = optgen.mul %lr, %g : f32, !optgen.tensor<[m, n], f32>
        %2 = optgen.sub %p, %1 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %2 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %0 : !optgen.tensor<[m, n], f32>
    }
  }
}
