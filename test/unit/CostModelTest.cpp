//===- CostModelTest.cpp - The step simulation's model, by hand ------------===//
//
// runtime/CostModel.h on cases small enough to work out on paper: the
// compute and ring-collective formulas, and a two-rank timeline with its
// compute, exposed communication and idle time.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/CostModel.h"

#include <gtest/gtest.h>

using namespace optgen::runtime;

namespace {

/// A machine with round figures: products 1e12 flop/s (0.5 for a symmetric
/// one), memory 1e9 B/s, 1 ms a launch; links 100 B/s and 1 s a step in
/// nodes of 8 ranks, 10 B/s and 2 s between.
Machine roundMachine() {
  Machine m;
  m.name = "round";
  m.gemm16 = 1e12;
  m.gemm32 = 0.5e12;
  m.symmetricCost = 0.5;
  m.memory = 1e9;
  m.launchOverhead = 1e-3;
  m.linkBandwidth = 100;
  m.linkLatency = 1;
  m.netBandwidth = 10;
  m.netLatency = 2;
  m.ranksPerNode = 8;
  return m;
}

TEST(CostModel, Presets) {
  for (const char *name :
       {"h100-nvlink", "h100-ib", "h200-nvlink", "h200-ib", "cpu"}) {
    const Machine *m = findMachine(name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_GT(m->gemm16, 0);
    EXPECT_GT(m->memory, 0);
    EXPECT_GT(m->linkBandwidth, 0);
  }
  EXPECT_EQ(findMachine("h100"), nullptr);
  // InfiniBand between nodes of 8; NVLink everywhere.
  EXPECT_EQ(findMachine("h100-ib")->ranksPerNode, 8);
  EXPECT_LT(findMachine("h100-ib")->netBandwidth,
            findMachine("h100-ib")->linkBandwidth);
  EXPECT_EQ(findMachine("h200-nvlink")->ranksPerNode, 0);
}

TEST(CostModel, Compute) {
  Machine m = roundMachine();
  Work work;
  work.flops16 = 1e12;          // 1 s
  work.symmetricFlops16 = 2e12; // 2e12 * 0.5 / 1e12 = 1 s
  work.flops32 = 0.5e12;        // 1 s
  work.bytes = 2e9;             // 2 s
  work.launches = 1000;         // 1 s
  EXPECT_DOUBLE_EQ(computeSeconds(m, work), 6);
  // Half: flops and bytes scale (2.5 s), launches do not (1 s).
  EXPECT_DOUBLE_EQ(computeSeconds(m, work.scaled(0.5)), 3.5);
}

TEST(CostModel, RingCollectives) {
  Machine m = roundMachine();
  // 4 ranks of one node, 400 bytes: 3 steps of 1 s, 3/4 of 400 B at 100 B/s.
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(m, CollectiveKind::ReduceScatter, {0, 1, 2, 3}, 400),
      6);
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(m, CollectiveKind::AllGather, {4, 5, 6, 7}, 400), 6);
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(m, CollectiveKind::AllReduce, {0, 1, 2, 3}, 400), 12);
  // Across nodes: the network's figures (1 step of 2 s, 1/2 of 40 B at 10).
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(m, CollectiveKind::ReduceScatter, {3, 8}, 40), 4);
  // Alone: nothing to do.
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(m, CollectiveKind::AllReduce, {5}, 1000), 0);
  // Every rank on one node.
  m.ranksPerNode = 0;
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(m, CollectiveKind::ReduceScatter, {3, 800}, 200), 2);
}

