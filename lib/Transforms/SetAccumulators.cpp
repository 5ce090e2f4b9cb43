//===- SetAccumulators.cpp - The type every reduction accumulates in ------===//

#include "optgen/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

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
    Builder builder(&getContext());
    Type accumulator;
    if (dtype == "f32")
      accumulator = builder.getF32Type();
    else if (dtype == "f64")
      accumulator = builder.getF64Type();
    else {
      getOperation()->emitError("optgen-set-accumulators: dtype is f32 or "
                                "f64, not '")
          << dtype << "'";
      return signalPassFailure();
    }
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
