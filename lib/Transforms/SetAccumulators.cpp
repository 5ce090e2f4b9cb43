//===- SetAccumulators.cpp - The type every reduction accumulates in ------===//

#include "optgen/Transforms/Passes.h"

#include "dialect/TargetDescription.h"

namespace optgen {
#define GEN_PASS_DEF_SETACCUMULATORS
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

struct SetAccumulatorsPass
    : optgen::impl::SetAccumulatorsBase<SetAccumulatorsPass> {
  using SetAccumulatorsBase::SetAccumulatorsBase;

  void runOnOperation() override {
    FailureOr<TargetAttr> target =
        requireTarget(getOperation(), "optgen-set-accumulators");
    if (failed(target))
      return signalPassFailure();
    Type accumulator = target->getAccumulator();
    getOperation()->walk([&](Operation *op) {
      auto set = [&](auto reduce) {
        if (!reduce.getAccumulatorAttr())
          reduce.setAccumulatorAttr(TypeAttr::get(accumulator));
      };
      if (auto reduce = dyn_cast<ReduceOp>(op))
        set(reduce);
      else if (auto reduce = dyn_cast<ReduceParamsOp>(op))
        set(reduce);
    });
  }
};

} // namespace
