//===- Pipelines.h - The pass pipelines of optgen's stages ------*- C++ -*-===//
//
// Each stage of `optgen compile --emit=STAGE` after `mlir` is the previous
// stage's IR with one named pipeline applied; the driver builds it from
// here, and optgen-opt registers it as `--PIPELINE`, so that any stage can
// be reproduced (and a pass debugged) from the previous stage's output:
//
//   --emit=mlir     the spec in the optgen dialect (with --shapes, the
//                   model's parameters as optgen.param ops)
//   --emit=planned  optgen-plan{world-size=N}: parameters bound, bucketed,
//                   rules specialised per bucket, the distributed step
//                   scheduled (with a world size)
//   --emit=kernels  optgen-lower-to-kernels: rules folded, matrix products
//                   as gemms (transposes, accumulate and symmetry folded
//                   in), the math fused into kernels
//   --emit=executable
//                   optgen-lower-to-executable{target=T}: the target's
//                   description on the module, every reduction's
//                   accumulator type, the hyperparameters' layout and every
//                   tensor's buffer decided
//   --emit=launches optgen-lower-to-launches: how the target runs each rule
//                   (a device's host scalars placed, its kernels split into
//                   launches), so that a printer only prints
//   (--emit=code)   the emitter (optgen-translate --optgen-to-cpu)
//
// To add a pass to a stage, add one line to its build function in
// Pipelines.cpp. A new stage is a build function and a registration here,
// and one `--emit` value in tools/optgen/optgen.cpp; test/Driver/stages.test
// then checks it against optgen-opt.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_PIPELINES_PIPELINES_H
#define OPTGEN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace optgen {

struct PlanPipelineOptions
    : public mlir::PassPipelineOptions<PlanPipelineOptions> {
  Option<int> worldSize{
      *this, "world-size",
      llvm::cl::desc("Schedule the distributed step on N ranks (0: do not "
                     "schedule it)"),
      llvm::cl::init(0)};
  Option<int> shardGroup{
      *this, "shard-group",
      llvm::cl::desc("Shard within groups of this many ranks (0: the "
                     "distribution's shard_group, or every rank)"),
      llvm::cl::init(0)};
};

/// optgen-plan: binds the known parameters to groups, buckets them,
/// specialises each bucket's rule and, with a world size, plans and orders
/// the distributed step (optgen.schedule).
void buildPlanPipeline(mlir::OpPassManager &pm,
                       const PlanPipelineOptions &options);

/// optgen-lower-to-kernels: folds each rule's shapes and constants and fuses
/// its math into kernels.
void buildLowerToKernelsPipeline(mlir::OpPassManager &pm);

struct ExecutablePipelineOptions
    : public mlir::PassPipelineOptions<ExecutablePipelineOptions> {
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("The target whose description the passes read: cpu or "
                     "cuda (empty: the module's, else cpu)"),
      llvm::cl::init("")};
};

/// optgen-lower-to-executable: puts the target's description on the module
/// (optgen-set-target), then, as it says, names each reduction's
/// accumulator type, lays out each rule's hyperparameters
/// (optgen-assign-hyper-offsets) and gives every tensor value its buffer
/// (optgen-assign-buffers); for a device, 16-bit tensors in 16-bit slots
/// (narrow storage) and every kernel scalar a slot too
/// (optgen-assign-device-scalars).
void buildLowerToExecutablePipeline(mlir::OpPassManager &pm,
                                    const ExecutablePipelineOptions &options);

/// optgen-lower-to-launches, on executable IR: how the module's target runs
/// each rule; for a device, which scalars the host computes
/// (optgen-place-scalars) and the launches of each kernel
/// (optgen-split-launches).
void buildLowerToLaunchesPipeline(mlir::OpPassManager &pm);

/// Registers the pipelines above under their names (for optgen-opt).
void registerOptgenPipelines();

} // namespace optgen

#endif // OPTGEN_PIPELINES_PIPELINES_H
