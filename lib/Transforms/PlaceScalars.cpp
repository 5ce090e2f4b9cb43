//===- PlaceScalars.cpp - Which scalars a device target's host computes ---===//
//
// On a device the step is a host program of launches: the host decides
// table loops' counts, branches, the scales of matrix products and the axes
// reductions run along, so it computes those and what they are computed
// from; every other scalar a kernel reads is computed on the device, in the
// kernel's prologue, so that a step captured as a CUDA graph sees new
// values. Deciding it here, with the errors at the spec's lines, leaves the
// printer nothing to decide.
//
//===----------------------------------------------------------------------===//

#include "optgen/Transforms/Passes.h"

#include "dialect/TargetDescription.h"

#include "mlir/IR/Builders.h"

namespace optgen {
#define GEN_PASS_DEF_PLACESCALARS
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

/// Why the host cannot compute `def`'s value, or null when it can.
const char *notOnHost(Operation *def, Value value) {
  if (isa<StepOp, KernelOp, GlobalValueOp>(def))
    return "a value of the device";
  // A step captured as a CUDA graph keeps what the host decided; the
  // executor captures again only when an integer hyperparameter changes.
  if (isa<HyperOp, TupleGetOp>(def) &&
      !getElementTypeOrSelf(value.getType()).isInteger(64))
    return "a float hyperparameter";
  return nullptr;
}

struct PlaceScalarsPass : optgen::impl::PlaceScalarsBase<PlaceScalarsPass> {
  using PlaceScalarsBase::PlaceScalarsBase;

  void runOnOperation() override {
    RuleOp rule = getOperation();
    FailureOr<TargetAttr> target = requireTarget(rule, "optgen-place-scalars");
    if (failed(target))
      return signalPassFailure();
    // On a host every scalar is the step's own variable.
    if (!target->isDevice())
      return;
    SmallVector<Value> worklist;
    forEachHostDecision(rule, [&](Value value) { worklist.push_back(value); });
    UnitAttr mark = UnitAttr::get(&getContext());
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      Operation *def = value.getDefiningOp();
      if (!def)
        continue; // a loop's table row: a host value
      if (const char *why = notOnHost(def, value)) {
        def->emitError(why)
            << " that the host needs (a loop count, a branch condition, the "
               "scale of a matrix product or an axis): the "
            << target->getName()
            << " target's host decides those before its kernels run";
        return signalPassFailure();
      }
      if (def->hasAttr(kOnHostAttr))
        continue;
      def->setAttr(kOnHostAttr, mark);
      for (Value operand : def->getOperands())
        if (!isa<SymbolicTensorType>(operand.getType()))
          worklist.push_back(operand);
    }
  }
};

} // namespace
