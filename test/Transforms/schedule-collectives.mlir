// RUN: %optgen-opt %s -split-input-file --pass-pipeline='builtin.module(optgen.optimizer(optgen-schedule-collectives))' | FileCheck %s

// Three phases: every reduction first; per unit its wait, update and
// gather; the gathers' waits last. The units stay first, as every phase
// uses them.
// CHECK-LABEL: optgen.schedule world_size 2
// CHECK-NEXT: %[[S:.*]] = optgen.unit small ["s"]
// CHECK-NEXT: %[[E:.*]] = optgen.unit flat ["e"]
// CHECK-NEXT: %[[AB:.*]] = optgen.unit owned ["a", "b"]
// CHECK-NEXT: %[[R0:.*]] = optgen.all_reduce %[[S]] payload f32
// CHECK-NEXT: %[[R1:.*]] = optgen.reduce_scatter %[[E]] payload f32
// CHECK-NEXT: %[[R2:.*]] = optgen.reduce_scatter %[[AB]] payload f32
// CHECK-NEXT: optgen.wait %[[R0]]
// CHECK-NEXT: optgen.compute %[[S]]
// CHECK-NEXT: optgen.wait %[[R1]]
// CHECK-NEXT: optgen.compute %[[E]]
// CHECK-NEXT: %[[G1:.*]] = optgen.all_gather %[[E]] payload f32
// CHECK-NEXT: optgen.wait %[[R2]]
// CHECK-NEXT: optgen.compute %[[AB]]
// CHECK-NEXT: %[[G2:.*]] = optgen.all_gather %[[AB]] payload f32
// CHECK-NEXT: optgen.wait %[[G1]]
// CHECK-NEXT: optgen.wait %[[G2]]
optgen.optimizer @o {
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.param "a" [8, 8]
  optgen.param "b" [8, 8]
  optgen.schedule world_size 2 {
    %s = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    %e = optgen.unit flat ["e"] offsets [0] rules [@sgd] counts [50, 50]
    %ab = optgen.unit owned ["a", "b"] offsets [0, 64] rules [@sgd, @sgd] owners [0, 1] counts [64, 64]
    %0 = optgen.all_reduce %s payload f32
    optgen.wait %0
    optgen.compute %s
    %1 = optgen.reduce_scatter %e payload f32
    optgen.wait %1
    optgen.compute %e
    %2 = optgen.all_gather %e payload f32
    optgen.wait %2
    %3 = optgen.reduce_scatter %ab payload f32
    optgen.wait %3
    optgen.compute %ab
    %4 = optgen.all_gather %ab payload f32
    optgen.wait %4
  }
}

// -----

// With globals, the middle phase is two: per unit its wait and partials,
// the partials' gather, its wait and the finish; then per unit its update
// and gather.
// CHECK-LABEL: optgen.schedule world_size 2
// CHECK-NEXT: %[[S:.*]] = optgen.unit small ["s"]
// CHECK-NEXT: %[[E:.*]] = optgen.unit flat ["e"]
// CHECK-NEXT: %[[R0:.*]] = optgen.all_reduce %[[S]] payload f32
// CHECK-NEXT: %[[R1:.*]] = optgen.reduce_scatter %[[E]] payload f32
// CHECK-NEXT: optgen.wait %[[R0]]
// CHECK-NEXT: optgen.partials %[[S]]
// CHECK-NEXT: optgen.wait %[[R1]]
// CHECK-NEXT: optgen.partials %[[E]]
// CHECK-NEXT: %[[P:.*]] = optgen.gather_partials
// CHECK-NEXT: optgen.wait %[[P]]
// CHECK-NEXT: optgen.finish_globals
// CHECK-NEXT: optgen.compute %[[S]]
// CHECK-NEXT: optgen.compute %[[E]]
// CHECK-NEXT: %[[G:.*]] = optgen.all_gather %[[E]] payload f32
// CHECK-NEXT: optgen.wait %[[G]]
optgen.optimizer @o {
  optgen.global @grad_norm inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params sum %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.schedule world_size 2 {
    %s = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    %e = optgen.unit flat ["e"] offsets [0] rules [@sgd] counts [50, 50]
    %0 = optgen.all_reduce %s payload f32
    optgen.wait %0
    optgen.partials %s
    %1 = optgen.reduce_scatter %e payload f32
    optgen.wait %1
    optgen.partials %e
    %2 = optgen.gather_partials
    optgen.wait %2
    optgen.finish_globals
    optgen.compute %s
    optgen.compute %e
    %3 = optgen.all_gather %e payload f32
    optgen.wait %3
  }
}
