//===- Globals.h - A spec's globals as C-family statements ------*- C++ -*-===//
//
// What both targets print of an optimizer's globals (optgen.global): the
// per-element math of every reduction across parameters, with the
// constants it needs, for the loop (CPU) or kernel (CUDA) that makes each
// parameter's partials; and each global's math from the combined partials.
// The targets choose the loops, the loads and the accumulators around it.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TARGET_CFAMILY_GLOBALS_H
#define OPTGEN_TARGET_CFAMILY_GLOBALS_H

#include "dialect/OptgenDialect.h"
#include "optgen/Target/CFamily/StatementPrinter.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace optgen {

class GlobalsPrinter {
public:
  /// Prints `optimizer`'s globals through `printer`. Fails, after a
  /// diagnostic, on a body that is not a global's (classifyGlobalBody).
  static mlir::FailureOr<GlobalsPrinter> create(OptimizerOp optimizer,
                                                StatementPrinter &printer);

  /// The reductions across parameters, numbered as GlobalsSpec::partials.
  llvm::ArrayRef<ReduceParamsOp> partials() const { return partials_; }
  /// Whether any global reads the parameters, or the gradients.
  bool readsParam() const { return readsParam_; }
  bool readsGrad() const { return readsGrad_; }

  /// The constants (and math on them alone) the per-element math reads, as
  /// statements: once, before the loop over elements.
  mlir::LogicalResult printElementConstants();
  /// One element's math, its loads being `param` and `grad` (expressions):
  /// `accumulate(partial, value)` prints what the target does with each
  /// reduction's input `value` there.
  mlir::LogicalResult
  printElement(llvm::StringRef param, llvm::StringRef grad,
               llvm::function_ref<void(size_t partial, const std::string &value)>
                   accumulate);
  /// Every global from the combined partials, `partial(k)` the expression
  /// of partial k (a double): its statements, then `assign(global, value)`.
  mlir::LogicalResult
  printFinish(llvm::function_ref<std::string(size_t partial)> partial,
              llvm::function_ref<void(size_t global, const std::string &value)>
                  assign);

private:
  GlobalsPrinter(OptimizerOp optimizer, StatementPrinter &printer)
      : optimizer(optimizer), p(&printer) {}
  /// `op`, a constant or elementwise math, as a statement or an expression.
  mlir::LogicalResult printScalar(mlir::Operation *op);
  /// The constants `ops` read, not printed yet, in body order.
  mlir::LogicalResult printConstantsOf(llvm::ArrayRef<mlir::Operation *> ops);
  std::string valueOf(mlir::Value value) const;

  OptimizerOp optimizer;
  StatementPrinter *p;
  llvm::DenseMap<mlir::Operation *, GlobalPart> parts;
  llvm::SmallVector<ReduceParamsOp> partials_;
  bool readsParam_ = false, readsGrad_ = false;
  /// Expressions of scalars and of the current element's values.
  llvm::DenseMap<mlir::Value, std::string> exprs;
  unsigned counter = 0;
};

} // namespace optgen

#endif // OPTGEN_TARGET_CFAMILY_GLOBALS_H
