//===- OptgenDialect.h - The optgen dialect ---------------------*- C++ -*-===//
//
// Everything a user of the dialect includes: the dialect, its types,
// attributes and ops, and the type rules they share with the front end.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DIALECT_OPTGENDIALECT_H
#define OPTGEN_DIALECT_OPTGENDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"

#include "dialect/OptgenDialect.h.inc"
#include "dialect/OptgenEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialect/OptgenTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/OptgenAttrs.h.inc"

namespace optgen {
/// Marks ops whose result elements each depend only on the operands'
/// elements at the same broadcast position (see OptgenBase.td).
template <typename ConcreteType>
class ElementwiseMath
    : public mlir::OpTrait::TraitBase<ConcreteType, ElementwiseMath> {};

class HyperOp;
class StateOp;
} // namespace optgen

#define GET_OP_CLASSES
#include "dialect/OptgenOps.h.inc"

#include "dialect/TypeRules.h"

namespace optgen {
/// The names of the dialect's attributes on ops, as ODS declares them
/// (OptgenBase.td's discardableAttrs, which say what each holds).
inline constexpr llvm::StringLiteral kBuffersAttr =
    OptgenDialect::BuffersAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kWorkspaceAttr =
    OptgenDialect::WorkspaceAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kNextBuffersAttr =
    OptgenDialect::NextBuffersAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSpecializesAttr =
    OptgenDialect::SpecializesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kOnHostAttr =
    OptgenDialect::OnHostAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kMathAttr =
    OptgenDialect::MathAttrHelper::getNameStr();

/// The state declarations of `rule` in the order `optgen.update` lists their
/// new values.
llvm::SmallVector<StateOp> getRuleStates(RuleOp rule);

/// Whether `rule` is elementwise: for any rank, with no reduction, shape
/// query or matrix op, so that any part of a parameter can be stepped on
/// its own (ZeRO-2 then splits its parameters by element).
bool isElementwiseRule(RuleOp rule);

/// Whether a reduction along `axis` of a tensor of rank `rank` leaves one
/// value per column (along the first of two axes) rather than per row: a
/// `cols` launch's, not a `rows` launch's.
bool reducesToColumns(int64_t axis, int64_t rank);

/// The buffer optgen-assign-buffers gave tensor `value` (the parameter, the
/// gradient and states have their own); null before that pass.
BufferAttr getBuffer(mlir::Value value);

/// Calls `decision` with each scalar of `rule` that decides what the host
/// launches, so that it is needed on the host: loop counts, branch
/// conditions, the scales of matrix products, and reduction and state axes
/// that are not constants.
void forEachHostDecision(RuleOp rule,
                         llvm::function_ref<void(mlir::Value)> decision);

/// A fingerprint of the math `optimizer` computes: its rules and globals as
/// printed (every constant in place, no location), without the defaults of
/// hyperparameters or anything of groups, parameters and the distribution
/// (the values and the plan, which ranks and checkpoints compare apart).
/// 16 hex digits. The front end stores it (kMathAttr) on each optimizer it
/// makes; printers give it to the runtime.
std::string mathFingerprint(OptimizerOp optimizer);

/// The first op of `rule` outside kernels with a tensor result that has no
/// buffer (what a printer of executable IR reads for each), or null when
/// every one has.
mlir::Operation *findUnbufferedTensor(RuleOp rule);

/// Where an op of a global's body runs: once per element of every
/// parameter (it reads the parameter or the gradient), once per step after
/// the reductions across parameters (it reads one), or anywhere (constants
/// and math on them alone).
enum class GlobalPart { Constant, PerParameter, Finish };
/// The part of every op of `global`'s body but its terminator; failure
/// (reported at the op) for one that reads both a parameter's values and a
/// reduction across parameters.
mlir::FailureOr<llvm::DenseMap<mlir::Operation *, GlobalPart>>
classifyGlobalBody(GlobalOp global);

/// Every `optgen.reduce_params` of `optimizer`'s globals, in order (globals
/// in the optimizer's order, then each one's in its body's): the partials a
/// step accumulates, as the printers and the runtime number them.
llvm::SmallVector<ReduceParamsOp> getGlobalPartials(OptimizerOp optimizer);
} // namespace optgen

#endif // OPTGEN_DIALECT_OPTGENDIALECT_H
