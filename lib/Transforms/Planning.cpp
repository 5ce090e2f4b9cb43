//===- Planning.cpp - The runtime's planner for compile-time shapes -------===//

#include "Planning.h"

#include "optgen/Interpreter/Interpreter.h"
#include "optgen/runtime/Error.h"

using namespace mlir;
using namespace optgen;

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
        FailureOr<bool> accepted = interp::evaluateWhere(group, shape);
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
