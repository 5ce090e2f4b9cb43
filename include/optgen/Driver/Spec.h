//===- Spec.h - Loading a spec: parse, -D, MLIRGen, --shapes ----*- C++ -*-===//
//
// What every optgen command does first: read a spec, parse it and the
// command line's -D NAME=VALUE overrides, generate the optgen dialect, and
// with --shapes add the model's parameters. Every error is an MLIR
// diagnostic at its source (the spec, the -D text, the shapes file).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DRIVER_SPEC_H
#define OPTGEN_DRIVER_SPEC_H

#include "optgen/Frontend/AST.h"
#include "optgen/Frontend/Parser.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <string>
#include <vector>

namespace optgen {

/// The file at `path` (`-`: standard input) as optgen reads its inputs
/// (specs, IR): a regular file, so that a device or a fifo named by mistake
/// (/dev/zero, a pipe nobody writes to) is an error rather than a read
/// without end or a wait; null with `error` saying why otherwise.
std::unique_ptr<llvm::MemoryBuffer> openInput(llvm::StringRef path,
                                              std::string &error);

/// Reports syntax errors as MLIR diagnostics of `context`, so they have the
/// form and the --verify-diagnostics checks of every later error.
SyntaxErrorFn syntaxErrorsAsDiagnostics(mlir::MLIRContext &context,
                                        llvm::SourceMgr &sourceMgr);

/// The -D overrides of a spec's constants.
struct Defines {
  /// One one-constant spec per override; they own `overrides`.
  std::vector<std::unique_ptr<ast::Module>> modules;
  std::vector<const ast::ConstDecl *> overrides;
};

/// Parses each NAME=VALUE of `defines`, added to `sourceMgr` as a
/// one-constant spec, so that values are written, and their errors
/// reported, as in a spec. Failure after reporting the error.
mlir::FailureOr<Defines> parseDefines(llvm::SourceMgr &sourceMgr,
                                      llvm::ArrayRef<std::string> defines,
                                      const SyntaxErrorFn &onError);

/// Adds to each optimizer of `module` an `optgen.param` for every parameter
/// of `shapesFile` (a model, or a case's param/<name> tensors), read from
/// the safetensors header alone. Failure after reporting the error.
mlir::LogicalResult addShapes(mlir::ModuleOp module,
                              llvm::StringRef shapesFile);

/// A spec (or optgen IR) loaded for a command, with the context that owns
/// its IR; errors go to the terminal with their source line.
struct LoadedSpec {
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> handler;
  /// The spec's buffer in `sourceMgr`.
  unsigned specId = 0;
  /// Null when the input was IR.
  std::unique_ptr<ast::Module> spec;
  Defines defines;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// The spec at `path` (`-` for standard input) with the overrides
/// `defines` and, when `shapesFile` is not empty, its parameters; null
/// after reporting why not.
std::unique_ptr<LoadedSpec> loadSpec(llvm::StringRef path,
                                     llvm::ArrayRef<std::string> defines,
                                     llvm::StringRef shapesFile);

/// The optgen IR at `path` (e.g. an `optgen compile --emit=...` output),
/// parsed and verified; null after reporting why not.
std::unique_ptr<LoadedSpec> loadIR(llvm::StringRef path);

} // namespace optgen

#endif // OPTGEN_DRIVER_SPEC_H
