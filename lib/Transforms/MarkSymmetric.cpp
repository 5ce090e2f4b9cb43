//===- MarkSymmetric.cpp - Products whose result is symmetric -------------===//
//
// Polar Express multiplies X^T X (or X X^T) and then A A of that symmetric
// A: a target that knows a result is symmetric computes one triangle
// (syrk), half the multiply-adds of a full product.
//
//===----------------------------------------------------------------------===//

#include "optgen/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"

namespace optgen {
#define GEN_PASS_DEF_MARKSYMMETRIC
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

struct MarkSymmetricPass : optgen::impl::MarkSymmetricBase<MarkSymmetricPass> {
  using MarkSymmetricBase::MarkSymmetricBase;

  void runOnOperation() override {
    llvm::DenseSet<Value> symmetric;
    // Operations in order, nested regions included: a value's definition
    // is seen before its uses.
    getOperation().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto gemm = dyn_cast<GemmOp>(op)) {
        if (markGemm(gemm, symmetric))
          symmetric.insert(gemm.getResult());
        return;
      }
      if (op->hasTrait<ElementwiseMath>() && isSymmetricMath(op, symmetric))
        symmetric.insert(op->getResult(0));
    });
  }

  /// Marks `gemm` if its result is symmetric; returns whether it is.
  bool markGemm(GemmOp gemm, const llvm::DenseSet<Value> &symmetric) {
    if (gemm.getSymmetric())
      return true;
    if (gemm.getA() != gemm.getB() ||
        (gemm.getC() && !symmetric.contains(gemm.getC())))
      return false;
    auto type = cast<SymbolicTensorType>(gemm.getType());
    if (auto rows = dyn_cast<IntegerAttr>(type.getDims()[0]))
      if (rows.getInt() < minSize)
        return false;
    if (gemm.getTransposeA() == gemm.getTransposeB()) {
      // A @ A of a symmetric A is A @ A^T.
      if (!symmetric.contains(gemm.getA()))
        return false;
      gemm.setTransposeB(!gemm.getTransposeB());
    }
    gemm.setSymmetric(true);
    return true;
  }

  /// Elementwise math over symmetric tensors of the result's full shape
  /// (a broadcast row or column would break the symmetry) and scalars.
  static bool isSymmetricMath(Operation *op,
                              const llvm::DenseSet<Value> &symmetric) {
    auto result = dyn_cast<SymbolicTensorType>(op->getResult(0).getType());
    if (!result)
      return false;
    for (Value operand : op->getOperands()) {
      auto type = dyn_cast<SymbolicTensorType>(operand.getType());
      if (!type)
        continue;
      if (!symmetric.contains(operand) || type.getDims() != result.getDims())
        return false;
    }
    return true;
  }
};

} // namespace
