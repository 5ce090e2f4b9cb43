// RUN: %optgen-opt %s -split-input-file -verify-diagnostics
// Each verifier of the dialect rejects what it must.

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  // expected-error @+1 {{tensor elements are f32, bf16, f16 or i1, not 'f64'}}
  ^bb0(%p: !optgen.tensor<[m], f64>, %g: !optgen.tensor<[m], f64>):
  }
}

// -----

optgen.optimizer @o {
  // expected-error @+1 {{takes exactly two inputs: the parameter and its gradient}}
  optgen.rule @r inputs ["p"] {
  ^bb0(%p: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    // expected-error @+1 {{matrix product of incompatible shapes [m, n] @ [m, n]: n columns against m rows}}
    %0 = optgen.matmul %p, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %t = optgen.transpose %g : !optgen.tensor<[m, n], f32>
    // expected-error @+1 {{shapes [m, n] and [n, m] do not broadcast in '+': m against n}}
    %0 = optgen.add %p, %t : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, m], f32>
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %c2 = optgen.constant 2 : i64
    // expected-error @+1 {{axis 2 is out of range for 'size' of a tensor of rank 2 ([m, n])}}
    %0 = optgen.dim %p, %c2 : !optgen.tensor<[m, n], f32>
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{hyperparameter 'n' takes an int, not 5.000000e-01 : f32}}
    %n = optgen.hyper "n" default(0.5 : f32) : i64
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-note @+1 {{first declared here}}
    %a = optgen.hyper "lr" : f32
    // expected-error @+1 {{redeclares 'lr'}}
    %b = optgen.state "lr" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
    optgen.update %p state(%b : !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %c1 = optgen.constant 1 : i64
    // expected-error @+1 {{type [1, n] f32 does not have the shape [m, 1] f32}}
    %r = optgen.state "r" like %p : !optgen.tensor<[m, n], f32> reduced %c1 -> !optgen.tensor<[1, n], f32>
    optgen.update %p state(%r : !optgen.tensor<[1, n], f32>) : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
    // expected-error @+1 {{gives 0 state values for the rule's 1 states}}
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %m = optgen.state "m" like %p : !optgen.tensor<*, f32> -> !optgen.tensor<*, bf16>
    // expected-error @+1 {{gives state 'm' the type * f32, but it is * bf16}}
    optgen.update %p state(%p : !optgen.tensor<*, f32>) : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %lr = optgen.hyper "lr" : f32
    %c = optgen.constant 1.0 : f32
    %big = optgen.cmp gt, %lr, %c : f32, f32
    // expected-error @+1 {{condition must be known at compile time, but it depends on hyperparameter 'lr'}}
    %x = optgen.if %big -> (!optgen.tensor<[m, n], f32>) {
      optgen.yield %p : !optgen.tensor<[m, n], f32>
    } else {
      optgen.yield %g : !optgen.tensor<[m, n], f32>
    }
    optgen.update %x : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %n = optgen.constant 2 : i64
    // expected-error @+1 {{body takes the 2 values of a row and the 1 loop-carried values}}
    %x = optgen.for_table %n over dense<[[1.0, 2.0]]> : tensor<1x2xf64> iter %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32> {
    ^bb0(%a: f32, %x: !optgen.tensor<[m, n], f32>):
      optgen.yield %x : !optgen.tensor<[m, n], f32>
    }
    optgen.update %x : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    // expected-error @+1 {{cannot change the shape [m, n] f32 to [n, m] f32}}
    %x = optgen.cast %p : !optgen.tensor<[m, n], f32> to !optgen.tensor<[n, m], f32>
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %betas = optgen.hyper "betas" : tuple<f32, f32>
    // expected-error @+1 {{index 2 is out of range for a tuple of 2}}
    %b = optgen.tuple_get %betas[2] : tuple<f32, f32>
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
  // expected-error @+1 {{does not set 'lr', which has no default in rule 'r'}}
  optgen.group @all = @r match ["*"] {}
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  // expected-error @+1 {{sets 'lr', which rule 'r' does not declare}}
  optgen.group @all = @r match ["*"] {lr = 0.1 : f32}
}

// -----

optgen.optimizer @o {
  // expected-error @+1 {{uses 'missing', which is not a rule}}
  optgen.group @all = @missing match ["*"] {}
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  // expected-error @+1 {{matches no names: give at least one pattern}}
  optgen.group @all = @r match [] {}
}

// -----

optgen.optimizer @o {
  // expected-error @+1 {{'small_numel' applies only to zero2}}
  optgen.distribute none {small_numel = 4 : i64}
}

// -----

optgen.optimizer @o {
  // expected-note @+1 {{first given here}}
  optgen.distribute none
  // expected-error @+1 {{repeats the optimizer's distribution strategy}}
  optgen.distribute zero2
}

// -----

// Hyperparameter offsets: all or none, never overlapping.
optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" {offset = 0 : i64} : f32
    // expected-error @+1 {{has no offset while others of its rule do}}
    %wd = optgen.hyper "wd" : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-note @+1 {{declared here}}
    %betas = optgen.hyper "betas" {offset = 0 : i64} : tuple<f32, f32>
    // expected-error @+1 {{at offset 1 overlaps 'betas'}}
    %lr = optgen.hyper "lr" {offset = 1 : i64} : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-note @+1 {{declared here}}
    %lr = optgen.hyper "lr" {offset = 3 : i64} : f32
    // expected-error @+1 {{has the offset of 'lr'}}
    %wd = optgen.hyper "wd" {offset = 3 : i64} : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{attribute 'offset' failed to satisfy constraint}}
    %lr = optgen.hyper "lr" {offset = -1 : i64} : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  // expected-note @+1 {{first given here}}
  optgen.on_nonfinite skip
  // expected-error @+1 {{repeats the optimizer's non-finite policy}}
  optgen.on_nonfinite propagate
}
