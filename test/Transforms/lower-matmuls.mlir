// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-lower-matmuls)))' | FileCheck %s

// A transposed operand is read through the gemm's flag; the transpose that
// only fed the product is gone.
// CHECK-LABEL: optgen.rule @gram
// CHECK-NOT: optgen.transpose
// CHECK: %[[A:.*]] = optgen.gemm %p transposed, %g : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[n, n], f32>
// CHECK: optgen.gemm %g, %[[A]] : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[m, n], f32>
// CHECK-NOT: optgen.matmul
optgen.optimizer @o {
  optgen.rule @gram inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %pt = optgen.transpose %p : !optgen.tensor<[m, n], f32>
    %a = optgen.matmul %pt, %g : !optgen.tensor<[n, m], f32>, !optgen.tensor<[m, n], f32>
    %u = optgen.matmul %g, %a : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, n], f32>
    optgen.update %u : !optgen.tensor<[m, n], f32>
  }
}

// -----

// Both sides transposed; a transpose with another use stays.
// CHECK-LABEL: optgen.rule @both
// CHECK: %[[T:.*]] = optgen.transpose %g
// CHECK: optgen.gemm %p transposed, %g transposed : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
// CHECK: optgen.add %{{.*}}, %[[T]]
optgen.optimizer @o {
  optgen.rule @both inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[n, n], f32>, %g: !optgen.tensor<[n, n], f32>):
    %pt = optgen.transpose %p : !optgen.tensor<[n, n], f32>
    %gt = optgen.transpose %g : !optgen.tensor<[n, n], f32>
    %a = optgen.matmul %pt, %gt : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32>
    %u = optgen.add %a, %gt : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32>
    optgen.update %u : !optgen.tensor<[n, n], f32>
  }
}
