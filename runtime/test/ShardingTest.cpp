//===- ShardingTest.cpp - The ZeRO-2 sharding planner ---------------------===//

#include "optgen/runtime/Sharding.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace optgen::runtime;

namespace {

/// One group's bucket per distinct shape, as planStep makes them.
Plan bucketsOf(const std::vector<ShardParam> &params) {
  std::vector<ParamDesc> descs;
  for (size_t i = 0; i < params.size(); ++i)
    descs.push_back({"p" + std::to_string(i), params[i].shape});
  return planStep(descs, {{"all", "rule", {"*"}, -1, nullptr}});
}

const ShardUnit *unitOf(const ShardPlan &plan, ShardUnit::Kind kind) {
  for (const ShardUnit &unit : plan.units)
    if (unit.kind == kind)
      return &unit;
  return nullptr;
}

TEST(ShardingTest, TwentySixMatricesOverEightRanksLeaveNoRankIdle) {
  // nanochat's DistMuonAdamW chunks ceil(26 / 8) = 4 matrices per rank and
  // leaves the last rank nothing; longest job first spreads them 4,4,3,...
  std::vector<ShardParam> params(26, ShardParam{{768, 768}, false});
  ShardPlan plan = planShards(bucketsOf(params), params, 8, 1024);
  const ShardUnit *owned = unitOf(plan, ShardUnit::Kind::Owned);
  ASSERT_NE(owned, nullptr);
  std::vector<int> perRank(8, 0);
  for (int rank : owned->owner)
    ++perRank[rank];
  for (int count : perRank) {
    EXPECT_GE(count, 3);
    EXPECT_LE(count, 4);
  }
  EXPECT_NEAR(ownedImbalance(plan), 4.0 / (26.0 / 8.0), 1e-9);
  // Packed by owner: each rank's part is the sum of its matrices.
  for (int r = 0; r < 8; ++r)
    EXPECT_EQ(owned->counts[r], perRank[r] * 768 * 768);
}

TEST(ShardingTest, MixedShapesAreBalancedTogether) {
  std::vector<ShardParam> params = {{{1024, 256}, false}, {{256, 1024}, false},
                                    {{256, 256}, false},  {{256, 256}, false},
                                    {{256, 256}, false},  {{256, 256}, false}};
  ShardPlan plan = planShards(bucketsOf(params), params, 2, 1024);
  // 2 x 1024*256*256 against 4 x 256^3: equal cost on each rank.
  EXPECT_NEAR(ownedImbalance(plan), 1.0, 1e-9);
}

TEST(ShardingTest, ElementwiseParametersSplitWhateverTheirFirstDimension) {
  std::vector<ShardParam> params = {{{100, 13}, true}, {{7, 3, 5}, true}};
  ShardPlan plan = planShards(bucketsOf(params), params, 3, 16);
  const ShardUnit *flat = unitOf(plan, ShardUnit::Kind::Flat);
  ASSERT_NE(flat, nullptr);
  int64_t total = 100 * 13 + 7 * 3 * 5;
  ASSERT_EQ(flat->counts.size(), 3u);
  for (int64_t count : flat->counts)
    EXPECT_EQ(count, (total + 2) / 3); // padded to a multiple of 3
}

TEST(ShardingTest, SmallTensorsShareOneCollective) {
  std::vector<ShardParam> params = {{{3}, true}, {{4, 4}, false}, {{10}, true},
                                    {{64, 64}, true}};
  ShardPlan plan = planShards(bucketsOf(params), params, 4, 1024);
  const ShardUnit *small = unitOf(plan, ShardUnit::Kind::Small);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->params.size(), 3u);
  EXPECT_EQ(small->counts[0], 3 + 16 + 10);
  EXPECT_EQ(plan.units.size(), 2u); // the small ones, then the flat one
}

} // namespace
