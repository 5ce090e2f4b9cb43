// RUN: %optgen-opt %s -split-input-file -verify-diagnostics

// Invalid schedules: each check of the schedule's verifier (units complete
// and consistent with the optimizer's parameters and rules; the program
// complete and in order) with a schedule that fails only it.

// A schedule runs on at least one rank.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  // expected-error @+1 {{needs at least one rank}}
  optgen.schedule world_size 0 {
  }
}

// -----

// A unit packs at least one parameter.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{packs no parameter}}
    %u = optgen.unit flat [] offsets [] rules [] counts [0, 0]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// Offsets and rules are per parameter.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{gives 1 offsets and 2 rules for 2 parameters}}
    %u = optgen.unit owned ["a", "b"] offsets [0] rules [@ortho, @ortho] owners [0, 1] counts [64, 64]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// Counts are per rank...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{gives 3 counts for 2 ranks}}
    %u = optgen.unit flat ["e"] offsets [0] rules [@sgd] counts [34, 33, 33]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// ... except for a small unit, whose one count is its packed total.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{gives 2 counts; a small unit has one, its packed total}}
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3, 3]
    %r = optgen.all_reduce %u payload f32
    optgen.wait %r
    optgen.compute %u
  }
}

// -----

// Counts are not negative.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{gives a negative count}}
    %u = optgen.unit flat ["e"] offsets [0] rules [@sgd] counts [101, -1]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// An owned unit names the owners of its matrices...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{of owned matrices needs their owners}}
    %u = optgen.unit owned ["a", "b"] offsets [0, 64] rules [@ortho, @ortho] counts [64, 64]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// ... and only an owned unit does.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{has owners, which only an owned unit has}}
    %u = optgen.unit flat ["e"] offsets [0] rules [@sgd] owners [0] counts [50, 50]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// Owners are ranks of the world...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{gives 'b' to rank 2 of 2}}
    %u = optgen.unit owned ["a", "b"] offsets [0, 64] rules [@ortho, @ortho] owners [0, 2] counts [64, 64]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// ... and matrices are packed by owner, so that each rank's part is contiguous.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{packs 'b' (rank 0's) after a matrix of rank 1: an owned unit is packed by owner}}
    %u = optgen.unit owned ["a", "b"] offsets [0, 64] rules [@ortho, @ortho] owners [1, 0] counts [64, 64]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// A unit packs parameters of the optimizer...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{packs 'x', which is not a parameter of the optimizer}}
    %u = optgen.unit flat ["x"] offsets [0] rules [@sgd] counts [50, 50]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// ... updated by rules...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{updates 'e' with 'adamw', which is not a rule}}
    %u = optgen.unit flat ["e"] offsets [0] rules [@adamw] counts [50, 50]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// ... that take their rank.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{updates 'e' of rank 1 with rule 'ortho', which takes rank 2}}
    %u = optgen.unit flat ["e"] offsets [0] rules [@ortho] counts [50, 50]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// Each parameter follows the one before it in the packed buffer.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{places 'b' at element 60; packed after the parameters before it, it starts at 64}}
    %u = optgen.unit owned ["a", "b"] offsets [0, 60] rules [@ortho, @ortho] owners [0, 1] counts [64, 64]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// A small unit's count is its parameters' size...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{counts 4 elements, but its parameters pack 3}}
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [4]
    %r = optgen.all_reduce %u payload f32
    optgen.wait %r
    optgen.compute %u
  }
}

// -----

// ... a flat unit's parts cover its parameters...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{shares out 98 elements, fewer than its parameters pack (100)}}
    %u = optgen.unit flat ["e"] offsets [0] rules [@sgd] counts [49, 49]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// ... and an owned unit gives each rank the matrices it owns.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{gives rank 0 128 elements, but the matrices it owns pack 64}}
    %u = optgen.unit owned ["a", "b"] offsets [0, 64] rules [@ortho, @ortho] owners [0, 1] counts [128, 0]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
    %g = optgen.all_gather %u payload f32
    optgen.wait %g
  }
}

// -----

// A parameter is in one unit.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-note @+1 {{that unit}}
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    // expected-error @+1 {{packs 's', which another unit packs too}}
    %v = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    %r = optgen.all_reduce %u payload f32
    optgen.wait %r
    optgen.compute %u
    %r2 = optgen.all_reduce %v payload f32
    optgen.wait %r2
    optgen.compute %v
  }
}

