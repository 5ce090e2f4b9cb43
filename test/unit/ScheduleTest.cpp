//===- ScheduleTest.cpp - The schedule IR carries the planner's decisions -===//
//
// The `optgen.unit` tables of a compiled schedule are what the runtime will
// execute, so they must carry exactly what the runtime's sharding planner
// decides. For random nanochat-like models on several world sizes, the plan
// read back from the IR (readShardPlan) is compared, field by field, with
// the planner's own answer for the same parameters.
//
//===----------------------------------------------------------------------===//

#include "optgen/Driver/Spec.h"
#include "optgen/Pipelines/Pipelines.h"
#include "optgen/Transforms/Planning.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

using namespace optgen;

namespace {

/// A nanochat-like model: `layers` layers of width `n` (some matrices of
/// other sizes), a vocabulary of `vocab`, value embeddings on odd layers.
std::vector<std::pair<std::string, std::vector<int64_t>>>
randomModel(std::mt19937 &random) {
  auto pick = [&](std::initializer_list<int64_t> choices) {
    std::vector<int64_t> all(choices);
    return all[std::uniform_int_distribution<size_t>(0, all.size() - 1)(
        random)];
  };
  int64_t n = pick({8, 16, 32, 48}), vocab = pick({64, 100, 640});
  int64_t layers = pick({1, 2, 5, 9});
  std::vector<std::pair<std::string, std::vector<int64_t>>> model{
      {"transformer.wte.weight", {vocab, n}},
      {"lm_head.weight", {vocab, n}},
      {"resid_lambdas", {layers}},
      {"x0_lambdas", {layers}}};
  for (int64_t i = 0; i < layers; ++i) {
    std::string layer = "transformer.h." + std::to_string(i);
    for (const char *name : {"c_q", "c_k", "c_v", "c_proj"})
      model.push_back(
          {layer + ".attn." + name + ".weight", {pick({n, n / 2}), n}});
    model.push_back({layer + ".mlp.c_fc.weight", {4 * n, n}});
    model.push_back({layer + ".mlp.c_proj.weight", {n, 4 * n}});
    if (i % 2)
      model.push_back({"value_embeds." + std::to_string(i) + ".weight",
                       {vocab, n}});
  }
  std::shuffle(model.begin() + 2, model.end(), random);
  return model;
}

TEST(Schedule, UnitsAreThePlannersDecisions) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 8; ++trial) {
    auto model = randomModel(random);
    // World sizes, and shard groups (hybrid sharding; 0: one group).
    for (auto [worldSize, shardGroup] : std::vector<std::pair<int, int>>{
             {1, 0}, {2, 0}, {3, 0}, {5, 0}, {8, 0}, {64, 0}, {8, 2}, {64, 8}}) {
      SCOPED_TRACE("trial " + std::to_string(trial) + ", " +
                   std::to_string(worldSize) + " ranks in groups of " +
                   std::to_string(shardGroup));
      std::unique_ptr<LoadedSpec> loaded =
          loadSpec(OPTGEN_EXAMPLES_DIR "/nanochat.opt", {}, "");
      ASSERT_TRUE(loaded);
      auto optimizer = *loaded->module->getOps<OptimizerOp>().begin();
      mlir::OpBuilder builder(&loaded->context);
      builder.setInsertionPoint(
          *optimizer.getBlock().getOps<DistributeOp>().begin());
      for (const auto &[name, shape] : model)
        builder.create<ParamOp>(builder.getUnknownLoc(), name, shape,
                                mlir::FlatSymbolRefAttr());
      mlir::PassManager pm(&loaded->context);
      PlanPipelineOptions options;
      options.worldSize = worldSize;
      options.shardGroup = shardGroup;
      buildPlanPipeline(pm, options);
      ASSERT_TRUE(mlir::succeeded(pm.run(*loaded->module)));

      runtime::Plan plan;
      mlir::FailureOr<runtime::ShardPlan> planned =
          planShardsFor(optimizer, worldSize, plan, shardGroup);
      ASSERT_TRUE(mlir::succeeded(planned));
      auto schedule = *optimizer.getBlock().getOps<ScheduleOp>().begin();
      if (worldSize == 1) {
        // A rank alone steps each bucket where it is.
        auto units = llvm::to_vector(schedule.getBlock().getOps<UnitOp>());
        ASSERT_EQ(units.size(), plan.buckets.size());
        auto params = llvm::to_vector(optimizer.getBlock().getOps<ParamOp>());
        for (auto [unit, bucket] : llvm::zip(units, plan.buckets)) {
          EXPECT_EQ(unit.getKind(), UnitKind::local);
          EXPECT_TRUE(unit.getCounts().empty());
          std::vector<std::string> want, got;
          for (size_t p : bucket.params)
            want.push_back(params[p].getName().str());
          for (llvm::StringRef name :
               unit.getParams().getAsValueRange<mlir::StringAttr>())
            got.push_back(name.str());
          EXPECT_EQ(got, want);
        }
        continue;
      }
      runtime::ShardPlan read = readShardPlan(schedule);
      EXPECT_EQ(read.worldSize, planned->worldSize);
      EXPECT_EQ(read.groupSize, planned->groupSize);
      EXPECT_EQ(read.groupSize, shardGroup ? shardGroup : worldSize);
      EXPECT_EQ(read.ownedCost, planned->ownedCost);
      ASSERT_EQ(read.units.size(), planned->units.size());
      for (size_t u = 0; u < read.units.size(); ++u) {
        EXPECT_EQ(read.units[u].kind, planned->units[u].kind) << "unit " << u;
        EXPECT_EQ(read.units[u].params, planned->units[u].params)
            << "unit " << u;
        EXPECT_EQ(read.units[u].owner, planned->units[u].owner)
            << "unit " << u;
        EXPECT_EQ(read.units[u].counts, planned->units[u].counts)
            << "unit " << u;
      }
      // Each parameter runs its bucket's specialised rule.
      llvm::StringMap<llvm::StringRef> bucketRule;
      for (BucketOp bucket : optimizer.getBlock().getOps<BucketOp>())
        for (llvm::StringRef name :
             bucket.getParams().getAsValueRange<mlir::StringAttr>())
          bucketRule[name] = bucket.getRule().value();
      for (UnitOp unit : schedule.getBlock().getOps<UnitOp>())
        for (auto [name, rule] :
             llvm::zip(unit.getParams().getAsValueRange<mlir::StringAttr>(),
                       unit.getRules().getAsRange<mlir::FlatSymbolRefAttr>()))
          EXPECT_EQ(rule.getValue(), bucketRule.lookup(name)) << name.str();
    }
  }
}

} // namespace
