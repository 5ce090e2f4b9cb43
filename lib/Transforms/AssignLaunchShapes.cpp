//===- AssignLaunchShapes.cpp - The grid and blocks of every launch -------===//
//
// How many blocks of how many threads each launch runs is the target's
// (its description) and the launch's kind's, decided here so that the
// printer prints a grid it is given. A launch over the elements runs as
// many blocks as the member's elements fill, up to a cap: a full
// reduction's partial sums are one per block, so its cap is what their
// slot holds, and a reduction over a few hundred elements runs one block
// rather than the slot's 128.
//
//===----------------------------------------------------------------------===//

#include "optgen/Transforms/Passes.h"

#include "dialect/TargetDescription.h"

namespace optgen {
#define GEN_PASS_DEF_ASSIGNLAUNCHSHAPES
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

/// The partial sums the slots of `space`'s full reductions hold (the
/// fewest, should they differ), or 0 without full reductions.
int64_t partialSlots(LaunchOp space, ArrayAttr workspace) {
  auto buffers = space->getAttrOfType<ArrayAttr>(kBuffersAttr);
  Operation *yield = space.getBody().front().getTerminator();
  int64_t fewest = 0;
  for (auto [value, buffer] : llvm::zip(yield->getOperands(), buffers)) {
    auto reduce = value.getDefiningOp<ReduceOp>();
    if (!reduce || reduce.getAxis())
      continue;
    auto slot = cast<SlotAttr>(
        workspace[cast<BufferAttr>(buffer).getIndex()]);
    int64_t held =
        cast<IntegerAttr>(slot.getShape().getDims()[0]).getInt();
    fewest = fewest ? std::min(fewest, held) : held;
  }
  return fewest;
}

struct AssignLaunchShapesPass
    : optgen::impl::AssignLaunchShapesBase<AssignLaunchShapesPass> {
  using AssignLaunchShapesBase::AssignLaunchShapesBase;

  void runOnOperation() override {
    RuleOp rule = getOperation();
    FailureOr<TargetAttr> target =
        requireTarget(rule, "optgen-assign-launch-shapes");
    if (failed(target))
      return signalPassFailure();
    // A host has no launches.
    if (!target->isDevice())
      return;
    auto workspace = rule->getAttrOfType<ArrayAttr>(kWorkspaceAttr);
    bool vectorised = isElementwiseRule(rule);
    MLIRContext *context = &getContext();
    int64_t threads = target->getThreadsPerBlock();
    WalkResult walked = rule.walk([&](LaunchOp launch) {
      auto buffers = launch->getAttrOfType<ArrayAttr>(kBuffersAttr);
      if (!buffers || !workspace) {
        launch.emitOpError("has no buffers: run --optgen-assign-buffers and "
                           "--optgen-split-launches before "
                           "--optgen-assign-launch-shapes");
        return WalkResult::interrupt();
      }
      LaunchShapeAttr shape;
      switch (launch.getKind()) {
      case LaunchKind::space:
      case LaunchKind::store: {
        int64_t partials = launch.getKind() == LaunchKind::space
                               ? partialSlots(launch, workspace)
                               : 0;
        shape = LaunchShapeAttr::get(
            context, threads, GridKind::elements,
            partials ? partials : target->getMaxBlocksPerMember(),
            vectorised ? target->getVectorWidth() : 1);
        break;
      }
      case LaunchKind::rows:
        shape = LaunchShapeAttr::get(context, threads, GridKind::rows, 0, 1);
        break;
      case LaunchKind::cols:
        shape = LaunchShapeAttr::get(context, threads,
                                     GridKind::column_blocks, 0, 1);
        break;
      case LaunchKind::lines:
        shape = LaunchShapeAttr::get(context, threads, GridKind::lines, 0, 1);
        break;
      case LaunchKind::finish:
        shape = LaunchShapeAttr::get(context, threads, GridKind::members, 0, 1);
        break;
      }
      launch.setShapeAttr(shape);
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