// Two ranks: a reduce-scatter (1 s), rank 0 computes 3 s and rank 1 1 s,
// then an all-gather (1 s) that starts when rank 0, the later, launches it.
//
//   rank 0: RS [0,1]  compute [1,4]  AG [4,5]
//   rank 1: RS [0,1]  compute [1,2]  waits  AG [4,5]
TEST(CostModel, TwoRankTimeline) {
  Machine m = roundMachine();
  m.linkBandwidth = 0; // latency only: 1 s a ring step
  SimStep step;
  step.worldSize = 2;
  step.collectives = {
      {CollectiveKind::ReduceScatter, {{{0, 1}, 100}}},
      {CollectiveKind::AllGather, {{{0, 1}, 100}}},
  };
  step.compute = {{3, 1}};
  step.program = {{SimStep::Op::Launch, 0},
                  {SimStep::Op::Wait, 0},
                  {SimStep::Op::Compute, 0},
                  {SimStep::Op::Launch, 1},
                  {SimStep::Op::Wait, 1}};
  SimResult r = simulateStep(step, m);
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(r.stepSeconds, 5);
  EXPECT_DOUBLE_EQ(r.ranks[0].compute, 3);
  EXPECT_DOUBLE_EQ(r.ranks[0].exposed, 2);
  EXPECT_DOUBLE_EQ(r.ranks[0].idle, 0);
  EXPECT_DOUBLE_EQ(r.ranks[1].compute, 1);
  EXPECT_DOUBLE_EQ(r.ranks[1].exposed, 2);
  EXPECT_DOUBLE_EQ(r.ranks[1].idle, 2);
  EXPECT_DOUBLE_EQ(r.imbalance, 1.5);
  EXPECT_DOUBLE_EQ(r.maxIdle, 2);
  EXPECT_DOUBLE_EQ(r.meanIdle, 1);
}

// Collectives run in launch order on one communication stream: the second
// reduction waits for the first, and compute of the first unit hides it.
TEST(CostModel, OverlapAndOrder) {
  Machine m = roundMachine();
  m.linkBandwidth = 0;
  SimStep step;
  step.worldSize = 2;
  step.collectives = {
      {CollectiveKind::ReduceScatter, {{{0, 1}, 1}}}, // [0, 1]
      {CollectiveKind::ReduceScatter, {{{0, 1}, 1}}}, // [1, 2]
  };
  step.compute = {{1, 1}, {1, 1}};
  step.program = {{SimStep::Op::Launch, 0}, {SimStep::Op::Launch, 1},
                  {SimStep::Op::Wait, 0},   {SimStep::Op::Compute, 0},
                  {SimStep::Op::Wait, 1},   {SimStep::Op::Compute, 1}};
  SimResult r = simulateStep(step, m);
  // Compute [1, 2] and [2, 3]; the second reduction ran under the first
  // compute.
  EXPECT_DOUBLE_EQ(r.stepSeconds, 3);
  EXPECT_DOUBLE_EQ(r.ranks[0].exposed, 1);
  EXPECT_DOUBLE_EQ(r.ranks[0].idle, 0);
}

// Instances over disjoint groups run side by side; a rank in no instance
// is done at once.
TEST(CostModel, GroupsAndBystanders) {
  Machine m = roundMachine();
  m.linkBandwidth = 0;
  SimStep step;
  step.worldSize = 5;
  step.collectives = {{CollectiveKind::AllGather,
                       {{{0, 1}, 1}, {{2, 3}, 1}}}}; // rank 4 takes no part
  step.compute = {{0, 0, 0, 0, 2}};
  step.program = {{SimStep::Op::Launch, 0},
                  {SimStep::Op::Wait, 0},
                  {SimStep::Op::Compute, 0}};
  SimResult r = simulateStep(step, m);
  EXPECT_DOUBLE_EQ(r.ranks[0].end, 1);
  EXPECT_DOUBLE_EQ(r.ranks[3].end, 1);
  EXPECT_DOUBLE_EQ(r.ranks[4].end, 2);
  EXPECT_DOUBLE_EQ(r.stepSeconds, 2);
  EXPECT_DOUBLE_EQ(r.ranks[0].idle, 1);
}

TEST(CostModel, NotAStep) {
  Machine m = roundMachine();
  SimStep step;
  step.worldSize = 1;
  step.collectives = {{CollectiveKind::AllReduce, {}}};
  step.program = {{SimStep::Op::Wait, 0}};
  EXPECT_TRUE(simulateStep(step, m).ranks.empty());
  step.program = {{SimStep::Op::Launch, 0}, {SimStep::Op::Launch, 0}};
  EXPECT_TRUE(simulateStep(step, m).ranks.empty());
}

} // namespace
