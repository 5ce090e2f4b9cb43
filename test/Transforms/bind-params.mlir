// RUN: %optgen-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(optgen.optimizer(optgen-bind-params,optgen-bucket))' | FileCheck %s

// The first group whose patterns match and whose `where` accepts the shape
// wins; matrices of several shapes share one group and split into buckets by
// shape, in the order their first member was given.
// CHECK-LABEL: optgen.optimizer @o
// CHECK: optgen.param "lm_head.weight" [64, 16] -> @head
// CHECK: optgen.param "h.0.w" [16, 16] -> @matrices
// CHECK: optgen.param "h.0.b" [16] -> @rest
// CHECK: optgen.param "h.1.w" [64, 16] -> @matrices
// CHECK: optgen.param "h.2.w" [16, 16] -> @matrices
// CHECK: optgen.bucket @head [64, 16] ["lm_head.weight"]
// CHECK: optgen.bucket @matrices [16, 16] ["h.0.w", "h.2.w"]
// CHECK: optgen.bucket @matrices [64, 16] ["h.1.w"]
// CHECK: optgen.bucket @rest [16] ["h.0.b"]
// CHECK-NEXT: optgen.distribute none
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.group @head = @sgd match ["lm_head.*"] {}
  optgen.group @matrices = @ortho match ["h.*"] {} where {
  ^bb0(%param: !optgen.tensor<*, f32>):
    %n = optgen.ndim %param : !optgen.tensor<*, f32>
    %two = optgen.constant 2 : i64
    %ok = optgen.cmp eq, %n, %two : i64, i64
    optgen.yield %ok : i1
  }
  optgen.group @rest = @sgd match ["*"] {}
  optgen.param "lm_head.weight" [64, 16]
  optgen.param "h.0.w" [16, 16]
  optgen.param "h.0.b" [16]
  optgen.param "h.1.w" [64, 16]
  optgen.param "h.2.w" [16, 16]
  optgen.distribute none
}

// -----

// A parameter no group matches is an error naming it.
// expected-error @+1 {{parameter 'stray' (shape [3]) matches no group}}
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.group @weights = @sgd match ["*.weight"] {}
  optgen.param "stray" [3]
}

// -----

// So is a group's rule that takes another rank.
// expected-error @+1 {{parameter 'h.0.b' of shape [16] matched group 'matrices', whose rule 'ortho' takes matrices}}
optgen.optimizer @o {
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.group @matrices = @ortho match ["h.*"] {}
  optgen.param "h.0.b" [16]
}

// -----

// A `where` sees only the parameter's shape: queries with constant axes are
// answered from the shape alone (@wide), a computed axis on the parameter
// itself (@tall); the rest of the condition is evaluated either way.
// CHECK-LABEL: optgen.optimizer @o
// CHECK: optgen.param "wide" [4, 64] -> @wide
// CHECK: optgen.param "tall" [64, 4] -> @tall
// CHECK: optgen.param "square" [64, 64] -> @rest
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.group @wide = @sgd match ["*"] {} where {
  ^bb0(%param: !optgen.tensor<*, f32>):
    %zero = optgen.constant 0 : i64
    %one = optgen.constant 1 : i64
    %limit = optgen.constant 1000 : i64
    %rows = optgen.dim %param, %zero : !optgen.tensor<*, f32>
    %cols = optgen.dim %param, %one : !optgen.tensor<*, f32>
    %numel = optgen.numel %param : !optgen.tensor<*, f32>
    %wider = optgen.cmp gt, %cols, %rows : i64, i64
    %small = optgen.cmp lt, %numel, %limit : i64, i64
    %ok = optgen.and %wider, %small : i1, i1
    optgen.yield %ok : i1
  }
  optgen.group @tall = @sgd match ["*"] {} where {
  ^bb0(%param: !optgen.tensor<*, f32>):
    %zero = optgen.constant 0 : i64
    %one = optgen.constant 1 : i64
    %n = optgen.ndim %param : !optgen.tensor<*, f32>
    %last = optgen.sub %n, %one : i64, i64
    %rows = optgen.dim %param, %zero : !optgen.tensor<*, f32>
    %cols = optgen.dim %param, %last : !optgen.tensor<*, f32>
    %wide = optgen.cmp le, %rows, %cols : i64, i64
    %ok = optgen.not %wide : i1
    optgen.yield %ok : i1
  }
  optgen.group @rest = @sgd match ["*"] {}
  optgen.param "wide" [4, 64]
  optgen.param "tall" [64, 4]
  optgen.param "square" [64, 64]
  optgen.distribute none
}
