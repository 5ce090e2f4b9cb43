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

UnitKind unitKind(runtime::ShardUnit::Kind kind) {
  switch (kind) {
  case runtime::ShardUnit::Kind::Small:
    return UnitKind::small;
  case runtime::ShardUnit::Kind::Flat:
    return UnitKind::flat;
  case runtime::ShardUnit::Kind::Owned:
    return UnitKind::owned;
  }
  llvm_unreachable("a unit kind of the sharding planner");
}

struct PlanShardsPass : optgen::impl::PlanShardsBase<PlanShardsPass> {
  using PlanShardsBase::PlanShardsBase;

  void runOnOperation() override {
    OptimizerOp optimizer = getOperation();
    runtime::Plan plan;
    FailureOr<runtime::ShardPlan> shards =
        planShardsFor(optimizer, worldSize, plan, shardGroup);
    if (failed(shards))
      return signalPassFailure();
    for (ScheduleOp old :
         llvm::make_early_inc_range(optimizer.getBlock().getOps<ScheduleOp>()))
      old.erase();
    SmallVector<ParamOp> params(optimizer.getBlock().getOps<ParamOp>());
    // Each parameter runs its bucket's rule: the copy specialised to the
    // bucket's shape, or before optgen-specialize-shapes the group's.
    llvm::StringMap<FlatSymbolRefAttr> ruleOf;
    for (BucketOp bucket : optimizer.getBlock().getOps<BucketOp>()) {
      FlatSymbolRefAttr rule = bucket.getRuleAttr();
      if (!rule)
        rule = SymbolTable::lookupNearestSymbolFrom<GroupOp>(
                   optimizer, bucket.getGroupAttr())
                   .getRuleAttr();
      for (StringRef name : bucket.getParams().getAsValueRange<StringAttr>())
        ruleOf[name] = rule;
    }

    OpBuilder builder(&getContext());
    builder.setInsertionPointToEnd(&optimizer.getBlock());
    Location loc = optimizer.getLoc();
    IntegerAttr groupSize;
    if (shards->groupSize < shards->worldSize)
      groupSize = builder.getI64IntegerAttr(shards->groupSize);
    auto schedule = builder.create<ScheduleOp>(
        loc, builder.getI64IntegerAttr(worldSize), groupSize);
    builder.setInsertionPointToStart(&schedule.getBody().emplaceBlock());
    auto unitType = UnitType::get(&getContext());
    // A rank alone shares nothing out: it steps each bucket where it is, as
    // the runtime does (no packing, no collective).
    std::vector<runtime::ShardUnit> planned = shards->units;
    bool alone = worldSize == 1;
    if (alone) {
      planned.clear();
      for (const runtime::Bucket &bucket : plan.buckets)
        planned.push_back({runtime::ShardUnit::Kind::Small, bucket.params, {},
                           {}});
    }
    SmallVector<UnitOp> units;
    for (const runtime::ShardUnit &unit : planned) {
      SmallVector<StringRef> names;
      SmallVector<int64_t> offsets;
      SmallVector<Attribute> rules;
      int64_t packed = 0;
      for (size_t p : unit.params) {
        ParamOp param = params[p];
        FlatSymbolRefAttr rule = ruleOf.lookup(param.getName());
        if (!rule) {
          param.emitError("parameter '")
              << param.getName() << "' is in no bucket (run optgen-bucket "
              << "before optgen-plan-shards)";
          return signalPassFailure();
        }
        names.push_back(param.getName());
        offsets.push_back(packed);
        rules.push_back(rule);
        packed += ShapedType::getNumElements(param.getShape());
      }
      DenseI32ArrayAttr owners;
      if (unit.kind == runtime::ShardUnit::Kind::Owned)
        owners = builder.getDenseI32ArrayAttr(unit.owner);
      units.push_back(builder.create<UnitOp>(
          loc, unitType, alone ? UnitKind::local : unitKind(unit.kind),
          builder.getStrArrayAttr(names),
          builder.getDenseI64ArrayAttr(offsets), builder.getArrayAttr(rules),
          owners, builder.getDenseI64ArrayAttr(unit.counts)));
    }

    // The runtime communicates f32 payloads.
    TypeAttr payload = TypeAttr::get(builder.getF32Type());
    auto tokenType = TokenType::get(&getContext());
    // With globals, every unit's partials (after its reduction) come before
    // the globals are finished, and every update after.
    bool globals = !optimizer.getBlock().getOps<GlobalOp>().empty();
    for (UnitOp unit : units) {
      if (unit.getKind() != UnitKind::local) {
        Value reduced =
            unit.getKind() == UnitKind::small
                ? builder.create<AllReduceOp>(loc, tokenType, unit, payload)
                      .getResult()
                : builder.create<ReduceScatterOp>(loc, tokenType, unit, payload)
                      .getResult();
        builder.create<WaitOp>(loc, reduced);
      }
      if (globals)
        builder.create<PartialsOp>(loc, unit);
      else
        computeAndGather(builder, loc, unit, payload);
    }
    if (!globals)
      return;
    if (!alone)
      builder.create<WaitOp>(
          loc, builder.create<GatherPartialsOp>(loc, tokenType).getResult());
    builder.create<FinishGlobalsOp>(loc);
    for (UnitOp unit : units)
      computeAndGather(builder, loc, unit, payload);
  }

  /// The unit's update and, unless every rank updates all of it, its
  /// all-gather and the wait on it.
  static void computeAndGather(OpBuilder &builder, Location loc, UnitOp unit,
                               TypeAttr payload) {
    builder.create<ComputeOp>(loc, unit);
    if (unit.getKind() == UnitKind::local || unit.getKind() == UnitKind::small)
      return;
    Value gathered = builder.create<AllGatherOp>(
        loc, TokenType::get(builder.getContext()), unit, payload);
    builder.create<WaitOp>(loc, gathered);
  }
};

} // namespace
