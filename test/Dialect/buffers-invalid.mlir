// RUN: %optgen-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{a slot stores f32 or f64, not 'i64'}}
optgen.optimizer @o attributes {x = #optgen.slot<[m], i64>} {
}

// -----

optgen.optimizer @o {
  // expected-error @+1 {{'optgen.workspace' is a rule's list of #optgen.slot}}
  optgen.rule @r inputs ["p", "g"] attributes {optgen.workspace = [!optgen.tensor<[m], f32>]} {
  ^bb0(%p: !optgen.tensor<[m], f32>, %g: !optgen.tensor<[m], f32>):
    optgen.update %p : !optgen.tensor<[m], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m], f32>, %g: !optgen.tensor<[m], f32>):
    // expected-error @+1 {{'optgen.buffers' needs one buffer per result}}
    %0 = optgen.kernel -> (!optgen.tensor<[m], f32>) {
      %1 = optgen.neg %g : !optgen.tensor<[m], f32>
      optgen.yield %1 : !optgen.tensor<[m], f32>
    } {optgen.buffers = []}
    optgen.update %0 : !optgen.tensor<[m], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m], f32>, %g: !optgen.tensor<[m], f32>):
    // expected-error @+1 {{'optgen.buffers' entry 0 must be a #optgen.buffer}}
    %0 = optgen.kernel -> (!optgen.tensor<[m], f32>) {
      %1 = optgen.neg %g : !optgen.tensor<[m], f32>
      optgen.yield %1 : !optgen.tensor<[m], f32>
    } {optgen.buffers = [unit]}
    optgen.update %0 : !optgen.tensor<[m], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m], f32>, %g: !optgen.tensor<[m], f32>):
    // expected-error @+1 {{unknown optgen attribute 'optgen.buffer'}}
    %0 = optgen.neg %g {optgen.buffer = 1} : !optgen.tensor<[m], f32>
    optgen.update %0 : !optgen.tensor<[m], f32>
  }
}

// -----

// A scalar lives in a register (unit) or, on a device, in a workspace slot;
// never in the parameter or a state.
optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] attributes {optgen.workspace = []} {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    // expected-error @+1 {{'optgen.buffers' entry 0 must be unit or a workspace #optgen.buffer}}
    %n = optgen.kernel -> (f32) {
      %s = optgen.reduce sum %g {accumulator = f32} : !optgen.tensor<*, f32>
      optgen.yield %s : f32
    } {optgen.buffers = [#optgen.buffer<param, 0>]}
    optgen.update %p : !optgen.tensor<*, f32>
  }
}
