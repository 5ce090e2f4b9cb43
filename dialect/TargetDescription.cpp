//===- TargetDescription.cpp - The targets optgen generates code for ------===//

#include "dialect/TargetDescription.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace optgen;

namespace {

/// The targets, the first the default; describeTarget holds each one's
/// description.
constexpr llvm::StringLiteral kNames[] = {"cpu", "cuda"};
constexpr llvm::StringLiteral kSummaries[] = {
    "C++ for the CPU (a header, a source file and a CMakeLists.txt linking "
    "optgen's runtime)",
    "CUDA C++ for NVIDIA GPUs (a header, a .cu file and a CMakeLists.txt "
    "linking the runtime's cuda component); run: on the GPU, or on the "
    "emulated device without one (--device)"};
static_assert(std::size(kNames) == std::size(kSummaries));

} // namespace

ArrayRef<llvm::StringLiteral> optgen::targetNames() { return kNames; }

StringRef optgen::targetSummary(StringRef name) {
  for (auto [known, summary] : llvm::zip_equal(kNames, kSummaries))
    if (known == name)
      return summary;
  return {};
}

TargetAttr optgen::describeTarget(MLIRContext *context, StringRef name) {
  context->getOrLoadDialect<OptgenDialect>();
  Builder b(context);
  // The CPU: OpenMP loops over host memory. A wider sum costs little there
  // and stays closer to the fp64 reference; 16-bit values are computed in
  // f32 and rounded where they are stored. Up to 8 versions of a loop nest
  // (three run-time broadcast tests) keep every version unit-stride for
  // GCC's vectoriser; below 64Ki elements a fork of OpenMP's threads costs
  // more than the loop.
  if (name == "cpu")
    return TargetAttr::get(context, name, TargetKind::host, b.getF64Type(),
                           TargetStorage::wide, 0, 0, 0, 0, 0,
                           /*maxLoopVersions=*/8, /*parallelElements=*/65536,
                           TargetFeatures::shard_groups |
                               TargetFeatures::skip_nonfinite);
  // NVIDIA GPUs from Hopper on (sm_90 unless the build chooses): reductions
  // in f32 (the dialect's semantics); bf16 and f16 temporaries in their
  // own type, half the traffic; 256 threads a block, 16-byte accesses (4
  // floats); full reductions over 128 fixed blocks. Its step has no shard
  // groups yet, and its executor does not check gradients for non-finite
  // values.
  if (name == "cuda")
    return TargetAttr::get(context, name, TargetKind::device, b.getF32Type(),
                           TargetStorage::narrow, /*threadsPerBlock=*/256,
                           /*vectorWidth=*/4, /*maxBlocksPerMember=*/1024,
                           /*reductionBlocks=*/128, /*arch=*/90,
                           /*maxLoopVersions=*/0, /*parallelElements=*/0,
                           TargetFeatures::none);
  return {};
}

std::string optgen::listTargets() {
  std::string list;
  for (StringRef name : targetNames())
    list += (list.empty() ? "" : ", ") + name.str();
  return list;
}

std::string optgen::targetsSupporting(MLIRContext *context,
                                      TargetFeatures feature) {
  std::string list;
  for (StringRef name : targetNames())
    if (describeTarget(context, name).supports(feature))
      list += (list.empty() ? "--target=" : " or --target=") + name.str();
  return list;
}

TargetAttr optgen::getTarget(Operation *op) {
  auto module = isa<ModuleOp>(op) ? cast<ModuleOp>(op)
                                  : op->getParentOfType<ModuleOp>();
  return module ? module->getAttrOfType<TargetAttr>(kTargetAttr)
                : TargetAttr();
}

FailureOr<TargetAttr> optgen::requireTarget(Operation *op, StringRef what) {
  if (TargetAttr target = getTarget(op))
    return target;
  return op->emitError(what)
         << " needs the module's target description ('" << kTargetAttr
         << "', set by optgen-set-target)";
}

FailureOr<TargetAttr> optgen::requireTargetOfKind(Operation *op,
                                                 StringRef printer,
                                                 TargetKind kind) {
  FailureOr<TargetAttr> target = requireTarget(op, printer);
  if (failed(target) || target->getKind() == kind)
    return target;
  return op->emitError(printer)
         << " prints code for a " << stringifyTargetKind(kind)
         << " target; this module is lowered for '" << target->getName()
         << "', a " << stringifyTargetKind(target->getKind()) << " target";
}

LogicalResult
TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                   StringRef name, TargetKind kind, Type accumulator,
                   TargetStorage storage, int64_t threadsPerBlock,
                   int64_t vectorWidth, int64_t maxBlocksPerMember,
                   int64_t reductionBlocks, int64_t arch,
                   int64_t maxLoopVersions, int64_t parallelElements,
                   TargetFeatures supports) {
  if (name.empty())
    return emitError() << "a target has a name";
  if (!accumulator.isF32() && !accumulator.isF64())
    return emitError() << "target '" << name
                       << "': the accumulator is f32 or f64, not "
                       << accumulator;
  bool device = kind == TargetKind::device;
  if (!device) {
    if (storage != TargetStorage::wide || threadsPerBlock || vectorWidth ||
        maxBlocksPerMember || reductionBlocks || arch)
      return emitError() << "target '" << name
                         << "' is a host: it has no narrow storage, "
                            "threads, vectors, blocks or arch";
    if (maxLoopVersions < 1 || !llvm::isPowerOf2_64(maxLoopVersions) ||
        parallelElements < 1)
      return emitError() << "target '" << name
                         << "': a host's max_loop_versions is a power of two "
                            "and its parallel_elements at least 1";
    return success();
  }
  if (maxLoopVersions || parallelElements)
    return emitError() << "target '" << name
                       << "' is a device: its printer makes no loop versions "
                          "and no OpenMP loops";
  // Blocks reduce along a tree over their threads (blockReduce).
  if (threadsPerBlock < 32 || threadsPerBlock > 1024 ||
      !llvm::isPowerOf2_64(threadsPerBlock))
    return emitError() << "target '" << name
                       << "': threads_per_block is a power of two from 32 "
                          "to 1024, not "
                       << threadsPerBlock;
  if (!llvm::is_contained({int64_t{1}, int64_t{2}, int64_t{4}}, vectorWidth))
    return emitError() << "target '" << name
                       << "': vector_width is 1, 2 or 4 floats, not "
                       << vectorWidth;
  if (maxBlocksPerMember < 1 || reductionBlocks < 1 || arch < 1)
    return emitError() << "target '" << name
                       << "': max_blocks_per_member, reduction_blocks and "
                          "arch are at least 1";
  return success();
}
