//===- Pipelines.cpp - The pass pipelines of optgen's stages --------------===//

#include "optgen/Pipelines/Pipelines.h"

#include "optgen/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void optgen::buildPlanPipeline(OpPassManager &pm,
                               const PlanPipelineOptions &options) {
  OpPassManager &optimizers = pm.nest<OptimizerOp>();
  optimizers.addPass(createBindParams());
  optimizers.addPass(createBucket());
  optimizers.addPass(createSpecializeShapes());
  if (options.worldSize > 0) {
    optimizers.addPass(
        createPlanShards({options.worldSize, options.shardGroup}));
    optimizers.addPass(createScheduleCollectives());
  }
}

void optgen::buildLowerToKernelsPipeline(OpPassManager &pm) {
  OpPassManager &optimizers = pm.nest<OptimizerOp>();
  // A global's math is printed as it is, folded.
  OpPassManager &globals = optimizers.nest<GlobalOp>();
  globals.addPass(createCanonicalizerPass());
  globals.addPass(createCSEPass());
  OpPassManager &rules = optimizers.nest<RuleOp>();
  // Twice: folding shape queries makes types known, which lets more fold.
  for (int round = 0; round < 2; ++round) {
    rules.addPass(createInferShapes());
    rules.addPass(createCanonicalizerPass());
  }
  rules.addPass(createCSEPass());
  rules.addPass(createLowerMatmuls());
  rules.addPass(createFoldGemmAccumulate());
  rules.addPass(createMarkSymmetric());
  rules.addPass(createFuseKernels());
}

void optgen::buildLowerToExecutablePipeline(
    OpPassManager &pm, const ExecutablePipelineOptions &options) {
  // Every pass after this one reads the module's target description.
  pm.addPass(createSetTarget({options.target}));
  OpPassManager &optimizers = pm.nest<OptimizerOp>();
  optimizers.nest<GlobalOp>().addPass(createSetAccumulators());
  OpPassManager &rules = optimizers.nest<RuleOp>();
  rules.addPass(createSetAccumulators());
  rules.addPass(createAssignHyperOffsets());
  rules.addPass(createAssignBuffers());
  rules.addPass(createAssignDeviceScalars());
}

void optgen::buildLowerToLaunchesPipeline(OpPassManager &pm) {
  OpPassManager &rules = pm.nest<OptimizerOp>().nest<RuleOp>();
  rules.addPass(createPlaceScalars());
  rules.addPass(createSplitLaunches());
  rules.addPass(createAssignLaunchShapes());
}

void optgen::registerOptgenPipelines() {
  PassPipelineRegistration<PlanPipelineOptions>(
      "optgen-plan",
      "Bind, bucket and specialise known parameters; with world-size, "
      "schedule the distributed step (optgen compile --emit=planned)",
      buildPlanPipeline);
  PassPipelineRegistration<>(
      "optgen-lower-to-kernels",
      "Fold each rule and fuse its math into kernels (optgen compile "
      "--emit=kernels)",
      buildLowerToKernelsPipeline);
  PassPipelineRegistration<ExecutablePipelineOptions>(
      "optgen-lower-to-executable",
      "Describe the target on the module and decide what printers would "
      "otherwise decide: accumulator types, the hyperparameters' layout and "
      "every tensor's buffer (optgen compile --emit=executable)",
      buildLowerToExecutablePipeline);
  PassPipelineRegistration<>(
      "optgen-lower-to-launches",
      "Decide how the module's target runs each rule: a device's host "
      "scalars and the launches of its kernels (optgen compile "
      "--emit=launches)",
      buildLowerToLaunchesPipeline);
}
