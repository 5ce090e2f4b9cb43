//===- Expressions.h - Kernel math as C-family expressions ------*- C++ -*-===//
//
// The one printer of scalar and per-element math, shared by the CPU and
// CUDA targets: literals, C types of element types, conversions, the
// rounding a bf16/f16 result asks for (optgen::runtime::roundToBF16, one
// implementation, host and device), and each elementwise op as an
// expression over its operands' expressions.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TARGET_CFAMILY_EXPRESSIONS_H
#define OPTGEN_TARGET_CFAMILY_EXPRESSIONS_H

#include "dialect/OptgenDialect.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"

#include <optional>
#include <string>

namespace optgen {

/// A float (f32: `1.5f`) or double literal; NaN and infinities spelled
/// through std::numeric_limits.
std::string floatLiteral(double value, bool isDouble);

/// A scalar constant (bool, integer or float attribute) as a C-family
/// expression of its C type: `true`, `int64_t{2}`, `0.5f`; empty for any
/// other attribute.
std::string constantExpression(mlir::Attribute value);

/// The C type holding a scalar (or one tensor element) of `element`:
/// bool, int64_t, double, or float (f32, and bf16/f16 values held rounded).
llvm::StringRef cType(mlir::Type element);

/// `expr` (computed in float) wrapped in the rounding `element` asks for.
std::string rounded(std::string expr, mlir::Type element);

/// `expr` of element type `from` as a value of `to`.
std::string convert(const std::string &expr, mlir::Type from, mlir::Type to);

/// The expression of elementwise `op` applied to `operands` (expressions of
/// the operands' element types), as an element of its result type; empty
/// for an op that is not elementwise math.
std::string elementExpression(mlir::Operation *op,
                              llvm::ArrayRef<std::string> operands);

/// The file-scope constant `name` holding the table of `loop` as f32 rows,
/// commented with the loop's spec line (`specName`:line).
std::string tableDefinition(ForTableOp loop, llvm::StringRef name,
                            llvm::StringRef specName);

/// Whether `axis` of a matrix is its first (0, or -2 from the end): a
/// reduction along it leaves one row, a size along it counts rows.
inline bool isFirstAxis(int64_t axis) { return axis == 0 || axis == -2; }

/// isFirstAxis of an axis the program knows only when it runs, `axis` its
/// expression: `((axis) == 0 || (axis) == -2)`.
std::string firstAxisTest(llvm::StringRef axis);

/// The extent of a matrix of `rows` x `cols` along an axis: `rows` or
/// `cols` when the axis is the constant `known`, else chosen by the
/// program from `axis`, the axis's expression.
std::string extentAlong(std::optional<int64_t> known, llvm::StringRef axis,
                        llvm::StringRef rows, llvm::StringRef cols);

} // namespace optgen

#endif // OPTGEN_TARGET_CFAMILY_EXPRESSIONS_H
