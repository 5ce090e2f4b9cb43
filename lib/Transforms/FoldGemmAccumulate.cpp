//===- FoldGemmAccumulate.cpp - Scaled sums into a gemm's alpha and beta --===//
//
// `s * (A @ B) + t * C` is what a BLAS gemm computes in one call
// (C := alpha * A @ B + beta * C): folding it saves the elementwise pass
// over the product and the temporary that holds it.
//
//===----------------------------------------------------------------------===//

#include "optgen/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace optgen {
#define GEN_PASS_DEF_FOLDGEMMACCUMULATE
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

bool isFloatScalar(Value value) { return isa<FloatType>(value.getType()); }

/// A term of a sum: `scale * tensor`, `tensor * scale` or `tensor` (no
/// scale), with the multiplication that formed it.
struct Term {
  Value scale;
  Value tensor;
  MulOp mul;
};

Term decompose(Value value) {
  auto mul = value.getDefiningOp<MulOp>();
  if (!mul || !mul->hasOneUse())
    return {Value(), value, MulOp()};
  Value lhs = mul.getLhs(), rhs = mul.getRhs();
  if (isFloatScalar(lhs) && isa<SymbolicTensorType>(rhs.getType()))
    return {lhs, rhs, mul};
  if (isFloatScalar(rhs) && isa<SymbolicTensorType>(lhs.getType()))
    return {rhs, lhs, mul};
  return {Value(), value, MulOp()};
}

/// The product of `term`, if folding may consume it: a gemm that adds
/// nothing yet, used only by this sum, of the sum's exact type.
GemmOp foldableProduct(const Term &term, Type sumType) {
  auto gemm = term.tensor.getDefiningOp<GemmOp>();
  if (!gemm || gemm.getC() || gemm.getAlpha() || !gemm->hasOneUse() ||
      gemm.getType() != sumType)
    return {};
  return gemm;
}

/// Rewrites `sum` (an add or sub of two tensor terms) into one gemm; false
/// when it does not have that form.
bool fold(Operation *sum) {
  bool subtract = isa<SubOp>(sum);
  Type type = sum->getResult(0).getType();
  Term terms[2] = {decompose(sum->getOperand(0)),
                   decompose(sum->getOperand(1))};
  for (int productSide : {1, 0}) {
    const Term &product = terms[productSide];
    const Term &accumulated = terms[1 - productSide];
    GemmOp gemm = foldableProduct(product, type);
    if (!gemm || accumulated.tensor.getType() != type ||
        accumulated.tensor == gemm.getResult())
      continue;
    OpBuilder builder(sum);
    Location loc = sum->getLoc();
    Type f32 = builder.getF32Type();
    auto one = [&] {
      return builder.create<ConstantOp>(loc, f32, builder.getF32FloatAttr(1))
          .getResult();
    };
    // `x - y`: the subtracted side's scale is negated.
    auto negated = [&](Value scale) -> Value {
      Value s = scale ? scale : one();
      return builder.create<NegOp>(loc, s.getType(), s).getResult();
    };
    Value alpha = product.scale, beta = accumulated.scale;
    if (subtract && productSide == 1)
      alpha = negated(alpha);
    if (subtract && productSide == 0)
      beta = negated(beta);
    if (!beta)
      beta = one();
    auto folded = builder.create<GemmOp>(
        gemm.getLoc(), type, gemm.getA(), gemm.getB(), alpha,
        accumulated.tensor, beta, gemm.getTransposeA(), gemm.getTransposeB(),
        /*symmetric=*/false);
    folded->setLoc(builder.getFusedLoc({gemm.getLoc(), loc}));
    sum->getResult(0).replaceAllUsesWith(folded.getResult());
    sum->erase();
    for (MulOp mul : {product.mul, accumulated.mul})
      if (mul && mul->use_empty())
        mul.erase();
    gemm.erase();
    return true;
  }
  return false;
}

struct FoldGemmAccumulatePass
    : optgen::impl::FoldGemmAccumulateBase<FoldGemmAccumulatePass> {
  void runOnOperation() override {
    SmallVector<Operation *> sums;
    getOperation().walk([&](Operation *op) {
      if (isa<AddOp, SubOp>(op) &&
          isa<SymbolicTensorType>(op->getResult(0).getType()))
        sums.push_back(op);
    });
    for (Operation *sum : sums)
      (void)fold(sum);
  }
};

} // namespace
