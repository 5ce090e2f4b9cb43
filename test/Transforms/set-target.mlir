// RUN: %optgen-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(optgen-set-target{target=cuda})' | FileCheck %s --check-prefix=CUDA
// RUN: %optgen-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(optgen-set-target{target=cpu})' | FileCheck %s --check-prefix=CPU
// Without a name: the module's description, else the default target's.
// RUN: %optgen-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(optgen-set-target)' | FileCheck %s --check-prefix=CPU
// RUN: not %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen-set-target{target=tpu})' 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// Each target's description, as every later pass and printer reads it.
// CUDA: module attributes {optgen.target = #optgen.target<name = "cuda", kind = device, accumulator = f32, storage = narrow, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1024, reduction_blocks = 128, arch = 90>}
// CPU: module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536, supports = "shard_groups | skip_nonfinite">}
// UNKNOWN: error: unknown target 'tpu'; the targets are cpu, cuda
optgen.optimizer @sgd {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.group @all = @sgd match ["*"] {}
  optgen.distribute none
}
