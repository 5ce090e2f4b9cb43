// RUN: %optgen-opt %s -split-input-file -verify-diagnostics

// The nanochat pattern: the space launch updates the momentum in place,
// and the row launch after it recomputes its norms from the momentum, so it
// would read the new values where the kernel reads the old ones (the wrong
// numbers of nanochat's Muon on CUDA). The verifier rejects the order.
module {
  optgen.optimizer @o {
    optgen.rule @muon inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, 1], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %c1 = optgen.constant 1 : i64
      %w = optgen.hyper "w" : f32
      %m = optgen.state "m" like %p : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32>
      %0:2 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>) {
        // expected-note @+1 {{the launch that writes it}}
        %1 = optgen.launch space -> (!optgen.tensor<[m, n], f32>) {
          %3 = optgen.lerp %m, %g, %w : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
          optgen.yield %3 : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<state, 0>]}
        // expected-error @+1 {{reads #optgen.buffer<state, 0> after an earlier launch of its kernel writes it: it would read the new values, where the kernel reads the old}}
        %2 = optgen.launch rows -> (!optgen.tensor<[m, 1], f32>) {
          %3 = optgen.lerp %m, %g, %w : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>, f32
          %4 = optgen.reduce norm %3 along %c1 : !optgen.tensor<[m, n], f32>
          optgen.yield %4 : !optgen.tensor<[m, 1], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
        optgen.yield %1, %2 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
      } {optgen.buffers = [#optgen.buffer<state, 0>, #optgen.buffer<workspace, 0>]}
      optgen.update %p state(%0#0 : !optgen.tensor<[m, n], f32>) : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// A launch's parameter read after an earlier launch wrote it in place.
module {
  optgen.optimizer @o {
    optgen.rule @param inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %c1 = optgen.constant 1 : i64
      %0:2 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>) {
        // expected-note @+1 {{the launch that writes it}}
        %1 = optgen.launch space -> (!optgen.tensor<[m, n], f32>) {
          %3 = optgen.sub %p, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
          optgen.yield %3 : !optgen.tensor<[m, n], f32>
        } {optgen.buffers = [#optgen.buffer<param, 0>]}
        // expected-error @+1 {{reads #optgen.buffer<param, 0> after an earlier launch}}
        %2 = optgen.launch rows -> (!optgen.tensor<[m, 1], f32>) {
          %4 = optgen.reduce sum %p along %c1 : !optgen.tensor<[m, n], f32>
          optgen.yield %4 : !optgen.tensor<[m, 1], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
        optgen.yield %1, %2 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, 1], f32>
      } {optgen.buffers = [#optgen.buffer<param, 0>, #optgen.buffer<workspace, 0>]}
      optgen.update %0#0 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

module {
  optgen.optimizer @o {
    optgen.rule @r inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %c1 = optgen.constant 1 : i64
      %0 = optgen.kernel -> (!optgen.tensor<[m, 1], f32>) {
        // expected-error @+1 {{yields a reduction to one value per row, which is a `rows` launch's}}
        %1 = optgen.launch cols -> (!optgen.tensor<[m, 1], f32>) {
          %2 = optgen.reduce sum %g along %c1 : !optgen.tensor<[m, n], f32>
          optgen.yield %2 : !optgen.tensor<[m, 1], f32>
        }
        optgen.yield %1 : !optgen.tensor<[m, 1], f32>
      }
      optgen.update %p : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

module {
  optgen.optimizer @o {
    optgen.rule @r inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %c1 = optgen.constant 1 : i64
      %0 = optgen.kernel -> (!optgen.tensor<[m, 1], f32>) {
        // expected-error @+1 {{names an axis: only a `lines` launch has one}}
        %1 = optgen.launch rows along %c1 -> (!optgen.tensor<[m, 1], f32>) {
          %2 = optgen.reduce sum %g along %c1 : !optgen.tensor<[m, n], f32>
          optgen.yield %2 : !optgen.tensor<[m, 1], f32>
        }
        optgen.yield %1 : !optgen.tensor<[m, 1], f32>
      }
      optgen.update %p : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

module {
  optgen.optimizer @o {
    optgen.rule @r inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %last = optgen.constant -1 : i64
      %n = optgen.dim %p, %last : !optgen.tensor<[m, n], f32>
      %0 = optgen.kernel -> (!optgen.tensor<[?, ?], f32>) {
        // expected-error @+1 {{yields a reduction along an axis known only at run time: that is a `lines` launch}}
        %1 = optgen.launch rows -> (!optgen.tensor<[?, ?], f32>) {
          %a = optgen.reduce sum %g along %n : !optgen.tensor<[m, n], f32>
          optgen.yield %a : !optgen.tensor<[?, ?], f32>
        }
        optgen.yield %1 : !optgen.tensor<[?, ?], f32>
      }
      optgen.update %p : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

module {
  optgen.optimizer @o {
    optgen.rule @r inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0:2 = optgen.kernel -> (!optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>) {
        %1 = optgen.launch space -> (!optgen.tensor<[m, n], f32>) {
          %3 = optgen.abs %g : !optgen.tensor<[m, n], f32>
          optgen.yield %3 : !optgen.tensor<[m, n], f32>
        }
        // expected-error @+1 {{finishes a value that is not a full reduction}}
        %2 = optgen.launch finish -> (!optgen.tensor<[m, n], f32>) {
          optgen.yield %1 : !optgen.tensor<[m, n], f32>
        }
        optgen.yield %1, %2 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      }
      optgen.update %p : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

module {
  optgen.optimizer @o {
    optgen.rule @r inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        // expected-error @+1 {{computes: a store launch yields what it moves and computes nothing}}
        %1 = optgen.launch store -> (!optgen.tensor<[m, n], f32>) {
          %2 = optgen.abs %g : !optgen.tensor<[m, n], f32>
          optgen.yield %2 : !optgen.tensor<[m, n], f32>
        }
        optgen.yield %1 : !optgen.tensor<[m, n], f32>
      }
      optgen.update %0 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

module {
  optgen.optimizer @o {
    optgen.rule @r inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %1 = optgen.launch space -> (!optgen.tensor<[m, n], f32>) {
          %2 = optgen.abs %g : !optgen.tensor<[m, n], f32>
          optgen.yield %2 : !optgen.tensor<[m, n], f32>
        }
        // expected-error @+1 {{is not a launch: a kernel split into launches holds launches only}}
        %3 = optgen.abs %g : !optgen.tensor<[m, n], f32>
        optgen.yield %1 : !optgen.tensor<[m, n], f32>
      }
      optgen.update %0 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

module {
  optgen.optimizer @o {
    optgen.rule @r inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      // expected-error @+1 {{'optgen.launch' op expects parent op 'optgen.kernel'}}
      %1 = optgen.launch space -> (!optgen.tensor<[m, n], f32>) {
        %2 = optgen.abs %g : !optgen.tensor<[m, n], f32>
        optgen.yield %2 : !optgen.tensor<[m, n], f32>
      }
      optgen.update %1 : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

// A launch's shape fits its kind, and a space launch leaves no more partial
// sums than its full reductions' slots hold.
module {
  optgen.optimizer @o {
    optgen.rule @r inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, 1], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %c1 = optgen.constant 1 : i64
      %0 = optgen.kernel -> (!optgen.tensor<[m, 1], f32>) {
        // expected-error @+1 {{runs a grid of elements: a rows launch runs one of rows}}
        %1 = optgen.launch rows -> (!optgen.tensor<[m, 1], f32>) {
          %2 = optgen.reduce sum %g along %c1 : !optgen.tensor<[m, n], f32>
          optgen.yield %2 : !optgen.tensor<[m, 1], f32>
        } {optgen.buffers = [#optgen.buffer<workspace, 0>], shape = #optgen.launch_shape<threads = 256, grid = elements, max_blocks = 8>}
        optgen.yield %1 : !optgen.tensor<[m, 1], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
      optgen.update %p : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

module {
  optgen.optimizer @o {
    optgen.rule @r inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[128], f32>, #optgen.slot<[], f32>]} {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %0 = optgen.kernel -> (f32) {
        // expected-error @+1 {{runs up to 1024 blocks, each leaving a partial sum, where the slot of its full reduction holds 128}}
        %1 = optgen.launch space -> (f32) {
          %2 = optgen.reduce sum %g {optgen.buffers = [#optgen.buffer<workspace, 0>]} : !optgen.tensor<[m, n], f32>
          optgen.yield %2 : f32
        } {optgen.buffers = [#optgen.buffer<workspace, 0>], shape = #optgen.launch_shape<threads = 256, grid = elements, max_blocks = 1024>}
        %3 = optgen.launch finish -> (f32) {
          optgen.yield %1 : f32
        } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
        optgen.yield %3 : f32
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      optgen.update %p : !optgen.tensor<[m, n], f32>
    }
  }
}

// -----

module {
  optgen.optimizer @o {
    optgen.rule @r inputs ["p", "g"] {
    ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
      %c0 = optgen.constant 0 : i64
      %0 = optgen.kernel -> (!optgen.tensor<[1, n], f32>) {
        %1 = optgen.launch cols -> (!optgen.tensor<[1, n], f32>) {
          %2 = optgen.reduce sum %g along %c0 : !optgen.tensor<[m, n], f32>
          optgen.yield %2 : !optgen.tensor<[1, n], f32>
        // expected-error @+1 {{only a grid over the elements has max_blocks and per_thread: a column_blocks grid's blocks follow the member's shape}}
        } {shape = #optgen.launch_shape<threads = 256, grid = column_blocks, max_blocks = 4>}
        optgen.yield %1 : !optgen.tensor<[1, n], f32>
      }
      optgen.update %p : !optgen.tensor<[m, n], f32>
    }
  }
}
