// RUN: %optgen-opt %s -split-input-file -verify-diagnostics
// The verifiers of globals, of their reads and of a schedule's globals
// phase reject what they must.

optgen.optimizer @o {
  // expected-error @+1 {{takes exactly two inputs: each parameter and its gradient}}
  optgen.global @x inputs ["g"] {
  ^bb0(%g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
}

// -----

optgen.optimizer @o {
  // expected-error @+1 {{inputs are f32 tensors of any rank, not [m, n] f32}}
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<[m, n], f32>
    optgen.yield %0 : f32
  }
}

// -----

optgen.optimizer @o {
  // expected-error @+1 {{must yield one f32, its value}}
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.cast %g : !optgen.tensor<*, f32> to !optgen.tensor<*, bf16>
    %1 = optgen.reduce_params sum %0 : !optgen.tensor<*, bf16>
    optgen.yield %1 : bf16
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{cannot be part of a global: only elementwise math, constants and optgen.reduce_params}}
    %0 = optgen.reduce sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
}

// -----

optgen.optimizer @o {
  // expected-error @+1 {{reduces nothing across parameters: it needs an optgen.reduce_params}}
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.constant 1.0 : f32
    optgen.yield %0 : f32
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{reduces by sum or max, not mean}}
    %0 = optgen.reduce_params mean %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{accumulates in f32 or f64, not 'bf16'}}
    %0 = optgen.reduce_params sum %g {accumulator = bf16} : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    // expected-error @+1 {{reads both one parameter's values and a reduction across every parameter}}
    %1 = optgen.mul %g, %0 : !optgen.tensor<*, f32>, f32
    %2 = optgen.reduce_params sum %1 : !optgen.tensor<*, f32>
    optgen.yield %2 : f32
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %m = optgen.cmp gt, %g, %p : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
    // expected-error @+1 {{reduce_params reduces a float tensor}}
    %0 = optgen.reduce_params sum %m : !optgen.tensor<*, i1>
    optgen.yield %0 : f32
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{expects parent op 'optgen.global'}}
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{reads 'nowhere', which is not a global of the optimizer}}
    %0 = optgen.global_value @nowhere : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.group @all = @r match ["*"] {} where {
  ^bb0(%param: !optgen.tensor<*, f32>):
    // expected-error @+1 {{reads a global outside a rule; only rules read globals}}
    %0 = optgen.global_value @x : f32
    %1 = optgen.constant 1.0 : f32
    %2 = optgen.cmp gt, %0, %1 : f32, f32
    optgen.yield %2 : i1
  }
}

// -----

// A schedule's globals phase, against an optimizer without globals.
optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "e" [10]
  optgen.schedule world_size 1 {
    %e = optgen.unit local ["e"] offsets [0] rules [@r] counts []
    // expected-error @+1 {{works on the globals, but the optimizer has none}}
    optgen.partials %e
    optgen.compute %e
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "e" [10]
  // expected-error @+1 {{never finishes the optimizer's globals (optgen.finish_globals)}}
  optgen.schedule world_size 1 {
    %e = optgen.unit local ["e"] offsets [0] rules [@r] counts []
    optgen.partials %e
    optgen.compute %e
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "e" [10]
  optgen.param "f" [10]
  optgen.schedule world_size 1 {
    %e = optgen.unit local ["e"] offsets [0] rules [@r] counts []
    // expected-error @+1 {{adds nothing to the globals' partials; every unit needs an optgen.partials}}
    %f = optgen.unit local ["f"] offsets [0] rules [@r] counts []
    optgen.partials %e
    optgen.finish_globals
    optgen.compute %e
    optgen.compute %f
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "e" [10]
  optgen.param "f" [10]
  optgen.schedule world_size 1 {
    %e = optgen.unit local ["e"] offsets [0] rules [@r] counts []
    %f = optgen.unit local ["f"] offsets [0] rules [@r] counts []
    optgen.partials %e
    // expected-error @+1 {{updates the unit before the globals it reads are finished}}
    optgen.compute %e
    optgen.partials %f
    optgen.finish_globals
    optgen.compute %f
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "e" [10]
  optgen.schedule world_size 1 {
    %e = optgen.unit local ["e"] offsets [0] rules [@r] counts []
    optgen.finish_globals
    // expected-error @+1 {{comes after the globals are finished}}
    optgen.partials %e
    optgen.compute %e
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "e" [10]
  optgen.schedule world_size 1 {
    %e = optgen.unit local ["e"] offsets [0] rules [@r] counts []
    optgen.partials %e
    optgen.finish_globals
    // expected-error @+1 {{is the second of its kind; a step gathers and finishes the globals once}}
    optgen.finish_globals
    optgen.compute %e
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "e" [10]
  optgen.schedule world_size 1 {
    %e = optgen.unit local ["e"] offsets [0] rules [@r] counts []
    optgen.partials %e
    // expected-error @+1 {{gathers partials in a step of local units, where each rank's are its own}}
    %0 = optgen.gather_partials
    optgen.wait %0
    optgen.finish_globals
    optgen.compute %e
  }
}

// -----

// The distributed step: partials after the reduction's wait, gathered,
// waited for, then finished.
optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "s" [3]
  // expected-error @+1 {{never gathers the globals' partials over the ranks (optgen.gather_partials)}}
  optgen.schedule world_size 2 {
    %s = optgen.unit small ["s"] offsets [0] rules [@r] counts [3]
    %0 = optgen.all_reduce %s payload f32
    optgen.wait %0
    optgen.partials %s
    optgen.finish_globals
    optgen.compute %s
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "s" [3]
  optgen.schedule world_size 2 {
    %s = optgen.unit small ["s"] offsets [0] rules [@r] counts [3]
    %0 = optgen.all_reduce %s payload f32
    // expected-error @+1 {{reads the unit's gradients before the wait on its reduction}}
    optgen.partials %s
    optgen.wait %0
    %1 = optgen.gather_partials
    optgen.wait %1
    optgen.finish_globals
    optgen.compute %s
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "s" [3]
  optgen.param "t" [3]
  optgen.schedule world_size 2 {
    %s = optgen.unit small ["s"] offsets [0] rules [@r] counts [3]
    %t = optgen.unit small ["t"] offsets [0] rules [@r] counts [3]
    %0 = optgen.all_reduce %s payload f32
    %1 = optgen.all_reduce %t payload f32
    optgen.wait %0
    optgen.partials %s
    %2 = optgen.gather_partials
    optgen.wait %1
    // expected-error @+1 {{comes after the partials are gathered}}
    optgen.partials %t
    optgen.wait %2
    optgen.finish_globals
    optgen.compute %s
    optgen.compute %t
  }
}

// -----

optgen.optimizer @o {
  optgen.global @x inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "s" [3]
  optgen.schedule world_size 2 {
    %s = optgen.unit small ["s"] offsets [0] rules [@r] counts [3]
    %0 = optgen.all_reduce %s payload f32
    optgen.wait %0
    optgen.partials %s
    %1 = optgen.gather_partials
    // expected-error @+1 {{finishes the globals before the wait on the partials' gather}}
    optgen.finish_globals
    optgen.wait %1
    optgen.compute %s
  }
}
