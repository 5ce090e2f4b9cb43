//===- Bucket.cpp - Bucket same-shape parameters of a group ---------------===//

#include "optgen/Transforms/Planning.h"

#include "optgen/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace optgen {
#define GEN_PASS_DEF_BUCKET
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

struct BucketPass : optgen::impl::BucketBase<BucketPass> {
  void runOnOperation() override {
    OptimizerOp optimizer = getOperation();
    SmallVector<ParamOp> params(optimizer.getBlock().getOps<ParamOp>());
    for (ParamOp param : params)
      if (!param.getGroupAttr()) {
        param.emitOpError("is not bound to a group; run "
                          "--optgen-bind-params first");
        return signalPassFailure();
      }
    for (BucketOp old :
         llvm::make_early_inc_range(optimizer.getBlock().getOps<BucketOp>()))
      old.erase();
    FailureOr<runtime::Plan> plan = planParameters(optimizer, true);
    if (failed(plan))
      return signalPassFailure();
    SmallVector<GroupOp> groups(optimizer.getBlock().getOps<GroupOp>());
    OpBuilder builder(&getContext());
    builder.setInsertionPointToEnd(&optimizer.getBlock());
    for (DistributeOp distribute : optimizer.getBlock().getOps<DistributeOp>())
      builder.setInsertionPoint(distribute);
    for (const runtime::Bucket &bucket : plan->buckets) {
      SmallVector<StringRef> names;
      for (size_t index : bucket.params)
        names.push_back(params[index].getName());
      builder.create<BucketOp>(
          optimizer.getLoc(),
          FlatSymbolRefAttr::get(groups[bucket.group].getSymNameAttr()),
          builder.getDenseI64ArrayAttr(bucket.shape),
          builder.getStrArrayAttr(names), FlatSymbolRefAttr());
    }
  }
};

} // namespace
