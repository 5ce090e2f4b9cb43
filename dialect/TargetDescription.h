//===- TargetDescription.h - The targets optgen generates code for -*- C++ -*-===//
//
// The one place that knows the targets: each one's #optgen.target (what it
// is, what it accumulates in, how it stores 16-bit temporaries, its launch
// constants, what it supports), by name. The driver asks for one by the
// name `--target` gives, optgen-set-target puts it on the module, and every
// pass and printer after that reads the module's description, never a
// name or a constant of its own.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DIALECT_TARGETDESCRIPTION_H
#define OPTGEN_DIALECT_TARGETDESCRIPTION_H

#include "dialect/OptgenDialect.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace optgen {

/// The module attribute that holds the target description.
inline constexpr llvm::StringLiteral kTargetAttr = "optgen.target";

/// The names of the known targets, in the order `--help` lists them; the
/// first is the default (optgen-set-target without a name).
llvm::ArrayRef<llvm::StringLiteral> targetNames();

/// What target `name` generates, in a sentence for `--help`; empty for an
/// unknown name.
llvm::StringRef targetSummary(llvm::StringRef name);

/// The description of target `name`; null when no target has that name.
TargetAttr describeTarget(mlir::MLIRContext *context, llvm::StringRef name);

/// "cpu, cuda": the known targets, for an error that names them.
std::string listTargets();

/// "--target=cpu": the targets that support `feature`, for an error that
/// suggests them ("--target=a or --target=b").
std::string targetsSupporting(mlir::MLIRContext *context,
                              TargetFeatures feature);

/// The target description of the module that holds `op` (or is `op`);
/// null when it has none.
TargetAttr getTarget(mlir::Operation *op);

/// getTarget(op), or an error at `op` saying that `what` needs the
/// module's target description (optgen-set-target).
mlir::FailureOr<TargetAttr> requireTarget(mlir::Operation *op,
                                          llvm::StringRef what);

/// requireTarget(op, printer), and an error at `op` unless the module's
/// target is of `kind`: what a printer of one kind of target checks first.
mlir::FailureOr<TargetAttr> requireTargetOfKind(mlir::Operation *op,
                                                llvm::StringRef printer,
                                                TargetKind kind);

} // namespace optgen

#endif // OPTGEN_DIALECT_TARGETDESCRIPTION_H
