// RUN: %optgen-opt %s -split-input-file -verify-diagnostics
// IR a tool did not expect (hand edits, mutations of the tests, the IR
// fuzzer's finds: docs/RELIABILITY.md) is a diagnostic, never a crash: each
// verifier checks what it reads before it reads it.

// A buffer that names memory the rule does not have (the CPU printer
// indexed its workspace with it: std::out_of_range).
optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<*, f32>]} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{'optgen.buffers' entry 0 is #optgen.buffer<workspace, -1>, but the rule's 'optgen.workspace' has 1 slots}}
    %0 = optgen.kernel -> (!optgen.tensor<*, f32>) {
      %1 = optgen.neg %g : !optgen.tensor<*, f32>
      optgen.yield %1 : !optgen.tensor<*, f32>
    } {optgen.buffers = [#optgen.buffer<workspace, -1>]}
    optgen.update %0 : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<*, f32>]} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{'optgen.buffers' entry 0 is #optgen.buffer<workspace, 99>, but the rule's 'optgen.workspace' has 1 slots}}
    %0 = optgen.kernel -> (!optgen.tensor<*, f32>) {
      %1 = optgen.neg %g : !optgen.tensor<*, f32>
      optgen.yield %1 : !optgen.tensor<*, f32>
    } {optgen.buffers = [#optgen.buffer<workspace, 99>]}
    optgen.update %0 : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] attributes {optgen.workspace = []} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{'optgen.buffers' entry 0 is #optgen.buffer<state, 0>, but the rule has 0 states}}
    %0 = optgen.kernel -> (!optgen.tensor<*, f32>) {
      %1 = optgen.neg %g : !optgen.tensor<*, f32>
      optgen.yield %1 : !optgen.tensor<*, f32>
    } {optgen.buffers = [#optgen.buffer<state, 0>]}
    optgen.update %0 : !optgen.tensor<*, f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] attributes {optgen.workspace = []} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{'optgen.buffers' entry 0 is #optgen.buffer<param, 1>, but the parameter and the gradient are one buffer each, index 0}}
    %0 = optgen.kernel -> (!optgen.tensor<*, f32>) {
      %1 = optgen.neg %g : !optgen.tensor<*, f32>
      optgen.yield %1 : !optgen.tensor<*, f32>
    } {optgen.buffers = [#optgen.buffer<param, 1>]}
    optgen.update %0 : !optgen.tensor<*, f32>
  }
}

// -----

// optgen.update in a rule without its block arguments (it read the rule's
// parameter, which is not there: a segfault).
optgen.optimizer @o {
  // expected-error @+1 {{takes exactly two inputs: the parameter and its gradient}}
  optgen.rule @r inputs ["p", "g"] {
    %0 = optgen.state "m" like %0 : !optgen.tensor<*, f32> -> !optgen.tensor<*, f32>
    optgen.update %0 : !optgen.tensor<*, f32>
  }
}

// -----

// A parameter bound to a group whose rule does not exist, the parameter
// first (it read the missing rule's parameter).
optgen.optimizer @o {
  optgen.param "w" [4] -> @g
  // expected-error @+1 {{uses 'nothere', which is not a rule}}
  optgen.group @g = @nothere match ["*"] {}
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m], f32>]} {
  ^bb0(%p: !optgen.tensor<[m], f32>, %g: !optgen.tensor<[m], f32>):
    %steps = optgen.constant 1 : i64
    // expected-error @+1 {{'optgen.next_buffers' entry 0 is #optgen.buffer<workspace, 5>, but the rule's 'optgen.workspace' has 1 slots}}
    %xn = optgen.for_table %steps over dense<[[1.0]]> : tensor<1x1xf64> iter %g : !optgen.tensor<[m], f32> -> !optgen.tensor<[m], f32> attributes {optgen.buffers = [#optgen.buffer<workspace, 0>], optgen.next_buffers = [#optgen.buffer<workspace, 5>]} {
    ^bb0(%a: f32, %x: !optgen.tensor<[m], f32>):
      optgen.yield %x : !optgen.tensor<[m], f32>
    }
    optgen.update %xn : !optgen.tensor<[m], f32>
  }
}

// -----

// A reduction that its kernel does not yield (the CPU printer looked for
// the kernel's result of it past the end of the results).
optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %k:2 = optgen.kernel -> (f32, !optgen.tensor<[m, n], f32>) {
      %n = optgen.reduce norm %g : !optgen.tensor<[m, n], f32>
      // expected-error @+1 {{is not a result of its kernel: a kernel yields each of its reductions}}
      %r = optgen.reduce max %g : !optgen.tensor<[m, n], f32>
      %s = optgen.mul %g, %n : !optgen.tensor<[m, n], f32>, f32
      optgen.yield %n, %s : f32, !optgen.tensor<[m, n], f32>
    }
    optgen.update %k#1 : !optgen.tensor<[m, n], f32>
  }
}
