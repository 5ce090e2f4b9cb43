//===- LowerMatmuls.cpp - Matrix products as gemms ------------------------===//
//
// A transposed operand of a product is read in place through the gemm's
// transpose flag: BLAS and cuBLAS take the flag, so no transposed copy is
// ever made for a product.
//
//===----------------------------------------------------------------------===//

#include "optgen/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace optgen {
#define GEN_PASS_DEF_LOWERMATMULS
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

/// `value` with a transpose looked through: the matrix read, and whether
/// it is read transposed.
std::pair<Value, bool> throughTranspose(Value value) {
  if (auto transpose = value.getDefiningOp<TransposeOp>())
    return {transpose.getInput(), true};
  return {value, false};
}

struct LowerMatmulsPass : optgen::impl::LowerMatmulsBase<LowerMatmulsPass> {
  void runOnOperation() override {
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp op) { matmuls.push_back(op); });
    for (MatmulOp matmul : matmuls) {
      auto [a, transposeA] = throughTranspose(matmul.getLhs());
      auto [b, transposeB] = throughTranspose(matmul.getRhs());
      OpBuilder builder(matmul);
      auto gemm = builder.create<GemmOp>(
          matmul.getLoc(), matmul.getType(), a, b, /*alpha=*/Value(),
          /*c=*/Value(), /*beta=*/Value(), transposeA, transposeB,
          /*symmetric=*/false);
      matmul.replaceAllUsesWith(gemm.getResult());
      matmul.erase();
    }
    // Transposes that only fed products are dead now.
    SmallVector<TransposeOp> transposes;
    getOperation().walk([&](TransposeOp op) { transposes.push_back(op); });
    for (TransposeOp transpose : transposes)
      if (transpose->use_empty())
        transpose.erase();
  }
};

} // namespace
