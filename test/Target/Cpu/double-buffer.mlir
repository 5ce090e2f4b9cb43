// RUN: %optgen-translate --optgen-to-cpu %s | FileCheck %s --strict-whitespace

// A double-buffered loop (optgen.next_buffers, from optgen-assign-buffers):
// the body makes the next value in the other slot, and the two slots trade
// places at the end of each iteration instead of a copy; their pointers are
// variables, the carried tile follows.

// CHECK-LABEL: void step_loop(const optgen::runtime::RuleCall &call) {
// CHECK:         float *slot0 = call.workspace + offsets[0];
// CHECK-NEXT:    float *slot1 = call.workspace + offsets[1];
// CHECK-NEXT:    float *const slot2 = call.workspace + offsets[2];
// CHECK:         optgen::runtime::Tile carried{slot0, t.rows, t.cols};
// CHECK-NEXT:    for (int64_t row_ = 0; row_ < std::min<int64_t>(int64_t{3}, 1); ++row_) {
// CHECK-NEXT:      const float a = kTable0[row_][0];
// CHECK:           optgen::runtime::Tile t_1{slot1, R_1, C_1};
// CHECK:           carried.data = slot1;
// CHECK-NEXT:      slot1 = slot0;
// CHECK-NEXT:      slot0 = carried.data;
// CHECK-NEXT:    }
// CHECK-NOT:     copyTile
// CHECK:         optgen::runtime::Tile t_2{slot2, R_2, C_2};
module attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536, supports = "shard_groups | skip_nonfinite">} {
optgen.optimizer @o {
  optgen.rule @loop inputs ["p", "g"] attributes {optgen.workspace = [#optgen.slot<[m, n], f32>, #optgen.slot<[m, n], f32>, #optgen.slot<[m, n], f32>]} {
  ^bb0(%p: !optgen.tensor<[m, n], f32>, %g: !optgen.tensor<[m, n], f32>):
    %steps = optgen.constant 3 : i64
    %x0 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.neg %g : !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    } {optgen.buffers = [#optgen.buffer<workspace, 0>]}
    %xn = optgen.for_table %steps over dense<[[2.0]]> : tensor<1x1xf64> iter %x0 : !optgen.tensor<[m, n], f32> -> !optgen.tensor<[m, n], f32> attributes {optgen.buffers = [#optgen.buffer<workspace, 0>], optgen.next_buffers = [#optgen.buffer<workspace, 1>]} {
    ^bb0(%a: f32, %x: !optgen.tensor<[m, n], f32>):
      %y = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
        %0 = optgen.mul %x, %a : !optgen.tensor<[m, n], f32>, f32
        optgen.yield %0 : !optgen.tensor<[m, n], f32>
      } {optgen.buffers = [#optgen.buffer<workspace, 1>]}
      optgen.yield %y : !optgen.tensor<[m, n], f32>
    }
    %p1 = optgen.kernel -> (!optgen.tensor<[m, n], f32>) {
      %0 = optgen.sub %p, %xn : !optgen.tensor<[m, n], f32>, !optgen.tensor<[m, n], f32>
      optgen.yield %0 : !optgen.tensor<[m, n], f32>
    } {optgen.buffers = [#optgen.buffer<workspace, 2>]}
    optgen.update %p1 : !optgen.tensor<[m, n], f32>
  }
  optgen.group @all = @loop match ["*"] {}
  optgen.distribute none
}
}
