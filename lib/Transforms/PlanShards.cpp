//===- PlanShards.cpp - The ZeRO-2 step of known parameters ---------------===//

#include "optgen/Transforms/Planning.h"

#include "optgen/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace optgen {
#define GEN_PASS_DEF_PLANSHARDS
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

struct PlanShardsPass : optgen::impl::PlanShardsBase<PlanShardsPass> {
  using PlanShardsBase::PlanShardsBase;

  void runOnOperation() override {
    OptimizerOp optimizer = getOperation();
    runtime::Plan plan;
    FailureOr<runtime::ShardPlan> shards =
        planShardsFor(optimizer, worldSize, plan);
    if (failed(shards))
      return signalPassFailure();
    for (ScheduleOp old :
         llvm::make_early_inc_range(optimizer.getBlock().getOps<ScheduleOp>()))
      old.erase();
    SmallVector<StringRef> names;
    for (ParamOp param : optimizer.getBlock().getOps<ParamOp>())
      names.push_back(param.getName());

    OpBuilder builder(&getContext());
    builder.setInsertionPointToEnd(&optimizer.getBlock());
    Location loc = optimizer.getLoc();
    auto schedule = builder.create<ScheduleOp>(
        loc, builder.getI64IntegerAttr(worldSize));
    builder.setInsertionPointToStart(&schedule.getBody().emplaceBlock());
    auto tokenType = TokenType::get(&getContext());
    for (const runtime::ShardUnit &unit : shards->units) {
      SmallVector<StringRef> members;
      for (size_t p : unit.params)
        members.push_back(names[p]);
      ArrayAttr params = builder.getStrArrayAttr(members);
      DenseI64ArrayAttr counts = builder.getDenseI64ArrayAttr(unit.counts);
      if (unit.kind == runtime::ShardUnit::Kind::Small) {
        Value reduced = builder.create<AllReduceOp>(
            loc, tokenType, params, builder.getI64IntegerAttr(unit.counts[0]));
        builder.create<WaitOp>(loc, reduced);
        builder.create<ComputeOp>(loc, params);
        continue;
      }
      DenseI32ArrayAttr owners;
      if (unit.kind == runtime::ShardUnit::Kind::Owned)
        owners = builder.getDenseI32ArrayAttr(unit.owner);
      Value reduced = builder.create<ReduceScatterOp>(loc, tokenType, params,
                                                      counts, owners);
      builder.create<WaitOp>(loc, reduced);
      builder.create<ComputeOp>(loc, params);
      Value gathered =
          builder.create<AllGatherOp>(loc, tokenType, params, counts);
      builder.create<WaitOp>(loc, gathered);
    }
  }
};

} // namespace
