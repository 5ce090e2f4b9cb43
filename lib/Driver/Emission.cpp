//===- Emission.cpp - Generated files from optgen IR ----------------------===//

#include "optgen/Driver/Emission.h"

#include "dialect/OptgenDialect.h"
#include "optgen/Target/Cpu/EmitCpu.h"
#include "optgen/Target/Cuda/EmitCuda.h"

#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
using namespace mlir;
using namespace optgen;

namespace {

/// Runs `emitter` on every optimizer of `module`, its comments citing the
/// spec (see emitCpuFiles).
LogicalResult emitFiles(ModuleOp module, const MemoryBuffer *spec,
                        GeneratedFiles &files,
                        LogicalResult (*emitter)(OptimizerOp,
                                                 const CpuEmitOptions &,
                                                 GeneratedFiles &)) {
  for (auto optimizer : module.getOps<OptimizerOp>()) {
    // The CUDA executor and its communicators have no shard groups yet.
    if (emitter == emitCuda)
      for (ScheduleOp schedule : optimizer.getBlock().getOps<ScheduleOp>())
        if (schedule.getShardGroupSize() < schedule.getWorldSize())
          return schedule.emitError("shard groups of ")
                 << schedule.getShardGroupSize() << " of "
                 << schedule.getWorldSize()
                 << " ranks (hybrid sharding): the CUDA target does not "
                    "generate their step yet";
    auto at = optimizer.getLoc()->findInstanceOf<FileLineColLoc>();
    StringRef specPath = spec ? spec->getBufferIdentifier()
                         : at ? at.getFilename().getValue()
                              : StringRef();
    std::unique_ptr<MemoryBuffer> read;
    if (!spec && !specPath.empty())
      if (ErrorOr<std::unique_ptr<MemoryBuffer>> file =
              MemoryBuffer::getFile(specPath))
        read = std::move(*file);
    const MemoryBuffer *source = spec ? spec : read.get();
    SmallVector<StringRef> lines;
    if (source)
      source->getBuffer().split(lines, '\n');

    CpuEmitOptions options;
    options.specName = sys::path::filename(specPath).str();
    options.sourceLine = [&lines](unsigned line) {
      return line >= 1 && line <= lines.size() ? lines[line - 1].str()
                                               : std::string();
    };
    options.runtimeDir = OPTGEN_RUNTIME_DIR;
    if (failed(emitter(optimizer, options, files)))
      return failure();
  }
  return success();
}

} // namespace

LogicalResult optgen::emitCpuFiles(ModuleOp module, const MemoryBuffer *spec,
                                   GeneratedFiles &files) {
  return emitFiles(module, spec, files, emitCpu);
}

LogicalResult optgen::emitCudaFiles(ModuleOp module, const MemoryBuffer *spec,
                                    GeneratedFiles &files) {
  return emitFiles(module, spec, files, emitCuda);
}

void optgen::printFiles(const GeneratedFiles &files, raw_ostream &os) {
  for (const auto &[name, text] : files)
    os << "// ----- " << name << "\n" << text;
}

LogicalResult optgen::writeFiles(StringRef dir, const GeneratedFiles &files) {
  if (std::error_code error = sys::fs::create_directories(dir)) {
    WithColor::error(errs(), "optgen")
        << "cannot create '" << dir << "': " << error.message() << "\n";
    return failure();
  }
  for (const auto &[name, text] : files) {
    SmallString<256> path(dir);
    sys::path::append(path, name);
    if (auto existing = MemoryBuffer::getFile(path);
        existing && (*existing)->getBuffer() == text)
      continue;
    std::error_code error;
    raw_fd_ostream file(path, error);
    if (error) {
      WithColor::error(errs(), "optgen")
          << "cannot write '" << path << "': " << error.message() << "\n";
      return failure();
    }
    file << text;
  }
  return success();
}

namespace {

/// Registers `flag` with mlir-translate: executable IR in, the files
/// `emit` makes of it out, each after a `// ----- NAME` line.
void registerFilesTranslation(StringRef flag, StringRef description,
                              LogicalResult (*emit)(ModuleOp,
                                                    const MemoryBuffer *,
                                                    GeneratedFiles &)) {
  TranslateFromMLIRRegistration registration(
      flag, description,
      [emit](ModuleOp module, raw_ostream &os) {
        GeneratedFiles files;
        if (failed(emit(module, /*spec=*/nullptr, files)))
          return failure();
        printFiles(files, os);
        return success();
      },
      [](DialectRegistry &registry) { registry.insert<OptgenDialect>(); });
}

} // namespace

void optgen::registerToCpuTranslation() {
  registerFilesTranslation("optgen-to-cpu",
                           "C++ for the CPU from optgen executable IR: each "
                           "generated file after a '// ----- NAME' line",
                           emitCpuFiles);
}

void optgen::registerToCudaTranslation() {
  registerFilesTranslation("optgen-to-cuda",
                           "CUDA C++ from optgen executable IR: each "
                           "generated file after a '// ----- NAME' line",
                           emitCudaFiles);
}
