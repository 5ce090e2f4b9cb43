//===- TypeRules.h - Shapes and dtypes of optgen values ---------*- C++ -*-===//
//
// The one implementation of broadcasting, dtype promotion and the shape rules
// of reductions and matrix ops. Op verifiers and type inference use it, and
// so does MLIRGen, which calls it before building an op so that a spec's
// mistake is reported at the spec's location instead of failing an op.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DIALECT_TYPERULES_H
#define OPTGEN_DIALECT_TYPERULES_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LogicalResult.h"

#include <optional>
#include <string>

namespace optgen {

/// What an elementwise op's result element type is made of.
enum class ResultDType {
  Promoted,   // the promotion of the operands (bools count as ints)
  Float,      // the promotion, but at least a float (ints become f32)
  Bool,       // i1: comparisons
  Logical,    // i1, and every operand must be i1: and, or, not
};

/// The element type of a tensor, or the scalar type itself.
mlir::Type getElementTypeOrSelf(mlir::Type type);

/// `[m, n] bf16`, `* f32`, `f32`: how diagnostics show a type.
std::string describeType(mlir::Type type);

/// The result type of an elementwise op over `operands`, or failure after
/// emitting an error at `loc` (when given) naming `opName`.
mlir::FailureOr<mlir::Type>
inferElementwiseType(std::optional<mlir::Location> loc, llvm::StringRef opName,
                     mlir::TypeRange operands, ResultDType resultDType);

/// The type `select(condition, onTrue, onFalse)` gives.
mlir::FailureOr<mlir::Type> inferSelectType(std::optional<mlir::Location> loc,
                                            mlir::Type condition,
                                            mlir::Type onTrue,
                                            mlir::Type onFalse);

/// The type of a reduction of `input`: whole (`axis` absent), along a known
/// axis, or along an axis known only once shapes are bound (`axisIsDynamic`).
mlir::FailureOr<mlir::Type>
inferReduceType(std::optional<mlir::Location> loc, llvm::StringRef opName,
                mlir::Type input, bool hasAxis, std::optional<int64_t> axis);

mlir::FailureOr<mlir::Type> inferMatmulType(std::optional<mlir::Location> loc,
                                            mlir::Type lhs, mlir::Type rhs);

mlir::FailureOr<mlir::Type>
inferTransposeType(std::optional<mlir::Location> loc, mlir::Type input);

/// Checks `axis` against a tensor of `type` and returns it counted from 0.
mlir::FailureOr<int64_t> normalizeAxis(std::optional<mlir::Location> loc,
                                       llvm::StringRef opName, mlir::Type type,
                                       int64_t axis);

/// True when values of type `from` may be viewed as `to`: same dtype-free
/// shape up to `?` dimensions (scalars only as scalars).
bool areShapesCompatible(mlir::Type from, mlir::Type to);

/// Checks that `value` suits a hyperparameter of type `type`: a float or int
/// attribute for `f32`, an int for `i64`, an array of such for a tuple.
mlir::LogicalResult
verifyHyperValue(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                 llvm::StringRef name, mlir::Type type, mlir::Attribute value);

/// Whether `value` is known at compile time (computed only from constants and
/// shape queries). If not, `culprit` receives the value that is not.
bool isKnownAtCompileTime(mlir::Value value, mlir::Value *culprit = nullptr);

/// How a diagnostic names a value that is not known at compile time:
/// "hyperparameter 'lr'", "the step count", "the gradient".
std::string describeRuntimeValue(mlir::Value value);

} // namespace optgen

#endif // OPTGEN_DIALECT_TYPERULES_H
