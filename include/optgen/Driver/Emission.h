//===- Emission.h - Generated files from optgen IR --------------*- C++ -*-===//
//
// The last stage of `optgen compile` and of `optgen-translate
// --optgen-to-cpu` / `--optgen-to-cuda`: a printer's files for the
// optimizers of a module, printed one after another or written into a
// directory.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DRIVER_EMISSION_H
#define OPTGEN_DRIVER_EMISSION_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>

namespace optgen {

/// Generated files: name -> contents.
using GeneratedFiles = std::map<std::string, std::string>;

/// The files of the target `module` is lowered for (its `optgen.target`:
/// the CPU printer's for a host target, the CUDA printer's for a device
/// one), citing the spec as emitCpuFiles does. Fails with a diagnostic on
/// a module without a target description.
mlir::LogicalResult emitTargetFiles(mlir::ModuleOp module,
                                    const llvm::MemoryBuffer *spec,
                                    GeneratedFiles &files);

/// The CPU target's files for every optimizer of `module` (kernel IR).
/// Comments cite the spec by the file name of the optimizer's location and
/// quote its lines from `spec` when given, otherwise from the file that
/// location names, when it can be read. Fails with a diagnostic on IR the
/// emitter cannot print.
mlir::LogicalResult emitCpuFiles(mlir::ModuleOp module,
                                 const llvm::MemoryBuffer *spec,
                                 GeneratedFiles &files);

/// The CUDA target's files for every optimizer of `module` (executable IR),
/// citing the spec as emitCpuFiles does.
mlir::LogicalResult emitCudaFiles(mlir::ModuleOp module,
                                  const llvm::MemoryBuffer *spec,
                                  GeneratedFiles &files);

/// Prints `files` in name order, each after a line `// ----- NAME`.
void printFiles(const GeneratedFiles &files, llvm::raw_ostream &os);

/// Whether `text` starts as every file optgen generates does (its banner).
bool isGeneratedText(llvm::StringRef text);

/// Writes `files` into `dir` (created if needed), leaving files whose
/// contents are unchanged alone, so that rebuilds stay incremental. Each
/// file is written to a temporary and renamed over the old one. Unless
/// `force`, a file there that optgen did not write (without its banner) is
/// an error, before anything is written.
mlir::LogicalResult writeFiles(llvm::StringRef dir,
                               const GeneratedFiles &files,
                               bool force = false);

/// Registers `--optgen-to-cpu` with mlir-translate's registry: executable IR
/// in, printFiles() of emitCpuFiles() out.
void registerToCpuTranslation();

/// Registers `--optgen-to-cuda`: executable IR in, printFiles() of
/// emitCudaFiles() out.
void registerToCudaTranslation();

} // namespace optgen

#endif // OPTGEN_DRIVER_EMISSION_H
