//===- MLIRGen.h - From a spec's AST to the optgen dialect ------*- C++ -*-===//
//
// Resolves names, evaluates constants, checks types and shapes, and builds an
// `optgen.optimizer`. Every problem is reported as an MLIR diagnostic at the
// spec location it concerns (`file:line:col: error: ...`), so that the usual
// handlers print the source line with a caret and --verify-diagnostics can
// test them.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_FRONTEND_MLIRGEN_H
#define OPTGEN_FRONTEND_MLIRGEN_H

#include "optgen/Frontend/AST.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

namespace optgen {

/// Builds the module for `spec`. `overrides` replace the values of the
/// spec's constants of the same name (`optgen compile -D NAME=VALUE`); each
/// must name a constant of the spec. Returns null after emitting errors.
mlir::OwningOpRef<mlir::ModuleOp>
mlirGen(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr,
        const ast::Module &spec,
        llvm::ArrayRef<const ast::ConstDecl *> overrides = {});

} // namespace optgen

#endif // OPTGEN_FRONTEND_MLIRGEN_H
