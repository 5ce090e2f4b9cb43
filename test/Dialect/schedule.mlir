// RUN: %optgen-opt %s | %optgen-opt | FileCheck %s
// RUN: %optgen-opt %s --mlir-print-op-generic | %optgen-opt | FileCheck %s

// A schedule round-trips: its units (each kind, with offsets, rules, owners
// and counts), the collectives with their payload dtype, the waits and the
// updates. Units are named after their kind.
// CHECK-LABEL: optgen.optimizer @o
// CHECK:      optgen.schedule world_size 2 {
// CHECK-NEXT:   %small = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
// CHECK-NEXT:   %flat = optgen.unit flat ["e", "f"] offsets [0, 100] rules [@sgd, @sgd] counts [51, 51]
// CHECK-NEXT:   %owned = optgen.unit owned ["a", "b", "c"] offsets [0, 64, 128] rules [@ortho, @ortho, @ortho] owners [0, 0, 1] counts [128, 64]
// CHECK-NEXT:   %[[R0:.*]] = optgen.all_reduce %small payload f32
// CHECK-NEXT:   %[[R1:.*]] = optgen.reduce_scatter %flat payload bf16
// CHECK-NEXT:   %[[R2:.*]] = optgen.reduce_scatter %owned payload f32
// CHECK-NEXT:   optgen.wait %[[R0]]
// CHECK-NEXT:   optgen.compute %small
// CHECK-NEXT:   optgen.wait %[[R1]]
// CHECK-NEXT:   optgen.compute %flat
// CHECK-NEXT:   %[[G1:.*]] = optgen.all_gather %flat payload bf16
// CHECK-NEXT:   optgen.wait %[[R2]]
// CHECK-NEXT:   optgen.compute %owned
// CHECK-NEXT:   %[[G2:.*]] = optgen.all_gather %owned payload f32
// CHECK-NEXT:   optgen.wait %[[G1]]
// CHECK-NEXT:   optgen.wait %[[G2]]
// CHECK-NEXT: }
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "f" [1]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.param "c" [8, 8]
  optgen.schedule world_size 2 {
    %s = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    %e = optgen.unit flat ["e", "f"] offsets [0, 100] rules [@sgd, @sgd] counts [51, 51]
    %m = optgen.unit owned ["a", "b", "c"] offsets [0, 64, 128] rules [@ortho, @ortho, @ortho] owners [0, 0, 1] counts [128, 64]
    %0 = optgen.all_reduce %s payload f32
    %1 = optgen.reduce_scatter %e payload bf16
    %2 = optgen.reduce_scatter %m payload f32
    optgen.wait %0
    optgen.compute %s
    optgen.wait %1
    optgen.compute %e
    %3 = optgen.all_gather %e payload bf16
    optgen.wait %2
    optgen.compute %m
    %4 = optgen.all_gather %m payload f32
    optgen.wait %3
    optgen.wait %4
  }
}

// Hybrid sharding: groups of 2 of 6 ranks; counts and owners name the 2
// positions of a group.
// CHECK-LABEL: optgen.optimizer @hybrid
// CHECK:      optgen.schedule world_size 6 group_size 2 {
// CHECK-NEXT:   %owned = optgen.unit owned ["a", "b"] offsets [0, 64] rules [@ortho, @ortho] owners [0, 1] counts [64, 64]
optgen.optimizer @hybrid {
  optgen.rule @ortho inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    optgen.update %p : !optgen.tensor<[m, n], f32>
  }
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 6 group_size 2 {
    %m = optgen.unit owned ["a", "b"] offsets [0, 64] rules [@ortho, @ortho] owners [0, 1] counts [64, 64]
    %0 = optgen.reduce_scatter %m payload f32
    optgen.wait %0
    optgen.compute %m
    %1 = optgen.all_gather %m payload f32
    optgen.wait %1
  }
}
