// RUN: %optgen-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-split-launches)))' | FileCheck %s

// nanochat's Muon pattern: the momentum is updated in place, and the same
// kernel reduces the updated momentum per row and in full. The row launch
// recomputes its slice from the momentum as it was, so it runs before the
// space launch that overwrites it; the full norm leaves the space launch as
// partial sums (slot 2) and a finish launch combines them into slot 3.
// CHECK-LABEL: optgen.rule @muon
// CHECK:       %[[K:.*]]:3 = optgen.kernel
// CHECK-NEXT:    %[[ROWS:.*]] = optgen.launch rows -> (!optgen.tensor<[m, 1], f32>) {
// CHECK-NEXT:      %[[L:.*]] = optgen.lerp %m, %g, %w
// CHECK-NEXT:      %[[R:.*]] = optgen.reduce norm %[[L]] along %{{[0-9]+}}
// CHECK-NEXT:      optgen.yield %[[R]]
// CHECK-NEXT:    } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
// CHECK-NEXT:    %[[SPACE:.*]]:2 = optgen.launch space -> (!optgen.tensor<[m, n], f32>, f32) {
// CHECK-NEXT:      %[[L2:.*]] = optgen.lerp %m, %g, %w
// CHECK-NEXT:      %[[F:.*]] = optgen.reduce norm %[[L2]] {
// CHECK-NEXT:      optgen.yield %[[L2]], %[[F]]
// CHECK-NEXT:    } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 2>]}
// CHECK-NEXT:    %[[FIN:.*]] = optgen.launch finish -> (f32) {
// CHECK-NEXT:      optgen.yield %[[SPACE]]#1 : f32
// CHECK-NEXT:    } {optgen.buffers = [#optgen.buffer<workspace, 3>]}
// CHECK-NEXT:    optgen.yield %[[SPACE]]#0, %[[ROWS]], %[[FIN]]
// CHECK-NEXT:  } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 1>, #optgen.buffer<workspace, 3>]}
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @muon inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, n], f32>, #optgen.slot<[m, 1], f32>, #optgen.slot<[128], f32>, #optgen.slot<[], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %c1 = optgen.constant 1 : i64 {optgen.on_host}
      %w = optgen.hyper "w" {offset = 0 : i64} : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32>
      %0:3 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>, f32) {
        %1 = optgen.lerp %m, %g, %w : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
        %2 = optgen.reduce norm %1 along %c1 {accumulator = f32} : !optgen.tensor<[m, n], f32>
        %3 = optgen.reduce norm %1 {accumulator = f32, optgen.buffers = [#optgen.buffer<workspace, 2>]} : !optgen.tensor<[m, n], f32>
        optgen.yield %1, %2, %3 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>, f32
      } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 1>, #optgen.buffer<workspace, 3>]}
      %4 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %5 = optgen.div %0#0, %0#1 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
        %6 = optgen.div %5, %0#2 : !optgen.tensor<[m, n], f32>, f32
        %7 = optgen.sub %p, %6 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %7 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %4 state(%0#0 : !optgen.tensor<[m, n], f32>) : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// Axes normalised: along the first of two axes a reduction leaves a value
// per column (a `cols` launch), along the last one per row; each launch
// holds only the ops its reductions need.
// CHECK-LABEL: optgen.rule @columns
// CHECK:       optgen.kernel
// CHECK-NEXT:    optgen.launch rows -> (!optgen.tensor<[m, 1], f32>) {
// CHECK-NEXT:      optgen.mul %g, %g
// CHECK-NEXT:      optgen.reduce sum %{{.*}} along %{{[0-9]+}}
// CHECK-NEXT:      optgen.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    optgen.launch cols -> (!optgen.tensor<[1, n], f32>) {
// CHECK-NEXT:      optgen.abs %g
// CHECK-NEXT:      optgen.reduce max %{{.*}} along %{{[0-9]+}}
// CHECK-NEXT:      optgen.yield
// CHECK-NEXT:    }
// CHECK-NOT:     optgen.launch space
// CHECK:         optgen.yield
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @columns inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, 1], f32>, #optgen.slot<[1, n], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %c0 = optgen.constant 0 : i64 {optgen.on_host}
      %c-1 = optgen.constant -1 : i64 {optgen.on_host}
      %0:2 = optgen.kernel -> (!optgen.tensor<[1, n], f32>, !optgen.tensor<[m, 1], f32>) {
        %1 = optgen.abs %g : !optgen.tensor<[m, n], f32>
        %2 = optgen.mul %g, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        %3 = optgen.reduce max %1 along %c0 {accumulator = f32} : !optgen.tensor<[m, n], f32>
        %4 = optgen.reduce sum %2 along %c-1 {accumulator = f32} : !optgen.tensor<[m, n], f32>
        optgen.yield %3, %4 : !optgen.tensor<[1, n], f32>, !optgen.tensor<[m, 1], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>, #optgen.buffer<workspace, 0>]}
      %5 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %6 = optgen.div %g, %0#0 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[1, n], f32>
        %7 = optgen.div %6, %0#1 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
        %8 = optgen.sub %p, %7 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %8 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %5 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// Reductions along axes only the host knows: one `lines` launch per axis,
// which the host runs as rows or columns.
// CHECK-LABEL: optgen.rule @host_axes
// CHECK:       optgen.kernel
// CHECK-NEXT:    optgen.launch lines along %[[A:[0-9]+]] -> (!optgen.tensor<[?, ?], f32>) {
// CHECK:           optgen.reduce sum %{{.*}} along %[[A]]
// CHECK:         optgen.launch lines along %[[B:[0-9]+]] -> (!optgen.tensor<[?, ?], f32>) {
// CHECK:           optgen.reduce sum %{{.*}} along %[[B]]
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @host_axes inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[?, ?], f32>, #optgen.slot<[?, ?], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %c0 = optgen.constant 0 : i64 {optgen.on_host}
      %c1 = optgen.constant 1 : i64 {optgen.on_host}
      %c-1 = optgen.constant -1 : i64 {optgen.on_host}
      %c-2 = optgen.constant -2 : i64 {optgen.on_host}
      %rows = optgen.dim %p, %c-2 {optgen.on_host} : !optgen.tensor<[m, n], f32>
      %cols = optgen.dim %p, %c-1 {optgen.on_host} : !optgen.tensor<[m, n], f32>
      %tall = optgen.cmp ge, %rows, %cols {optgen.on_host} : i64, i64
      %a = optgen.select %tall, %c1, %c0 {optgen.on_host} : i1, i64, i64
      %b = optgen.select %tall, %c0, %c1 {optgen.on_host} : i1, i64, i64
      %0:2 = optgen.kernel -> (!optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>) {
        %1 = optgen.reduce sum %g along %a {accumulator = f32} : !optgen.tensor<[m, n], f32>
        %2 = optgen.reduce sum %g along %b {accumulator = f32} : !optgen.tensor<[m, n], f32>
        optgen.yield %1, %2 : !optgen.tensor<[?, ?], f32>, !optgen.tensor<[?, ?], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>, #optgen.buffer<workspace, 1>]}
      %3 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %4 = optgen.sub %p, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %4 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %3 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// The update takes its parameter from the workspace: a kernel of one store
// launch copies it home first, and the update takes the copy. A kernel
// inside a loop is split like any other.
// CHECK-LABEL: optgen.rule @stored
// CHECK:       optgen.for_table
// CHECK:         optgen.kernel
// CHECK-NEXT:      optgen.launch space
// CHECK:       %[[STORED:.*]] = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
// CHECK-NEXT:    %[[COPY:.*]] = optgen.launch store -> (!optgen.tensor<[m, n], f32>) {
// CHECK-NEXT:      optgen.yield %{{.*}} : !optgen.tensor<[m, n], f32>
// CHECK-NEXT:    } {optgen.buffers = [#optgen.buffer<param, 0>]}
// CHECK-NEXT:    optgen.yield %[[COPY]]
// CHECK-NEXT:  } {optgen.buffers = [#optgen.buffer<param, 0>]}
// CHECK-NEXT:  optgen.update %[[STORED]] :
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @stored inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, n], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %steps = optgen.hyper "steps" default(2 : i64) {offset = 0 : i64, optgen.on_host} : i64
      %0 = optgen.for_table %steps over dense<[[5.000000e-01], [2.500000e-01]]> : tensor<2x1xf64> iter %g : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32> attributes {optgen.buffers = [#optgen.buffer<workspace, 0>]} {
      ^bb0(%arg0: f32, %arg1: !optgen.tensor<[m, n], f32>):
        %1 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
          %2 = optgen.mul %arg0, %arg1 : f32, !optgen.tensor<[m, n], f32>
          optgen.yield %2 : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
        optgen.yield %1 : !optgen.tensor<[m, n], f32>
      }
      optgen.update %0 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// A host runs a kernel as the one loop it is: nothing changes.
// CHECK-LABEL: optgen.rule @host
// CHECK:       optgen.kernel
// CHECK-NEXT:    optgen.sub %p, %g
// CHECK-NOT:   optgen.launch
module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, storage = wide, max_loop_versions = 8, parallel_elements = 65536>} {
  optgen.optimizer @o {
    optgen.rule @host inputs ["p", "g"] attributes {optgen.workspace = []} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %1 = optgen.sub %p, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %1 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>]}
      optgen.update %0 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// A kernel needs its buffers first.
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
  optgen.optimizer @o {
    optgen.rule @unbuffered inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      // expected-error @+1 {{has no buffers: run --optgen-assign-buffers before --optgen-split-launches}}
      %0 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %1 = optgen.sub %p, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
        optgen.yield %1 : !optgen.tensor<[m, n], f32>
      }
      optgen.update %0 : !optgen.tensor<[m, n], f32>
    }
  }
}
