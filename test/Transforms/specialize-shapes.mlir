// RUN: %optgen-opt %s --pass-pipeline='builtin.module(optgen.optimizer(optgen-specialize-shapes,optgen.rule(canonicalize,optgen-infer-shapes)))' | FileCheck %s

// Each bucket gets its rule copied with its shape; the copy's shape queries
// fold, so NorMuon's statistics axis and the tall/wide choice are made at
// compile time: a [64, 16] matrix keeps a [64, 1] second moment and takes
// the tall branch.
// CHECK-LABEL: optgen.rule @normuon_64x16 inputs ["p", "g"]
// CHECK-NEXT: ^bb0(%p: !optgen.tensor<[64, 16], f32>, %g: !optgen.tensor<[64, 16], f32>):
// CHECK: optgen.state "v" like %p : !optgen.tensor<[64, 16], f32> reduced %{{.*}} -> !optgen.tensor<[64, 1], f32>
// CHECK-NOT: optgen.if
// CHECK: optgen.transpose
// CHECK: optgen.update
// CHECK-LABEL: optgen.rule @normuon_16x64
// CHECK: optgen.state "v" like %p : !optgen.tensor<[16, 64], f32> reduced %{{.*}} -> !optgen.tensor<[1, 64], f32>
// CHECK: optgen.bucket @matrices [64, 16] ["a"] rule @normuon_64x16
// CHECK: optgen.bucket @matrices [16, 64] ["b"] rule @normuon_16x64
optgen.optimizer @o {
  optgen.rule @normuon inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %c0 = optgen.constant 0 : i64
    %c1 = optgen.constant 1 : i64
    %cm2 = optgen.constant -2 : i64
    %cm1 = optgen.constant -1 : i64
    %rows = optgen.dim %p, %cm2 : !optgen.tensor<[m, n], f32>
    %cols = optgen.dim %p, %cm1 : !optgen.tensor<[m, n], f32>
    %tall = optgen.cmp ge, %rows, %cols : i64, i64
    %red = optgen.select %tall, %c1, %c0 : i1, i64, i64
    %v = optgen.state "v" like %p : !optgen.tensor<[m, n], f32> reduced %red -> !optgen.tensor<[?, ?], f32>
    %x = optgen.if %tall -> (!optgen.tensor<[m, n], f32>) {
      %t = optgen.transpose %g : !optgen.tensor<[m, n], f32>
      %a = optgen.matmul %t, %g : !optgen.tensor<[n, m], f32>, !optgen.tensor<[m, n], f32>
      %b = optgen.matmul %g, %a : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, n], f32>
      optgen.yield %b : !optgen.tensor<[m, n], f32>
    } else {
      optgen.yield %g : !optgen.tensor<[m, n], f32>
    }
    %sq = optgen.mul %x, %x : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    %mean = optgen.reduce mean %sq along %red : !optgen.tensor<[m, n], f32>
    %p1 = optgen.sub %p, %x : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    optgen.update %p1 state(%mean : !optgen.tensor<[?, ?], f32>) : !optgen.tensor<[m, n], f32>
  }
  optgen.group @matrices = @normuon match ["*"] {}
  optgen.param "a" [64, 16] -> @matrices
  optgen.param "b" [16, 64] -> @matrices
  optgen.bucket @matrices [64, 16] ["a"]
  optgen.bucket @matrices [16, 64] ["b"]
}
