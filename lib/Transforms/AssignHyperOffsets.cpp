//===- AssignHyperOffsets.cpp - A rule's hyperparameters as one array -----===//

#include "optgen/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace optgen {
#define GEN_PASS_DEF_ASSIGNHYPEROFFSETS
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

struct AssignHyperOffsetsPass
    : optgen::impl::AssignHyperOffsetsBase<AssignHyperOffsetsPass> {
  void runOnOperation() override {
    RuleOp rule = getOperation();
    auto hypers = llvm::to_vector(rule.getBlock().getOps<HyperOp>());
    // A rule laid out already (IR read back from an earlier stage) keeps
    // its layout: the verifier has checked it.
    if (llvm::any_of(hypers, [](HyperOp h) { return h.getOffsetAttr(); }))
      return;
    Builder builder(&getContext());
    int64_t next = 0;
    for (HyperOp hyper : hypers) {
      hyper.setOffsetAttr(builder.getI64IntegerAttr(next));
      next += hyper.getWidth();
    }
  }
};

} // namespace
