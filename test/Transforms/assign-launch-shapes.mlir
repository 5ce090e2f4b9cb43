// RUN: %optgen-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-assign-launch-shapes)))' | FileCheck %s

// Each launch's grid from the target description and its kind: a space
// launch with a full reduction runs at most the 64 blocks its partial-sums
// slot holds (the description's 1024 caps the others), rows a block per
// row, a finish one block per member, all of 128 threads.
// CHECK-LABEL: optgen.rule @shaped
// CHECK:       optgen.launch rows
// CHECK:       } {optgen.buffers = [#optgen.buffer<workspace, 1>], shape = #optgen.launch_shape<threads = 128, grid = rows>}
// CHECK:       optgen.launch space
// CHECK:       } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 2>], shape = #optgen.launch_shape<threads = 128, grid = elements, max_blocks = 64>}
// CHECK:       optgen.launch finish
// CHECK:       } {optgen.buffers = [#optgen.buffer<workspace, 3>], shape = #optgen.launch_shape<threads = 128, grid = members>}
// CHECK:       optgen.launch cols
// CHECK:       } {optgen.buffers = [#optgen.buffer<workspace, 4>], shape = #optgen.launch_shape<threads = 128, grid = column_blocks>}
// CHECK:       optgen.launch space
// CHECK:       } {optgen.buffers = [#optgen.buffer<param, 0>], shape = #optgen.launch_shape<threads = 128, grid = elements, max_blocks = 1024>}
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 128, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 64, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @shaped inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, n], f32>, #optgen.slot<[m, 1], f32>, #optgen.slot<[64], f32>, #optgen.slot<[], f32>, #optgen.slot<[1, n], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %c0 = optgen.constant 0 : i64 {optgen.on_host}
      %c1 = optgen.constant 1 : i64 {optgen.on_host}
      %w = optgen.hyper "w" {offset = 0 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32>
      %0:3 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>, f32) {
        %1 = optgen.launch rows -> (!optgen.tensor<[m, 1], f32>) {
          %4 = optgen.lerp %m, %g, %w : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
          %5 = optgen.reduce norm %4 along %c1 {accumulator = f32} : !optgen.tensor<[m, n], f32>
          optgen.yield %5 : !optgen.tensor<[m, 1], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
        %2:2 = optgen.launch space -> (!optgen.tensor<[m, n], f32>, f32) {
          %4 = optgen.lerp %m, %g, %w : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
          %5 = optgen.reduce norm %4 {accumulator = f32, optgen.buffers = [#optgen.buffer<workspace, 2>]} : !optgen.tensor<[m, n], f32>
          optgen.yield %4, %5 : !optgen.tensor<[m, n], f32>, f32
        } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 2>]}
        %3 = optgen.launch finish -> (f32) {
          optgen.yield %2#1 : f32
        } {optgen.buffers = [#optgen.buffer<workspace, 3>]}
        optgen.yield %2#0, %1, %3 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>, f32
      } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 1>, #optgen.buffer<workspace, 3>]}
      %6 = optgen.kernel -> (!optgen.tensor<[1, n], f32>) {
        %7 = optgen.launch cols -> (!optgen.tensor<[1, n], f32>) {
          %8 = optgen.reduce max %g along %c0 {accumulator = f32} : !optgen.tensor<[m, n], f32>
          optgen.yield %8 : !optgen.tensor<[1, n], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 4>]}
        optgen.yield %7 : !optgen.tensor<[1, n], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 4>]}
      %9 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %10 = optgen.launch space -> (!optgen.tensor<[m, n], f32>) {
          %11 = optgen.div %0#0, %0#1 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
          %12 = optgen.div %11, %0#2 : !optgen.tensor<[m, n], f32>, f32
          %13 = optgen.div %12, %6 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[1, n], f32>
          %14 = optgen.sub %p, %13 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
          optgen.yield %14 : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<param, 0>]}
        optgen.yield %10 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %9 state(%0#0 : !optgen.tensor<[m, n], f32>) : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// An elementwise rule's kernels move the description's vector width of
// elements per thread; a host's rules have no launches to shape.
// CHECK-LABEL: optgen.rule @elementwise
// CHECK:       shape = #optgen.launch_shape<threads = 256, grid = elements, max_blocks = 512, per_thread = 4>
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 512, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @elementwise inputs ["p", "g"] attributes {optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.kernel -> (!optgen.tensor<*, f32>) {
        %1 = optgen.launch space -> (!optgen.tensor<*, f32>) {
          %2 = optgen.sub %p, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
          optgen.yield %2 : !optgen.tensor<*, f32>
        } {optgen.buffers = [#optgen.buffer<param, 0>]}
        optgen.yield %1 : !optgen.tensor<*, f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %0 : !optgen.tensor<*, f32>
    }
  }
}

// -----

module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 512, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @unbuffered inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
      %0 = optgen.kernel -> (!optgen.tensor<*, f32>) {
        // expected-error @+1 {{has no buffers: run --optgen-assign-buffers and --optgen-split-launches before --optgen-assign-launch-shapes}}
        %1 = optgen.launch space -> (!optgen.tensor<*, f32>) {
          %2 = optgen.sub %p, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
          optgen.yield %2 : !optgen.tensor<*, f32>
        }
        optgen.yield %1 : !optgen.tensor<*, f32>
      }
      optgen.update %0 : !optgen.tensor<*, f32>
    }
  }
}
