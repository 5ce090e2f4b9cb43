//===- Planning.cpp - The runtime's planner for compile-time shapes -------===//

#include "optgen/Transforms/Planning.h"

#include "optgen/Interpreter/Interpreter.h"
#include "optgen/runtime/Error.h"

using namespace mlir;
using namespace optgen;

/// Whether `group`'s `where` holds for a parameter of `shape`. The condition
/// may use only the parameter's shape, so its shape queries are folded to
/// constants on a copy whose parameter has that shape, and the interpreter
/// evaluates the rest on a parameter of one element: a model's matrices are
/// never materialised.
static FailureOr<bool> evaluateWhereOnShape(GroupOp group,
                                            ArrayRef<int64_t> shape) {
  MLIRContext *context = group.getContext();
  OwningOpRef<GroupOp> copy = cast<GroupOp>(group->clone());
  BlockArgument param = copy->getPredicate().front().getArgument(0);
  Type elementType = cast<SymbolicTensorType>(param.getType()).getElementType();
  SmallVector<Attribute> dims;
  for (int64_t dim : shape)
    dims.push_back(IntegerAttr::get(IntegerType::get(context, 64), dim));
  param.setType(SymbolicTensorType::get(dims, elementType));
  OpBuilder builder(context);
  Dialect *dialect = context->getLoadedDialect<OptgenDialect>();
  for (Operation *query : llvm::make_early_inc_range(param.getUsers())) {
    SmallVector<OpFoldResult> folded;
    if (failed(query->fold(folded)) || folded.size() != 1 ||
        !isa<Attribute>(folded[0]))
      continue;
    builder.setInsertionPoint(query);
    Operation *constant = dialect->materializeConstant(
        builder, cast<Attribute>(folded[0]), query->getResult(0).getType(),
        query->getLoc());
    if (!constant)
      continue;
    query->replaceAllUsesWith(constant);
    query->erase();
  }
  // A query the shape cannot answer alone: evaluate on the parameter.
  if (!param.use_empty())
    return interp::evaluateWhere(group, shape);
  param.setType(SymbolicTensorType::get(context, {}, elementType,
                                        /*anyRank=*/true));
  return interp::evaluateWhere(*copy, {});
}

FailureOr<runtime::Plan> optgen::planParameters(OptimizerOp optimizer,
                                                bool boundGroups) {
  std::vector<runtime::ParamDesc> params;
  for (ParamOp param : optimizer.getBlock().getOps<ParamOp>()) {
    runtime::ParamDesc desc{param.getName().str(),
                            {param.getShape().begin(), param.getShape().end()},
                            ""};
    if (boundGroups && param.getGroupAttr())
      desc.group = param.getGroupAttr().getValue().str();
    params.push_back(std::move(desc));
  }
  std::vector<runtime::GroupDesc> groups;
  for (GroupOp group : optimizer.getBlock().getOps<GroupOp>()) {
    auto rule = SymbolTable::lookupNearestSymbolFrom<RuleOp>(
        group, group.getRuleAttr());
    auto type = cast<SymbolicTensorType>(rule.getParam().getType());
    runtime::GroupDesc desc;
    desc.name = group.getSymName().str();
    desc.rule = rule.getSymName().str();
    desc.rank = type.getAnyRank() ? -1 : static_cast<int>(type.getRank());
    for (Attribute pattern : group.getPatterns())
      desc.patterns.push_back(cast<StringAttr>(pattern).str());
    if (!group.getPredicate().empty())
      desc.where = [group](const std::vector<int64_t> &shape) mutable {
        FailureOr<bool> accepted = evaluateWhereOnShape(group, shape);
        if (failed(accepted))
          throw runtime::Error("the 'where' of group '" +
                               group.getSymName().str() + "' failed");
        return *accepted;
      };
    groups.push_back(std::move(desc));
  }
  try {
    return runtime::planStep(params, groups);
  } catch (const runtime::Error &error) {
    return optimizer.emitError(error.what());
  }
}

FailureOr<runtime::ShardPlan>
optgen::planShardsFor(OptimizerOp optimizer, int worldSize,
                      runtime::Plan &plan, int64_t shardGroup) {
  DistributeOp distribute;
  for (DistributeOp d : optimizer.getBlock().getOps<DistributeOp>())
    distribute = d;
  if (!distribute || distribute.getStrategy() != DistributeStrategy::zero2)
    return optimizer.emitError("optimizer '")
           << optimizer.getSymName()
           << "' is not distributed: it needs 'distribute zero2'";
  FailureOr<runtime::Plan> planned = planParameters(optimizer, true);
  if (failed(planned))
    return failure();
  plan = *planned;
  SmallVector<GroupOp> groups(optimizer.getBlock().getOps<GroupOp>());
  std::vector<runtime::ShardParam> params;
  for (auto [param, group] :
       llvm::zip(optimizer.getBlock().getOps<ParamOp>(), plan.groupOf)) {
    auto rule = SymbolTable::lookupNearestSymbolFrom<RuleOp>(
        groups[group], groups[group].getRuleAttr());
    params.push_back({{param.getShape().begin(), param.getShape().end()},
                      isElementwiseRule(rule)});
  }
  try {
    if (shardGroup == 0)
      shardGroup =
          static_cast<int64_t>(distribute.getShardGroup().value_or(0));
    return runtime::planShards(
        plan, params, worldSize,
        static_cast<int64_t>(distribute.getSmallNumel().value_or(0)),
        shardGroup);
  } catch (const runtime::Error &error) {
    return optimizer.emitError(error.what());
  }
}

runtime::ShardPlan optgen::readShardPlan(ScheduleOp schedule) {
  auto optimizer = schedule->getParentOfType<OptimizerOp>();
  llvm::StringMap<size_t> indexOf;
  SmallVector<std::vector<int64_t>> shapes;
  for (ParamOp param : optimizer.getBlock().getOps<ParamOp>()) {
    indexOf[param.getName()] = shapes.size();
    shapes.emplace_back(param.getShape().begin(), param.getShape().end());
  }
  runtime::ShardPlan plan;
  plan.worldSize = static_cast<int>(schedule.getWorldSize());
  plan.groupSize = static_cast<int>(schedule.getShardGroupSize());
  plan.ownedCost.assign(plan.groupSize, 0.0);
  for (UnitOp op : schedule.getBlock().getOps<UnitOp>()) {
    // A rank alone shares nothing: its local units are no planner units.
    if (op.getKind() == UnitKind::local)
      continue;
    runtime::ShardUnit unit;
    switch (op.getKind()) {
    case UnitKind::local:
      break;
    case UnitKind::small:
      unit.kind = runtime::ShardUnit::Kind::Small;
      break;
    case UnitKind::flat:
      unit.kind = runtime::ShardUnit::Kind::Flat;
      break;
    case UnitKind::owned:
      unit.kind = runtime::ShardUnit::Kind::Owned;
      break;
    }
    for (StringRef name : op.getParams().getAsValueRange<StringAttr>())
      unit.params.push_back(indexOf.lookup(name));
    if (op.getOwners())
      unit.owner.assign(op.getOwners()->begin(), op.getOwners()->end());
    unit.counts.assign(op.getCounts().begin(), op.getCounts().end());
    for (auto [p, owner] : llvm::zip(unit.params, unit.owner))
      plan.ownedCost[owner] += runtime::updateCost(shapes[p]);
    plan.units.push_back(std::move(unit));
  }
  return plan;
}
