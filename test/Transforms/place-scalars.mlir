// RUN: %optgen-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-place-scalars)))' | FileCheck %s

// A table loop's count is the host's, and so is the integer hyperparameter
// it is read from; lr, which only a kernel reads, stays on the device.
// CHECK-LABEL: optgen.rule @counted
// CHECK:       %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
// CHECK:       %steps = optgen.hyper "steps" default(2 : i64) {offset = 1 : i64, optgen.on_host} : i64
// CHECK:       optgen.for_table %steps
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @counted inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, n], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      %steps = optgen.hyper "steps" default(2 : i64) {offset = 1 : i64} : i64
      %0 = optgen.for_table %steps over dense<[[5.000000e-01, 2.000000e+00], [2.500000e-01, 4.000000e+00]]> : tensor<2x2xf64> iter %g : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32> attributes {optgen.buffers = [#optgen.buffer<workspace, 0>]} {
      ^bb0(%arg0: f32, %arg1: f32, %arg2: !optgen.tensor<[m, n], f32>):
        %2 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
          %3 = optgen.mul %arg0, %arg2 : f32, !optgen.tensor<[m, n], f32>
          %4 = optgen.add %3, %arg1 : !optgen.tensor<[m, n], f32>, f32
          optgen.yield %4 : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
        optgen.yield %2 : !optgen.tensor<[m, n], f32>
      }
      %1 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %2 = optgen.mul %lr, %0 : f32, !optgen.tensor<[m, n], f32>
        %3 = optgen.sub %p, %2 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %3 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %1 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// A branch on the parameter's shape: the comparison, the sizes and their
// axes are the host's; the constants the kernels scale by are not.
// CHECK-LABEL: optgen.rule @branched
// CHECK:       %[[THREE:.*]] = optgen.constant 3 : i64{{$}}
// CHECK:       %[[TWO:.*]] = optgen.constant 2 : i64{{$}}
// CHECK:       optgen.constant -1 : i64 {optgen.on_host}
// CHECK:       optgen.dim %p, %{{.*}} {optgen.on_host}
// CHECK:       optgen.constant -2 : i64 {optgen.on_host}
// CHECK:       optgen.dim %p, %{{.*}} {optgen.on_host}
// CHECK:       optgen.cmp gt, %{{.*}}, %{{.*}} {optgen.on_host}
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
      %6 = optgen.cmp gt, %5, %3 : i64, i64
      %7 = optgen.if %6 -> (!optgen.tensor<[m, n], f32>) {
        %9 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
          %10 = optgen.mul %g, %1 : !optgen.tensor<[m, n], f32>, i64
          optgen.yield %10 : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
        optgen.yield %9 : !optgen.tensor<[m, n], f32>
      } else {
        %9 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
          %10 = optgen.mul %g, %0 : !optgen.tensor<[m, n], f32>, i64
          optgen.yield %10 : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
        optgen.yield %9 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
      %8 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %10 = optgen.sub %p, %7 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %10 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %8 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// The step count lives on the device: a loop cannot run to it.
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @stepped inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, n], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      // expected-error @below {{a value of the device that the host needs (a loop count, a branch condition, the scale of a matrix product or an axis): the cuda target's host decides those before its kernels run}}
      %0 = optgen.step : i64
      %1 = optgen.for_table %0 over dense<[[5.000000e-01, 2.000000e+00]]> : tensor<1x2xf64> iter %g : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32> attributes {optgen.buffers = [#optgen.buffer<workspace, 0>]} {
      ^bb0(%arg0: f32, %arg1: f32, %arg2: !optgen.tensor<[m, n], f32>):
        %3 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
          %4 = optgen.mul %arg0, %arg2 : f32, !optgen.tensor<[m, n], f32>
          optgen.yield %4 : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
        optgen.yield %3 : !optgen.tensor<[m, n], f32>
      }
      optgen.update %1 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// A float hyperparameter the host would read (a matrix product's scale): a
// captured graph would keep the value it had.
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @floated inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, m], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      // expected-error @below {{a float hyperparameter that the host needs}}
      %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
      %0 = optgen.gemm %g, %g transposed scaled %lr : f32 {optgen.buffers = [#optgen.buffer<workspace, 0>]} : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, m], f32>
      optgen.update %p : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// On a host every scalar is the step's own: nothing is marked.
// CHECK-LABEL: optgen.rule @hosted
// CHECK-NOT:   optgen.on_host
module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536, supports = "shard_groups | skip_nonfinite">} {
  optgen.optimizer @o {
    optgen.rule @hosted inputs ["p", "g"] attributes {optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0 = optgen.constant -1 : i64
      %1 = optgen.dim %p, %0 : !optgen.tensor<[m, n], f32>
      %2 = optgen.constant 4 : i64
      %3 = optgen.cmp gt, %1, %2 : i64, i64
      %4 = optgen.if %3 -> (!optgen.tensor<[m, n], f32>) {
        optgen.yield %g : !optgen.tensor<[m, n], f32>
      } else {
        optgen.yield %p : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %4 : !optgen.tensor<[m, n], f32>
    }
  }
}
