//===- IrFuzzer.cpp - The IR tools on arbitrary input ---------------------===//
//
// libFuzzer target: any bytes as optgen IR, as optgen-opt, optgen-translate
// and `optgen explain FILE.mlir` take it: parsed and verified; then, when
// it is valid, each stage's pipeline (optgen-plan at two ranks,
// optgen-lower-to-kernels, optgen-lower-to-executable and
// optgen-lower-to-launches for each target) run from it in turn, every
// pass's output verified, the CPU printer (optgen-translate
// --optgen-to-cpu) run on the input and on each pipeline's output (a device
// target's it refuses), and explain on its schedules. IR that a tool does not
// expect must be an error (a diagnostic, discarded here), never a crash, a
// hang or what ASan and UBSan catch. Seeds: the repository's .mlir tests,
// split at `// -----` (scripts/fuzz.sh), and the stages of the examples
// (corpus/fuzz_ir/).
//
// The CUDA printer is not here: clang 14, the fuzzers' compiler on Debian
// 12, does not compile it (it captures structured bindings in lambdas).
//
//===----------------------------------------------------------------------===//

#include "dialect/OptgenDialect.h"
#include "dialect/TargetDescription.h"
#include "optgen/Driver/Explain.h"
#include "optgen/Pipelines/Pipelines.h"
#include "optgen/Target/Cpu/EmitCpu.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

using namespace mlir;
using namespace optgen;

namespace {

/// The CPU printer and explain on `module`; the spec's lines are not
/// quoted (no file that a location of the input names is read).
void emit(ModuleOp module) {
  EmitOptions options;
  options.specName = "fuzz.opt";
  options.sourceLine = [](unsigned) { return std::string(); };
  for (OptimizerOp optimizer : module.getOps<OptimizerOp>()) {
    std::map<std::string, std::string> files;
    (void)emitCpu(optimizer, options, files);
  }
  module.walk([](ScheduleOp schedule) { (void)explainSchedule(schedule); });
}

/// A copy of `module` with `build`'s pipeline applied (each pass's output
/// verified), or null where the pipeline failed.
OwningOpRef<ModuleOp> lowered(ModuleOp module,
                              const std::function<void(OpPassManager &)> &build) {
  OwningOpRef<ModuleOp> copy(module.clone());
  PassManager pm(module.getContext());
  build(pm);
  if (failed(pm.run(*copy)))
    return nullptr;
  return copy;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  DialectRegistry registry;
  registry.insert<OptgenDialect>();
  MLIRContext context(registry);
  // Every diagnostic is handled here: nothing printed, nothing aborts.
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });
  // One thread: the pipelines' nested pass managers would start a pool per
  // input.
  context.disableMultithreading();
  // In a buffer of its own, ending with the NUL that MLIR's lexer stops at
  // (as in the buffers the tools read files into).
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.mlir"),
      llvm::SMLoc());
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(&context));
  if (!module)
    return 0;
  emit(*module);

  PlanPipelineOptions plan;
  plan.worldSize = 2;
  OwningOpRef<ModuleOp> planned = lowered(
      *module, [&](OpPassManager &pm) { buildPlanPipeline(pm, plan); });
  OwningOpRef<ModuleOp> kernels =
      lowered(planned ? *planned : *module, buildLowerToKernelsPipeline);
  if (planned)
    emit(*planned);
  ModuleOp source = kernels ? *kernels : *module;
  for (StringRef target : targetNames()) {
    ExecutablePipelineOptions executable;
    executable.target = target.str();
    if (OwningOpRef<ModuleOp> done = lowered(source, [&](OpPassManager &pm) {
          buildLowerToExecutablePipeline(pm, executable);
          buildLowerToLaunchesPipeline(pm);
        }))
      emit(*done);
  }
  return 0;
}
