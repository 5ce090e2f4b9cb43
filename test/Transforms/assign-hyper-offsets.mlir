// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen.optimizer(optgen.rule(optgen-assign-hyper-offsets)))' | FileCheck %s

// Declaration order, one double per value: a tuple of three takes three.
// CHECK-LABEL: optgen.rule @mixed
// CHECK:       optgen.hyper "lr" {offset = 0 : i64} : f32
// CHECK:       optgen.hyper "betas" default({{.*}}) {offset = 1 : i64} : tuple<f32, f32, f32>
// CHECK:       optgen.hyper "steps" default(5 : i64) {offset = 4 : i64} : i64
// CHECK:       optgen.hyper "eps" default({{.*}}) {offset = 5 : i64} : f32
optgen.optimizer @o {
  optgen.rule @mixed inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" : f32
    %betas = optgen.hyper "betas" default([9.000000e-01 : f32, 9.500000e-01 : f32, 9.900000e-01 : f32]) : tuple<f32, f32, f32>
    %steps = optgen.hyper "steps" default(5 : i64) : i64
    %eps = optgen.hyper "eps" default(1.000000e-08 : f32) : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

// A rule laid out already (IR of a later stage read back) keeps its layout,
// even one that is not in declaration order.
// CHECK-LABEL: optgen.rule @kept
// CHECK:       optgen.hyper "lr" {offset = 2 : i64} : f32
// CHECK:       optgen.hyper "wd" {offset = 0 : i64} : tuple<f32, f32>
optgen.optimizer @o {
  optgen.rule @kept inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" {offset = 2 : i64} : f32
    %wd = optgen.hyper "wd" {offset = 0 : i64} : tuple<f32, f32>
    optgen.update %p : !optgen.tensor<*, f32>
  }
}

// -----

// Each rule has its own array.
// CHECK-LABEL: optgen.rule @first
// CHECK:       optgen.hyper "lr" {offset = 0 : i64} : f32
// CHECK-LABEL: optgen.rule @second
// CHECK:       optgen.hyper "momentum" {offset = 0 : i64} : f32
// CHECK:       optgen.hyper "lr" {offset = 1 : i64} : f32
optgen.optimizer @o {
  optgen.rule @first inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %lr = optgen.hyper "lr" : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @second inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %momentum = optgen.hyper "momentum" : f32
    %lr = optgen.hyper "lr" : f32
    optgen.update %p : !optgen.tensor<*, f32>
  }
}
