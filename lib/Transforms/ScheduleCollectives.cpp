//===- ScheduleCollectives.cpp - A distributed step in three phases -------===//

#include "optgen/Transforms/Passes.h"

namespace optgen {
#define GEN_PASS_DEF_SCHEDULECOLLECTIVES
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

struct ScheduleCollectivesPass
    : optgen::impl::ScheduleCollectivesBase<ScheduleCollectivesPass> {
  void runOnOperation() override {
    for (ScheduleOp schedule : getOperation().getBlock().getOps<ScheduleOp>()) {
      Block &body = schedule.getBody().front();
      SmallVector<Operation *> units, reductions, gatherWaits, middle;
      for (Operation &op : body) {
        if (isa<UnitOp>(op))
          units.push_back(&op);
        else if (isa<AllReduceOp, ReduceScatterOp>(op))
          reductions.push_back(&op);
        else if (auto wait = dyn_cast<WaitOp>(op);
                 wait && wait.getToken().getDefiningOp<AllGatherOp>())
          gatherWaits.push_back(&op);
        else
          middle.push_back(&op);
      }
      // The units first, as every phase uses them. Phase 1: launch every
      // reduction; phase 2, in the units' order: wait, update, launch the
      // gather; phase 3: wait for every gather.
      for (Operation *op : llvm::concat<Operation *>(units, reductions, middle,
                                                     gatherWaits))
        op->moveBefore(&body, body.end());
    }
  }
};

} // namespace
