// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-fold-gemm-accumulate)))' | FileCheck %s

// Polar Express: `b * A + c * (A @ A)` and `a * X + X @ B` are one gemm each.
// CHECK-LABEL: optgen.rule @polar
// CHECK: %[[A:.*]] = optgen.gemm %p transposed, %p :
// CHECK-NEXT: %[[B:.*]] = optgen.gemm %[[A]], %[[A]] scaled %c : f32 plus %[[A]] : !optgen.tensor<[n, n], f32> scaled %b : f32 :
// CHECK-NEXT: %[[X:.*]] = optgen.gemm %p, %[[B]] plus %p : !optgen.tensor<[m, n], f32> scaled %a : f32 :
// CHECK-NEXT: optgen.update %[[X]]
optgen.optimizer @o {
  optgen.rule @polar inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %a = optgen.hyper "a" : f32
    %b = optgen.hyper "b" : f32
    %c = optgen.hyper "c" : f32
    %A = optgen.gemm %p transposed, %p : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[n, n], f32>
    %AA = optgen.gemm %A, %A : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
    %cAA = optgen.mul %c, %AA : f32, !optgen.tensor<[n, n], f32>
    %bA = optgen.mul %b, %A : f32, !optgen.tensor<[n, n], f32>
    %B = optgen.add %bA, %cAA : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32>
    %XB = optgen.gemm %p, %B : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[m, n], f32>
    %aX = optgen.mul %a, %p : f32, !optgen.tensor<[m, n], f32>
    %X = optgen.add %aX, %XB : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
    optgen.update %X : !optgen.tensor<[m, n], f32>
  }
}

// -----

// A difference negates the subtracted side's scale; an unscaled
// accumulator gets beta = 1.
// CHECK-LABEL: optgen.rule @minus
// CHECK: %[[ONE:.*]] = optgen.constant 1.000000e+00 : f32
// CHECK: %[[NEG:.*]] = optgen.neg %[[ONE]] : f32
// CHECK: optgen.gemm %g, %g transposed scaled %[[NEG]] : f32 plus %p : !optgen.tensor<[n, n], f32> scaled %{{.*}} : f32 :
optgen.optimizer @o {
  optgen.rule @minus inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[n, n], f32>, %g: !optgen.tensor<[n, n], f32>):
    %G = optgen.gemm %g, %g transposed : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
    %u = optgen.sub %p, %G : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32>
    optgen.update %u : !optgen.tensor<[n, n], f32>
  }
}

// -----

// Not folded: the product has another use; an integer scale.
// CHECK-LABEL: optgen.rule @kept
// CHECK: %[[G:.*]] = optgen.gemm %g, %g : !optgen.tensor
// CHECK: optgen.add %p, %[[G]]
// CHECK: optgen.add %[[G]], %p
// CHECK: %[[K:.*]] = optgen.gemm %{{.*}}, %{{.*}} : !optgen.tensor
// CHECK: %[[TWOK:.*]] = optgen.mul %{{.*}}, %[[K]]
// CHECK: optgen.add %[[TWOK]], %p
optgen.optimizer @o {
  optgen.rule @kept inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[n, n], f32>, %g: !optgen.tensor<[n, n], f32>):
    %G = optgen.gemm %g, %g : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
    %u = optgen.add %p, %G : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32>
    %v = optgen.add %G, %p : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32>
    %K = optgen.gemm %u, %v : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
    %two = optgen.constant 2 : i64
    %twoK = optgen.mul %two, %K : i64, !optgen.tensor<[n, n], f32>
    %w = optgen.add %twoK, %p : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32>
    optgen.update %w : !optgen.tensor<[n, n], f32>
  }
}
