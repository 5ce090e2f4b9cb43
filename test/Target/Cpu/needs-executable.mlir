// RUN: not %optgen-translate --optgen-to-cpu %s -split-input-file 2>&1 | FileCheck %s

// The printer decides nothing: IR that the executable stage has not lowered
// is an error that names the pass to run, at the op that lacks it (lines
// counted from the start of each split).

// CHECK: offset :8:1: error: the CPU printer needs the module's target description ('optgen.target', set by optgen-set-target)
optgen.optimizer @no_target {
  optgen.rule @sgd inputs ["p", "g"] attributes {optgen.workspace = []} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" default(1.000000e-01 : f32) {offset = 0 : i64} : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.group @all = @sgd match ["*"] {}
  optgen.distribute none
}

// -----

// Code for a device target is the CUDA printer's.
// CHECK: offset :6:1: error: the CPU printer prints code for a host target; this module is lowered for 'cuda', a device target
module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>} {
optgen.optimizer @device {
  optgen.rule @sgd inputs ["p", "g"] attributes {optgen.workspace = []} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" default(1.000000e-01 : f32) {offset = 0 : i64} : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.group @all = @sgd match ["*"] {}
  optgen.distribute none
}
}

// -----

// CHECK: offset :6:3: error: the CPU emitter needs the rule's buffers; run --optgen-assign-buffers first
module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536, supports = "shard_groups | skip_nonfinite">} {
optgen.optimizer @no_buffers {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" default(1.000000e-01 : f32) {offset = 0 : i64} : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.group @all = @sgd match ["*"] {}
  optgen.distribute none
}
}

// -----

// CHECK: offset :8:11: error: generated code reads hyperparameters at their offsets; run --optgen-assign-hyper-offsets first
module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536, supports = "shard_groups | skip_nonfinite">} {
optgen.optimizer @no_offsets {
  optgen.rule @sgd inputs ["p", "g"] attributes {optgen.workspace = []} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" default(1.000000e-01 : f32) : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.group @all = @sgd match ["*"] {}
  optgen.distribute none
}
}

// -----

// A device target's 16-bit slots (optgen-assign-buffers for narrow
// storage) on a host module: the CPU's kernels and BLAS read f32.
// CHECK: offset :8:3: error: the CPU emitter stores tensors as f32, not 'bf16'; run --optgen-assign-buffers for a host target (wide storage)
module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536, supports = "shard_groups | skip_nonfinite">} {
optgen.optimizer @narrow {
  optgen.rule @sgd inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<*, bf16>]} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" default(1.000000e-01 : f32) {offset = 0 : i64} : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.group @all = @sgd match ["*"] {}
  optgen.distribute none
}
}

// -----

// A kernel without its buffers (here a misspelt attribute) in a rule that
// has a workspace: the printer would read the missing buffer.
// CHECK: offset :11:10: error: the CPU emitter needs the buffer of every tensor; run --optgen-assign-buffers first
module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536, supports = "shard_groups | skip_nonfinite">} {
optgen.optimizer @no_kernel_buffers {
  optgen.rule @sgd inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<*, f32>]} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" default(1.000000e-01 : f32) {offset = 0 : i64} : f32
    %0 = optgen.kernel -> (!optgen.tensor<*, f32>) {
      %1 = optgen.mul %lr, %g : f32, !optgen.tensor<*, f32>
      optgen.yield %1 : !optgen.tensor<*, f32>
    } {buffers = [#optgen.buffer<workspace, 0>]}
    optgen.update %0 : !optgen.tensor<*, f32>
  }
  optgen.group @all = @sgd match ["*"] {}
  optgen.distribute none
}
}
