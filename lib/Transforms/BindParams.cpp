//===- BindParams.cpp - Bind known parameters to their groups -------------===//

#include "optgen/Transforms/Planning.h"

#include "optgen/Transforms/Passes.h"

namespace optgen {
#define GEN_PASS_DEF_BINDPARAMS
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

struct BindParamsPass : optgen::impl::BindParamsBase<BindParamsPass> {
  void runOnOperation() override {
    OptimizerOp optimizer = getOperation();
    FailureOr<runtime::Plan> plan = planParameters(optimizer, false);
    if (failed(plan))
      return signalPassFailure();
    SmallVector<GroupOp> groups(optimizer.getBlock().getOps<GroupOp>());
    for (auto [param, group] :
         llvm::zip(optimizer.getBlock().getOps<ParamOp>(), plan->groupOf))
      param.setGroupAttr(FlatSymbolRefAttr::get(groups[group].getSymNameAttr()));
  }
};

} // namespace
