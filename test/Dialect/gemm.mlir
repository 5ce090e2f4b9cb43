// RUN: %optgen-opt %s | %optgen-opt | FileCheck %s
// RUN: %optgen-opt %s --mlir-print-op-generic | %optgen-opt | FileCheck %s

// CHECK-LABEL: optgen.rule @polar
// CHECK: optgen.gemm %p transposed, %p symmetric : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[n, n], f32>
// CHECK: optgen.gemm %{{.*}}, %{{.*}} transposed scaled %c : f32 plus %{{.*}} : !optgen.tensor<[n, n], f32> scaled %b : f32 symmetric : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
// CHECK: optgen.gemm %p, %{{.*}} plus %p : !optgen.tensor<[m, n], f32> scaled %a : f32 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[m, n], f32>
// CHECK: optgen.gemm %p, %g transposed scaled %a : f32 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, m], bf16>
optgen.optimizer @o {
  optgen.rule @polar inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %a = optgen.hyper "a" : f32
    %b = optgen.hyper "b" : f32
    %c = optgen.hyper "c" : f32
    %A = optgen.gemm %p transposed, %p symmetric : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[n, n], f32>
    %B = optgen.gemm %A, %A transposed scaled %c : f32 plus %A : !optgen.tensor<[n, n], f32> scaled %b : f32 symmetric : !optgen.tensor<[n, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[n, n], f32>
    %X = optgen.gemm %p, %B plus %p : !optgen.tensor<[m, n], f32> scaled %a : f32 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[n, n], f32> -> !optgen.tensor<[m, n], f32>
    %G = optgen.gemm %p, %g transposed scaled %a : f32 : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, m], bf16>
    optgen.update %X : !optgen.tensor<[m, n], f32>
  }
}
