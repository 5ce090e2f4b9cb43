//===- SetTarget.cpp - The target's description on the module -------------===//
//
// The one pass that turns a target's name into what passes and printers
// read. It also refuses, at the op, what the IR asks of a target that the
// target's description says it does not generate, so that a spec's
// `--target` mistake is an error of the executable stage, not of a
// printer.
//
//===----------------------------------------------------------------------===//

#include "optgen/Transforms/Passes.h"

#include "dialect/TargetDescription.h"

namespace optgen {
#define GEN_PASS_DEF_SETTARGET
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

struct SetTargetPass : optgen::impl::SetTargetBase<SetTargetPass> {
  using SetTargetBase::SetTargetBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    TargetAttr present = getTarget(module);
    TargetAttr wanted = present;
    if (!target.empty() || !present) {
      StringRef name =
          target.empty() ? StringRef(targetNames().front()) : target;
      wanted = describeTarget(&getContext(), name);
      if (!wanted) {
        module.emitError("unknown target '")
            << name << "'; the targets are " << listTargets();
        return signalPassFailure();
      }
    }
    if (present && present != wanted) {
      module.emitError("the module is described for target '")
          << present.getName() << "', not '" << wanted.getName() << "'";
      return signalPassFailure();
    }
    if (!wanted.supports(TargetFeatures::shard_groups)) {
      WalkResult walk = module.walk([&](ScheduleOp schedule) {
        if (!schedule.hasShardGroups())
          return WalkResult::advance();
        schedule.emitError("shard groups of ")
            << schedule.getShardGroupSize() << " of "
            << schedule.getWorldSize() << " ranks (hybrid sharding): the "
            << wanted.getName()
            << " target does not generate their step yet (compile for "
            << targetsSupporting(&getContext(), TargetFeatures::shard_groups)
            << ")";
        return WalkResult::interrupt();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
    }
    if (!wanted.supports(TargetFeatures::skip_nonfinite)) {
      WalkResult walk = module.walk([&](OnNonFiniteOp policy) {
        if (policy.getPolicy() != NonFinitePolicy::skip)
          return WalkResult::advance();
        policy.emitError("the ")
            << wanted.getName()
            << " target cannot skip steps on non-finite gradients yet (its "
               "executor does not check them); compile for "
            << targetsSupporting(&getContext(), TargetFeatures::skip_nonfinite)
            << ", or without `on_nonfinite skip`";
        return WalkResult::interrupt();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
    }
    module->setAttr(kTargetAttr, wanted);
  }
};

} // namespace
