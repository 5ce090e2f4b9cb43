//===- Passes.h - Passes of optgen ------------------------------*- C++ -*-===//

#ifndef OPTGEN_TRANSFORMS_PASSES_H
#define OPTGEN_TRANSFORMS_PASSES_H

#include "dialect/OptgenDialect.h"

#include "mlir/Pass/Pass.h"

namespace optgen {

#define GEN_PASS_DECL
#include "dialect/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialect/Passes.h.inc"

/// What optgen-infer-shapes does to one rule; failure after a diagnostic.
mlir::LogicalResult inferShapes(RuleOp rule);

} // namespace optgen

#endif // OPTGEN_TRANSFORMS_PASSES_H
