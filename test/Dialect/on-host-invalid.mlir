// RUN: %optgen-opt %s -split-input-file -verify-diagnostics

// optgen.on_host (optgen-place-scalars) marks what a device target's host
// computes: scalars outside kernels, from scalars the host has.

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %0 = optgen.constant -1 : i64
    // expected-error @below {{'optgen.dim' op is computed on the host from a value that is not: operand #1, of 'optgen.constant'}}
    %1 = optgen.dim %p, %0 {optgen.on_host} : !optgen.tensor<[m, n], f32>
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %0 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      // expected-error @below {{'optgen.sub' op 'optgen.on_host' marks a scalar of a rule outside its kernels}}
      %1 = optgen.sub %p, %g {optgen.on_host} : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      optgen.yield %1 : !optgen.tensor<[m, n], f32>
    }
    optgen.update %0 : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    // expected-error @below {{'optgen.constant' op 'optgen.on_host' is a unit attribute}}
    %0 = optgen.constant -1 : i64 {optgen.on_host = 1 : i64}
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}
