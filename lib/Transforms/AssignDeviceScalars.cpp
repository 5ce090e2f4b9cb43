//===- AssignDeviceScalars.cpp - Scalars of kernels in device memory ------===//
//
// On the CPU a reduction's result is a local variable of the step. On a GPU
// it is computed by one kernel and read by the next, possibly for every
// parameter of a batch at once, so it needs memory; and a deterministic
// full reduction needs a place for the partial result of each block.
// Both become workspace slots here, so that the printer decides nothing.
//
//===----------------------------------------------------------------------===//

#include "optgen/Transforms/Passes.h"

#include "dialect/TargetDescription.h"

#include "mlir/IR/Builders.h"

namespace optgen {
#define GEN_PASS_DEF_ASSIGNDEVICESCALARS
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

struct AssignDeviceScalarsPass
    : optgen::impl::AssignDeviceScalarsBase<AssignDeviceScalarsPass> {
  using AssignDeviceScalarsBase::AssignDeviceScalarsBase;

  void runOnOperation() override {
    RuleOp rule = getOperation();
    FailureOr<TargetAttr> target =
        requireTarget(rule, "optgen-assign-device-scalars");
    if (failed(target))
      return signalPassFailure();
    // On a host a kernel's scalars are the step's local variables.
    if (!target->isDevice())
      return;
    MLIRContext *context = &getContext();
    Builder builder(context);
    auto workspace = rule->getAttrOfType<ArrayAttr>(kWorkspaceAttr);
    if (!workspace) {
      rule.emitError("optgen-assign-device-scalars needs the rule's buffers; "
                     "run --optgen-assign-buffers first");
      return signalPassFailure();
    }
    int64_t blocks = target->getReductionBlocks();
    SmallVector<Attribute> slots(workspace.begin(), workspace.end());
    auto addSlot = [&](ArrayRef<int64_t> extent, Type storage) {
      SmallVector<Attribute> dims;
      for (int64_t d : extent)
        dims.push_back(builder.getI64IntegerAttr(d));
      auto shape = SymbolicTensorType::get(context, dims,
                                           builder.getF32Type(), false);
      slots.push_back(SlotAttr::get(context, shape, storage));
      return BufferAttr::get(context, BufferKind::workspace,
                             static_cast<int64_t>(slots.size() - 1));
    };
    // f64 is kept as f64; every other scalar (f32, and bf16 or f16 values
    // held rounded) as f32.
    auto storageOf = [&](Type type) -> Type {
      return type.isF64() ? Type(builder.getF64Type())
                          : Type(builder.getF32Type());
    };
    rule.walk([&](KernelOp kernel) {
      auto buffers = kernel->getAttrOfType<ArrayAttr>(kBuffersAttr);
      if (!buffers)
        return;
      SmallVector<Attribute> placed(buffers.begin(), buffers.end());
      for (auto [index, result] : llvm::enumerate(kernel.getResults()))
        if (isa<UnitAttr>(placed[index]))
          placed[index] = addSlot({}, storageOf(result.getType()));
      kernel->setAttr(kBuffersAttr, builder.getArrayAttr(placed));
      kernel.walk([&](ReduceOp reduce) {
        if (reduce.getAxis() || reduce->hasAttr(kBuffersAttr))
          return;
        Type accumulator = reduce.getAccumulator()
                               ? *reduce.getAccumulator()
                               : builder.getF32Type();
        reduce->setAttr(kBuffersAttr,
                        builder.getArrayAttr(
                            {addSlot({blocks}, storageOf(accumulator))}));
      });
    });
    rule->setAttr(kWorkspaceAttr, builder.getArrayAttr(slots));
  }
};

} // namespace
