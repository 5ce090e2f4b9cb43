// RUN: %optgen-opt %s | %optgen-opt | FileCheck %s
// RUN: %optgen-opt %s --mlir-print-op-generic | %optgen-opt | FileCheck %s

// Globals round-trip: their body (elementwise math on each parameter and
// its gradient, reductions across parameters with their accumulator, the
// scalar math after them), the reads in rules (named after the global),
// and a schedule's globals phase (each unit's partials, their gather, the
// finish before any update).
// CHECK-LABEL: optgen.optimizer @o
// CHECK:      optgen.global @grad_norm inputs ["p", "g"] {
// CHECK-NEXT: ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
// CHECK-NEXT:   %0 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
// CHECK-NEXT:   %1 = optgen.reduce_params sum %0 {accumulator = f64} : !optgen.tensor<*, f32>
// CHECK-NEXT:   %2 = optgen.abs %p : !optgen.tensor<*, f32>
// CHECK-NEXT:   %3 = optgen.reduce_params max %2 : !optgen.tensor<*, f32>
// CHECK-NEXT:   %4 = optgen.sqrt %1 : f32
// CHECK-NEXT:   %5 = optgen.add %4, %3 : f32, f32
// CHECK-NEXT:   optgen.yield %5 : f32
// CHECK-NEXT: }
// CHECK:      %grad_norm = optgen.global_value @grad_norm : f32
// CHECK:      optgen.schedule world_size 2 {
// CHECK-NEXT:   %small = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
// CHECK-NEXT:   %flat = optgen.unit flat ["e"] offsets [0] rules [@sgd] counts [50, 50]
// CHECK-NEXT:   %[[R0:.*]] = optgen.all_reduce %small payload f32
// CHECK-NEXT:   %[[R1:.*]] = optgen.reduce_scatter %flat payload f32
// CHECK-NEXT:   optgen.wait %[[R0]]
// CHECK-NEXT:   optgen.partials %small
// CHECK-NEXT:   optgen.wait %[[R1]]
// CHECK-NEXT:   optgen.partials %flat
// CHECK-NEXT:   %[[P:.*]] = optgen.gather_partials
// CHECK-NEXT:   optgen.wait %[[P]]
// CHECK-NEXT:   optgen.finish_globals
// CHECK-NEXT:   optgen.compute %small
// CHECK-NEXT:   optgen.compute %flat
// CHECK-NEXT:   %[[G:.*]] = optgen.all_gather %flat payload f32
// CHECK-NEXT:   optgen.wait %[[G]]
// CHECK-NEXT: }
optgen.optimizer @o {
  optgen.global @grad_norm inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.mul %g, %g : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
    %1 = optgen.reduce_params sum %0 {accumulator = f64} : !optgen.tensor<*, f32>
    %2 = optgen.abs %p : !optgen.tensor<*, f32>
    %3 = optgen.reduce_params max %2 : !optgen.tensor<*, f32>
    %4 = optgen.sqrt %1 : f32
    %5 = optgen.add %4, %3 : f32, f32
    optgen.yield %5 : f32
  }
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %n = optgen.global_value @grad_norm : f32
    %0 = optgen.div %g, %n : !optgen.tensor<*, f32>, f32
    %1 = optgen.sub %p, %0 : !optgen.tensor<*, f32>, !optgen.tensor<*, f32>
    optgen.update %1 : !optgen.tensor<*, f32>
  }
  optgen.param "s" [3]
  optgen.param "e" [100]
  optgen.schedule world_size 2 {
    %s = optgen.unit small ["s"] offsets [0] rules [@sgd] counts [3]
    %e = optgen.unit flat ["e"] offsets [0] rules [@sgd] counts [50, 50]
    %0 = optgen.all_reduce %s payload f32
    %1 = optgen.reduce_scatter %e payload f32
    optgen.wait %0
    optgen.partials %s
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

// A rank alone: local units' partials, then the finish, nothing gathered.
// CHECK-LABEL: optgen.optimizer @alone
// CHECK:      optgen.schedule world_size 1 {
// CHECK-NEXT:   %local = optgen.unit local ["e"] offsets [0] rules [@sgd] counts []
// CHECK-NEXT:   optgen.partials %local
// CHECK-NEXT:   optgen.finish_globals
// CHECK-NEXT:   optgen.compute %local
// CHECK-NEXT: }
optgen.optimizer @alone {
  optgen.global @peak inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    %0 = optgen.reduce_params max %g : !optgen.tensor<*, f32>
    optgen.yield %0 : f32
  }
  optgen.rule @sgd inputs ["p", "g"] {
  ^bb0(%p: !optgen.tensor<*, f32>, %g: !optgen.tensor<*, f32>):
    optgen.update %p : !optgen.tensor<*, f32>
  }
  optgen.param "e" [100]
  optgen.schedule world_size 1 {
    %e = optgen.unit local ["e"] offsets [0] rules [@sgd] counts []
    optgen.partials %e
    optgen.finish_globals
    optgen.compute %e
  }
}
