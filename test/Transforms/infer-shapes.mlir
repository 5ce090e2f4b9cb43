// RUN: %optgen-opt %s --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(canonicalize,optgen-infer-shapes)))' | FileCheck %s

// Once the axis folds to a constant (the shape is known), the state, the
// reduction and everything computed from it lose their `?`s.
// CHECK-LABEL: optgen.rule @r
// CHECK: %v = optgen.state "v" like %p : !optgen.tensor<[8, 4], f32> reduced %{{.*}} -> !optgen.tensor<[8, 1], f32>
// CHECK: %[[MEAN:.*]] = optgen.reduce mean %{{.*}} along %{{.*}} : !optgen.tensor<[8, 4], f32>
// CHECK: %[[S:.*]] = optgen.rsqrt %[[MEAN]] : !optgen.tensor<[8, 1], f32>
// CHECK: optgen.mul %p, %[[S]] : !optgen.tensor<[8, 4], f32>, !optgen.tensor<[8, 1], f32>
// CHECK: optgen.update %{{.*}} state(%[[MEAN]] : !optgen.tensor<[8, 1], f32>)
optgen.optimizer @o {
  optgen.rule @r inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[8, 4], f32>, %g: !optgen.tensor<[8, 4], f32>):
    %c0 = optgen.constant 0 : i64
    %c1 = optgen.constant 1 : i64
    %cm2 = optgen.constant -2 : i64
    %cm1 = optgen.constant -1 : i64
    %rows = optgen.dim %p, %cm2 : !optgen.tensor<[8, 4], f32>
    %cols = optgen.dim %p, %cm1 : !optgen.tensor<[8, 4], f32>
    %tall = optgen.cmp ge, %rows, %cols : i64, i64
    %red = optgen.select %tall, %c1, %c0 : i1, i64, i64
    %v = optgen.state "v" like %p : !optgen.tensor<[8, 4], f32> reduced %red -> !optgen.tensor<[?, ?], f32>
    %sq = optgen.mul %g, %g : !optgen.tensor<[8, 4], f32>, !optgen.tensor<[8, 4], f32>
    %mean = optgen.reduce mean %sq along %red : !optgen.tensor<[8, 4], f32>
    %s = optgen.rsqrt %mean : !optgen.tensor<[?, ?], f32>
    %u = optgen.mul %p, %s : !optgen.tensor<[8, 4], f32>, !optgen.tensor<[?, ?], f32>
    %p1 = optgen.sub %p, %u : !optgen.tensor<[8, 4], f32>, !optgen.tensor<[8, 4], f32>
    optgen.update %p1 state(%mean : !optgen.tensor<[?, ?], f32>) : !optgen.tensor<[8, 4], f32>
  }
}
