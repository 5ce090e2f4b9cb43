// RUN: %optgen-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(optgen-set-target{target=cuda})'

// What the IR asks of a target that its description says it does not
// generate is refused here, at the op that asks, before any pass or
// printer would meet it.

// A module keeps the target it was lowered for.
// expected-error @below {{the module is described for target 'cpu', not 'cuda'}}
module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536, supports = "shard_groups | skip_nonfinite">} {
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
}
}

// -----

// Hybrid sharding's step is the CPU target's only.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "s" [3]
  // expected-error @below {{shard groups of 2 of 4 ranks (hybrid sharding): the cuda target does not generate their step yet (compile for --target=cpu)}}
  optgen.schedule world_size 4 group_size 2 {
    %s = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    %0 = optgen.all_reduce %s payload f32
    optgen.wait %0
    optgen.compute %s
  }
}

// -----

// So is skipping steps on non-finite gradients.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.group @all = @sgd match ["*"] {}
  optgen.distribute none
  // expected-error @below {{the cuda target cannot skip steps on non-finite gradients yet (its executor does not check them); compile for --target=cpu, or without `on_nonfinite skip`}}
  optgen.on_nonfinite skip
}
