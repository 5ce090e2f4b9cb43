// RUN: %optgen-opt %s -split-input-file -verify-diagnostics

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    // expected-error @+1 {{the inner dimensions differ}}
    %A = optgen.gemm %p, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32>
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    // expected-error @+1 {{is not the product's shape}}
    %A = optgen.gemm %p transposed, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, m], f32>
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    // expected-error @+1 {{is symmetric only as op(a) @ op(a)^T}}
    %A = optgen.gemm %p transposed, %g symmetric : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[n, n], f32>
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %b = optgen.hyper "b" : f32
    // expected-error @+1 {{into a result of}}
    %A = optgen.gemm %p transposed, %g plus %p : !optgen.tensor<[m, n], f32> scaled %b : f32 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[n, n], f32>
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
}

// -----

optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[n, n], f32>, %g: !optgen.tensor<[n, n], f32>):
    %k = optgen.hyper "k" : i64
    // expected-error @+1 {{scales by floats, not 'i64'}}
    %A = optgen.gemm %p, %g scaled %k : i64 : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
    optgen.update %p : !optgen.tensor<[n, n], f32>
  }
}
