// RUN: %optgen-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-assign-device-scalars)))' | FileCheck %s

// On a device target a kernel's scalar result gets a one-element slot after
// the tensor slots, its full reduction a slot of the target's
// reduction_blocks (here 64) partial sums of its accumulator type; a
// reduction along an axis keeps the buffer it had, and a tensor result too.
// CHECK-LABEL: optgen.rule @norms
// CHECK-SAME:  optgen.workspace = [#optgen.slot<[m, 1], f32>, #optgen.slot<[], f32>, #optgen.slot<[64], f64>, #optgen.slot<[], f32>, #optgen.slot<[64], f32>]
// CHECK:       optgen.reduce norm %{{.*}} {accumulator = f64, optgen.buffers = [#optgen.buffer<workspace, 2>]}
// CHECK:       optgen.reduce sum %{{.*}} along %{{.*}} {accumulator = f32, optgen.buffers = [#optgen.buffer<workspace, 0>]}
// CHECK:       optgen.buffers = [#optgen.buffer<workspace, 1>, #optgen.buffer<state, 0>, #optgen.buffer<workspace, 0>]
// CHECK:       optgen.reduce max %{{.*}} {accumulator = f32, optgen.buffers = [#optgen.buffer<workspace, 4>]}
// CHECK:       optgen.buffers = [#optgen.buffer<workspace, 3>]
module attributes {optgen.target = #optgen.target<name = "device64", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 64, arch = 90>} {
optgen.optimizer @o {
  optgen.rule @norms inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, 1], f32>]} {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %c1 = optgen.constant 1 : i64
    %m = optgen.state "m" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32>
    %k:3 = optgen.kernel -> (f32, !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>) {
      %n = optgen.reduce norm %g {accumulator = f64} : !optgen.tensor<[m, n], f32>
      %r = optgen.reduce sum %g along %c1 {accumulator = f32, optgen.buffers = [#optgen.buffer<workspace, 0>]} : !optgen.tensor<[m, n], f32>
      %s = optgen.mul %g, %n : !optgen.tensor<[m, n], f32>, f32
      optgen.yield %n, %s, %r : f32, !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
    } {optgen.buffers = [unit, #optgen.buffer<state, 0>, #optgen.buffer<workspace, 0>]}
    %k2 = optgen.kernel -> (f32) {
      %x = optgen.reduce max %g {accumulator = f32} : !optgen.tensor<[m, n], f32>
      optgen.yield %x : f32
    } {optgen.buffers = [unit]}
    optgen.update %p state(%k#1 : !optgen.tensor<[m, n], f32>) : !optgen.tensor<[m, n], f32>
  }
}
}

// -----

// On a host a kernel's scalars are the step's own variables: nothing
// changes.
// CHECK-LABEL: optgen.rule @host
// CHECK-SAME:  optgen.workspace = []
// CHECK:       optgen.reduce max %{{.*}} {accumulator = f64}
// CHECK:       } {optgen.buffers = [unit]}
module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536, supports = "shard_groups | skip_nonfinite">} {
optgen.optimizer @o {
  optgen.rule @host inputs ["p", "g"] attributes {optgen.workspace = []} {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %k = optgen.kernel -> (f32) {
      %x = optgen.reduce max %g {accumulator = f64} : !optgen.tensor<[m, n], f32>
      optgen.yield %x : f32
    } {optgen.buffers = [unit]}
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}
}

// -----

// Without a target description the pass cannot know where scalars live.
optgen.optimizer @o {
  // expected-error @below {{optgen-assign-device-scalars needs the module's target description ('optgen.target', set by optgen-set-target)}}
  optgen.rule @untargeted inputs ["p", "g"] attributes {optgen.workspace = []} {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}