// -----

// Every collective is waited for exactly once...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    // expected-error @+1 {{must be waited for exactly once}}
    %r = optgen.all_reduce %u payload f32
    optgen.compute %u
  }
}

// -----

// ... not twice.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    // expected-error @+1 {{must be waited for exactly once}}
    %r = optgen.all_reduce %u payload f32
    optgen.wait %r
    optgen.wait %r
    optgen.compute %u
  }
}

// -----

// A small unit is all-reduced...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    // expected-error @+1 {{cannot work on a small unit: small units are all-reduced, others reduce-scattered and all-gathered}}
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
  }
}

// -----

// ... and only a small unit.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    %u = optgen.unit flat ["e"] offsets [0] rules [@sgd] counts [50, 50]
    // expected-error @+1 {{cannot work on a flat unit}}
    %r = optgen.all_reduce %u payload f32
    optgen.wait %r
    optgen.compute %u
  }
}

// -----

// Every unit is reduced...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{is never reduced}}
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    optgen.compute %u
  }
}

// -----

// ... computed...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{is never computed}}
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    %r = optgen.all_reduce %u payload f32
    optgen.wait %r
  }
}

// -----

// ... and, unless small, gathered...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{is never all-gathered}}
    %u = optgen.unit flat ["e"] offsets [0] rules [@sgd] counts [50, 50]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    optgen.compute %u
  }
}

// -----

// ... once each...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    // expected-error @+1 {{is used by two optgen.compute ops; a step runs each unit once}}
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    %r = optgen.all_reduce %u payload f32
    optgen.wait %r
    optgen.compute %u
    optgen.compute %u
  }
}

// -----

// ... computed after the wait on its reduction...
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    %r = optgen.all_reduce %u payload f32
    // expected-error @+1 {{updates the unit before the wait on its reduction}}
    optgen.compute %u
    optgen.wait %r
  }
}

// -----

// ... and gathered after it is computed.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    %u = optgen.unit flat ["e"] offsets [0] rules [@sgd] counts [50, 50]
    %r = optgen.reduce_scatter %u payload f32
    optgen.wait %r
    // expected-error @+1 {{gathers the unit before it is computed}}
    %g = optgen.all_gather %u payload f32
    optgen.compute %u
    optgen.wait %g
  }
}

// -----

// A payload is a float type.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    %u = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    // expected-error @+1 {{attribute 'payload' failed to satisfy constraint}}
    %r = optgen.all_reduce %u payload i64
    optgen.wait %r
    optgen.compute %u
  }
}

// -----

// A local unit has no collective.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "s" [3]
  optgen.schedule world_size 1 {
    %u = optgen.unit local ["s"] offsets [0] rules [@sgd] counts []
    // expected-error @+1 {{cannot work on a local unit, which has no collective}}
    %0 = optgen.all_reduce %u payload f32
    optgen.wait %0
    optgen.compute %u
  }
}

// -----

// A local unit shares nothing out.
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "s" [3]
  optgen.schedule world_size 1 {
    // expected-error @+1 {{gives counts; a local unit shares nothing out}}
    %u = optgen.unit local ["s"] offsets [0] rules [@sgd] counts [3]
    optgen.compute %u
  }
}

// -----

// Shard groups divide the world.
optgen.optimizer @o {
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "a" [8, 8]
  // expected-error @+1 {{shards within groups of 4 ranks, which do not divide 6 ranks}}
  optgen.schedule world_size 6 group_size 4 {
  }
}

// -----

// With shard groups, a unit's counts are for the positions of a group.
optgen.optimizer @o {
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "a" [8, 8]
  optgen.schedule world_size 4 group_size 2 {
    // expected-error @+1 {{gives 4 counts for 2 ranks}}
    %m = optgen.unit owned ["a"] offsets [0] rules [@ortho] owners [0] counts [64, 0, 0, 0]
  }
}

// -----

// Owners are positions of a group.
optgen.optimizer @o {
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "a" [8, 8]
  optgen.schedule world_size 4 group_size 2 {
    // expected-error @+1 {{gives 'a' to rank 3 of 2}}
    %m = optgen.unit owned ["a"] offsets [0] rules [@ortho] owners [3] counts [64, 0]
  }
}
