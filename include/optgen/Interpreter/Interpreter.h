//===- Interpreter.h - The fp64 reference interpreter of optgen -*- C++ -*-===//
//
// Runs an `optgen.rule` on concrete data: one step for one parameter (and an
// optimizer's `optgen.global`s over every parameter of a step). It is
// the numeric reference that generated code and golden cases are checked
// against, written independently of any code generator.
//
// Semantics, op by op, on values with concrete shapes:
//
//  * Arithmetic is done in double. After every op the result is rounded to
//    its element type when that is bf16 or f16 (that rounding is the spec's
//    semantics); f32 and f64 results stay in double, so this reference is
//    more precise than f32 code on purpose. i64 values are exact integers
//    (held in double: exact up to 2^53), i1 values are 0 or 1.
//  * bf16/f16 rounding is runtime/include/optgen/runtime/Float16.h's, applied
//    to the double cast to float first: roundToBF16(float(x)). The cast to
//    float rounds once more than a direct double -> bf16 rounding would; the
//    two differ only when the float rounding lands exactly on a bf16 tie,
//    which is accepted (it is what f32 code that converts does as well).
//  * Elementwise ops broadcast as numpy does (right-aligned, size-1 dims
//    stretch); a mismatch found at run time is an error at the op.
//  * Reductions and matrix products accumulate in double and round the
//    result to its element type once (the dialect's own description says f32
//    accumulation; the reference is more precise on purpose).
//  * A global's `optgen.reduce_params` runs its math on every parameter in
//    the order given and accumulates every element in double (a max keeps
//    a NaN it meets), rounding the result once; the math after the
//    reductions runs once. A rule's `optgen.global_value` reads the value
//    given to it.
//  * `optgen.if` runs the branch its condition chooses; `optgen.for_table`
//    runs min(count, rows) rows (none when count <= 0), each table value
//    entering the body as an f32: the f64 table value rounded to float and
//    widened back, as generated code holds f32 coefficients.
//    `optgen.kernel` (fused ops) runs its body's ops one by one: fusion does
//    not change values.
//  * Every result is checked against the op's declared type: scalar or
//    tensor, the element type, static sizes, and named sizes (`m`, `n`),
//    which are bound from the parameter's shape and must stay consistent.
//
// Errors (a shape mismatch found at run time, a hyperparameter with neither
// a value nor a default, an op the interpreter does not know, a state of the
// wrong shape) are reported as MLIR diagnostics at the op's location and
// give failure; nothing asserts on bad input.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_INTERPRETER_INTERPRETER_H
#define OPTGEN_INTERPRETER_INTERPRETER_H

#include "mlir/IR/Types.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace optgen {
class RuleOp;
class GroupOp;
class OptimizerOp;
} // namespace optgen

namespace optgen::interp {

/// A concrete value: a scalar, a dense row-major tensor, or a tuple (the
/// value of a tuple hyperparameter).
struct Value {
  enum class Kind { Scalar, Tensor, Tuple };

  Kind kind = Kind::Scalar;
  /// The element type (f32, bf16, f16, f64, i64, i1) of a scalar or tensor;
  /// the `TupleType` of a tuple.
  mlir::Type type;
  /// The tensor's shape; empty for scalars and tuples.
  std::vector<int64_t> shape;
  /// The elements, row-major: one for a scalar, numel for a tensor, one per
  /// member for a tuple.
  std::vector<double> data;

  static Value scalar(double x, mlir::Type type);
  static Value tensor(std::vector<int64_t> shape, std::vector<double> data,
                      mlir::Type elementType);
  static Value zeros(std::vector<int64_t> shape, mlir::Type elementType);

  bool isTensor() const { return kind == Kind::Tensor; }
  bool isScalar() const { return kind == Kind::Scalar; }
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
};

/// A hyperparameter's value: a float, an int, or a tuple of numbers.
using HyperValue = std::variant<double, int64_t, std::vector<double>>;
using HyperMap = llvm::StringMap<HyperValue>;

/// The globals of one step (`optgen.global`), by name, as rules read them.
using GlobalMap = llvm::StringMap<double>;

/// One parameter of a step as the globals see it: its value and gradient.
struct GlobalInput {
  const Value *param, *grad;
};

/// One parameter and what the optimizer keeps for it between steps.
struct ParamState {
  std::vector<int64_t> shape;
  std::vector<double> param;
  /// One per `optgen.state` of the rule, in declaration order (the order
  /// `optgen.update` gives them). Empty before the first step: the
  /// interpreter then starts every state at zeros of its shape. A state's
  /// `type` is taken from its declaration; the caller need not set it.
  std::vector<Value> states;
  /// Steps taken so far; stepRule increments it before running the rule, so
  /// `optgen.step` is 1 on the first step.
  int64_t step = 0;
};

/// What one run of a rule gives: the new parameter and the new states, each
/// rounded to its element type.
struct RuleResult {
  Value param;
  std::vector<Value> states;
};

/// The number of elements of a tensor of `shape` (1 for a scalar's `{}`).
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// `x` as a value of element type `type` holds it: rounded to bf16 or f16
/// (through float, see above), 0/1 for i1, unchanged for f32, f64 and i64.
double roundToType(double x, mlir::Type type);

/// "[6, 4]".
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Runs `rule` once. `param` and `grad` are tensors of one shape (their
/// element type is the rule's, f32); `states` are the states at the start of
/// the step (empty: zeros); `step` is the 1-based step count; `hypers` give
/// hyperparameter values, the rule's defaults filling in the rest;
/// `globals` the values of the globals it reads.
mlir::FailureOr<RuleResult> evaluateRule(RuleOp rule, const Value &param,
                                         const Value &grad,
                                         llvm::ArrayRef<Value> states,
                                         int64_t step, const HyperMap &hypers,
                                         const GlobalMap &globals = {});

/// One step of `rule` on one parameter: increments `state.step`, then
/// replaces `state.param` and `state.states` with their new values. On
/// failure `state` is left unchanged.
mlir::LogicalResult stepRule(RuleOp rule, ParamState &state,
                             llvm::ArrayRef<double> grad,
                             const HyperMap &hypers,
                             const GlobalMap &globals = {});

/// The value of every global of `optimizer` in a step over `inputs` (every
/// parameter of the step, in its order): each `optgen.reduce_params` runs
/// its math on every parameter and accumulates every element in double,
/// parameter after parameter, and rounds once to its element type; the
/// math after the reductions runs once. Failure after an error at the op.
mlir::FailureOr<GlobalMap> evaluateGlobals(OptimizerOp optimizer,
                                           llvm::ArrayRef<GlobalInput> inputs);

/// Whether a parameter of `shape` satisfies `group`'s `where` region (true
/// when it has none). Name patterns are not this function's business.
mlir::FailureOr<bool> evaluateWhere(GroupOp group,
                                    llvm::ArrayRef<int64_t> shape);

/// The hyperparameter values `group` sets (its `settings`), as a HyperMap
/// for evaluateRule; the rule's defaults are not included.
HyperMap groupHypers(GroupOp group);

} // namespace optgen::interp

#endif // OPTGEN_INTERPRETER_INTERPRETER_H
