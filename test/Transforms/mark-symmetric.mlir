// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-mark-symmetric)))' | FileCheck %s
// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-mark-symmetric{min-size=64})))' | FileCheck %s --check-prefix=LARGE

// X^T X is symmetric; so is b * A + c * (A @ A) of it, once A @ A is
// written A @ A^T; X @ B is not.
// CHECK-LABEL: optgen.rule @polar
// CHECK: %[[A:.*]] = optgen.gemm %p transposed, %p symmetric :
// CHECK-NEXT: %[[B:.*]] = optgen.gemm %[[A]], %[[A]] transposed scaled %c : f32 plus %[[A]] : !optgen.tensor<[n, n], f32> scaled %b : f32 symmetric :
// CHECK-NEXT: optgen.gemm %p, %[[B]] plus %p : !optgen.tensor<[m, n], f32> scaled %a : f32 : !optgen.tensor
optgen.optimizer @o {
  optgen.rule @polar inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %a = optgen.hyper "a" : f32
    %b = optgen.hyper "b" : f32
    %c = optgen.hyper "c" : f32
    %A = optgen.gemm %p transposed, %p : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[n, n], f32>
    %B = optgen.gemm %A, %A scaled %c : f32 plus %A : !optgen.tensor<[n, n], f32> scaled %b : f32 : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
    %X = optgen.gemm %p, %B plus %p : !optgen.tensor<[m, n], f32> scaled %a : f32 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[m, n], f32>
    optgen.update %X : !optgen.tensor<[m, n], f32>
  }
}

// -----

// Elementwise math of symmetric values keeps symmetry; a product of a
// non-symmetric matrix with itself, or accumulating a non-symmetric one,
// is not marked.
// CHECK-LABEL: optgen.rule @elementwise
// CHECK: %[[A:.*]] = optgen.gemm %g, %g transposed symmetric :
// CHECK: %[[S:.*]] = optgen.sqrt
// CHECK: optgen.gemm %[[S]], %[[S]] transposed symmetric :
// CHECK: optgen.gemm %p, %p : !optgen.tensor
// CHECK: optgen.gemm %[[A]], %[[A]] plus %p : !optgen.tensor<[16, 16], f32> scaled %{{.*}} : f32 : !optgen.tensor
// LARGE-LABEL: optgen.rule @elementwise
// LARGE-NOT: symmetric
optgen.optimizer @o {
  optgen.rule @elementwise inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[16, 16], f32>, %g: !optgen.tensor<[16, 16], f32>):
    %A = optgen.gemm %g, %g transposed : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
    %S = optgen.sqrt %A : !optgen.tensor<[16, 16], f32>
    %SS = optgen.gemm %S, %S : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
    %PP = optgen.gemm %p, %p : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
    %one = optgen.constant 1.0 : f32
    %AA = optgen.gemm %A, %A plus %p : !optgen.tensor<[16, 16], f32> scaled %one : f32 : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32> -> !optgen.tensor<[16, 16], f32>
    %u1 = optgen.add %SS, %PP : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
    %u = optgen.add %u1, %AA : !optgen.tensor<[16, 16], f32>, !optgen.tensor<[16, 16], f32>
    optgen.update %u : !optgen.tensor<[16, 16], f32>
  }
}
