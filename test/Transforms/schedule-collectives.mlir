// RUN: %optgen-opt %s --pass-pipeline='builtin.module(optgen.optimizer(optgen-schedule-collectives))' | FileCheck %s

// Three phases: every reduction first; per unit its wait, update and
// gather; the gathers' waits last.
// CHECK-LABEL: optgen.schedule world_size 2
// CHECK-NEXT: %[[R0:.*]] = optgen.all_reduce ["s"]
// CHECK-NEXT: %[[R1:.*]] = optgen.reduce_scatter ["e"]
// CHECK-NEXT: %[[R2:.*]] = optgen.reduce_scatter ["a", "b"]
// CHECK-NEXT: optgen.wait %[[R0]]
// CHECK-NEXT: optgen.compute ["s"]
// CHECK-NEXT: optgen.wait %[[R1]]
// CHECK-NEXT: optgen.compute ["e"]
// CHECK-NEXT: %[[G1:.*]] = optgen.all_gather ["e"]
// CHECK-NEXT: optgen.wait %[[R2]]
// CHECK-NEXT: optgen.compute ["a", "b"]
// CHECK-NEXT: %[[G2:.*]] = optgen.all_gather ["a", "b"]
// CHECK-NEXT: optgen.wait %[[G1]]
// CHECK-NEXT: optgen.wait %[[G2]]
optgen.optimizer @o {
  optgen.schedule world_size 2 {
    %0 = optgen.all_reduce ["s"] elements 3 : !optgen.token
    optgen.wait %0
    optgen.compute ["s"]
    %1 = optgen.reduce_scatter ["e"] counts [50, 50] : !optgen.token
    optgen.wait %1
    optgen.compute ["e"]
    %2 = optgen.all_gather ["e"] counts [50, 50] : !optgen.token
    optgen.wait %2
    %3 = optgen.reduce_scatter ["a", "b"] counts [64, 64] owners [0, 1] : !optgen.token
    optgen.wait %3
    optgen.compute ["a", "b"]
    %4 = optgen.all_gather ["a", "b"] counts [64, 64] : !optgen.token
    optgen.wait %4
  }
}
