//===- TypeRulesTest.cpp - Broadcasting and promotion rules ---------------===//
//
// The rules every elementwise op and MLIRGen share, checked case by case
// against what PyTorch does for the same operands.
//
//===----------------------------------------------------------------------===//

#include "dialect/OptgenDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace optgen;

namespace {

class TypeRulesTest : public ::testing::Test {
protected:
  TypeRulesTest() : builder(&context) {
    context.getOrLoadDialect<OptgenDialect>();
    // Failed inference reports through diagnostics; keep them quiet here.
    context.getDiagEngine().registerHandler([](Diagnostic &) {});
  }

  Attribute dim(StringRef name) { return builder.getStringAttr(name); }
  Attribute dim(int64_t size) { return builder.getI64IntegerAttr(size); }
  Attribute unknown() { return builder.getUnitAttr(); }

  Type tensor(ArrayRef<Attribute> dims, Type element) {
    return SymbolicTensorType::get(dims, element);
  }

  /// The elementwise result type as diagnostics print it, or "error".
  std::string elementwise(ArrayRef<Type> operands,
                          ResultDType kind = ResultDType::Promoted) {
    FailureOr<Type> type = inferElementwiseType(builder.getUnknownLoc(), "op",
                                                operands, kind);
    return failed(type) ? "error" : describeType(*type);
  }

  MLIRContext context;
  OpBuilder builder;
  Type f32 = builder.getF32Type(), bf16 = builder.getBF16Type(),
       f16 = builder.getF16Type(), f64 = builder.getF64Type(),
       i64 = builder.getI64Type(), i1 = builder.getI1Type();
};

TEST_F(TypeRulesTest, ScalarsNeverWidenTensors) {
  Type x = tensor({dim("m"), dim("n")}, bf16);
  EXPECT_EQ(elementwise({x, f32}), "[m, n] bf16");
  EXPECT_EQ(elementwise({f32, x}), "[m, n] bf16");
  EXPECT_EQ(elementwise({x, i64}), "[m, n] bf16");
}

TEST_F(TypeRulesTest, TensorsWiden) {
  Type x = tensor({dim("m"), dim("n")}, bf16);
  Type p = tensor({dim("m"), dim("n")}, f32);
  Type h = tensor({dim("m"), dim("n")}, f16);
  EXPECT_EQ(elementwise({x, p}), "[m, n] f32");
  // bf16 and f16 have no common 16-bit type.
  EXPECT_EQ(elementwise({x, h}), "[m, n] f32");
}

TEST_F(TypeRulesTest, LiteralsAreWeak) {
  EXPECT_EQ(elementwise({bf16, f64}), "bf16");
  EXPECT_EQ(elementwise({f64, f32}), "f32");
  EXPECT_EQ(elementwise({f64, f64}), "f64");
  // A literal meeting a mask gives an f32 tensor, never an f64 one.
  Type mask = tensor({dim("m")}, i1);
  EXPECT_EQ(elementwise({mask, f64}), "[m] f32");
}

TEST_F(TypeRulesTest, ScalarPromotion) {
  EXPECT_EQ(elementwise({i64, i64}), "i64");
  EXPECT_EQ(elementwise({i64, f32}), "f32");
  EXPECT_EQ(elementwise({bf16, f32}), "f32");
  EXPECT_EQ(elementwise({i64, bf16}), "bf16");
  EXPECT_EQ(elementwise({i64, i64}, ResultDType::Float), "f32");
  EXPECT_EQ(elementwise({i1, i1}), "i64");
}

TEST_F(TypeRulesTest, MasksTimesFloats) {
  Type mask = tensor({dim("m"), dim("n")}, i1);
  Type p = tensor({dim("m"), dim("n")}, f32);
  EXPECT_EQ(elementwise({p, mask}), "[m, n] f32");
  EXPECT_EQ(elementwise({mask, mask}, ResultDType::Logical), "[m, n] i1");
  EXPECT_EQ(elementwise({p, mask}, ResultDType::Logical), "error");
}

TEST_F(TypeRulesTest, Broadcasting) {
  Type mn = tensor({dim("m"), dim("n")}, f32);
  Type m1 = tensor({dim("m"), dim(1)}, f32);
  Type onen = tensor({dim(1), dim("n")}, f32);
  Type nm = tensor({dim("n"), dim("m")}, f32);
  Type n = tensor({dim("n")}, f32);
  Type unknown2 = tensor({unknown(), unknown()}, f32);
  EXPECT_EQ(elementwise({mn, m1}), "[m, n] f32");
  EXPECT_EQ(elementwise({m1, onen}), "[m, n] f32");
  EXPECT_EQ(elementwise({mn, n}), "[m, n] f32");
  EXPECT_EQ(elementwise({mn, nm}), "error");
  // `?` defers the check to binding time and takes the known size.
  EXPECT_EQ(elementwise({mn, unknown2}), "[m, n] f32");
  EXPECT_EQ(elementwise({unknown2, m1}), "[m, ?] f32");
}

TEST_F(TypeRulesTest, AnyRankMeetsOnlyAnyRank) {
  Type any = SymbolicTensorType::getUnranked(f32);
  Type mn = tensor({dim("m"), dim("n")}, f32);
  EXPECT_EQ(elementwise({any, any}), "* f32");
  EXPECT_EQ(elementwise({any, f32}), "* f32");
  EXPECT_EQ(elementwise({any, mn}), "error");
}

TEST_F(TypeRulesTest, Reductions) {
  Type mn = tensor({dim("m"), dim("n")}, bf16);
  auto reduce = [&](bool hasAxis, std::optional<int64_t> axis) {
    FailureOr<Type> t = inferReduceType(builder.getUnknownLoc(), "sum", mn,
                                        hasAxis, axis);
    return failed(t) ? std::string("error") : describeType(*t);
  };
  EXPECT_EQ(reduce(false, std::nullopt), "bf16");
  EXPECT_EQ(reduce(true, 0), "[1, n] bf16");
  EXPECT_EQ(reduce(true, -1), "[m, 1] bf16");
  EXPECT_EQ(reduce(true, 2), "error");
  EXPECT_EQ(reduce(true, -3), "error");
  EXPECT_EQ(reduce(true, std::nullopt), "[?, ?] bf16");
}

TEST_F(TypeRulesTest, Matmul) {
  Type mn = tensor({dim("m"), dim("n")}, bf16);
  Type nk = tensor({dim("n"), dim("k")}, f32);
  auto matmul = [&](Type a, Type b) {
    FailureOr<Type> t = inferMatmulType(builder.getUnknownLoc(), a, b);
    return failed(t) ? std::string("error") : describeType(*t);
  };
  EXPECT_EQ(matmul(mn, nk), "[m, k] f32");
  EXPECT_EQ(matmul(mn, mn), "error");
  EXPECT_EQ(matmul(tensor({dim("n")}, f32), mn), "error");
  FailureOr<Type> t = inferTransposeType(builder.getUnknownLoc(), mn);
  ASSERT_TRUE(succeeded(t));
  EXPECT_EQ(describeType(*t), "[n, m] bf16");
}

TEST_F(TypeRulesTest, ShapeCompatibility) {
  Type mn = tensor({dim("m"), dim("n")}, f32);
  Type unknown2 = tensor({unknown(), unknown()}, bf16);
  Type nm = tensor({dim("n"), dim("m")}, f32);
  EXPECT_TRUE(areShapesCompatible(mn, unknown2));
  EXPECT_FALSE(areShapesCompatible(mn, nm));
  EXPECT_FALSE(areShapesCompatible(mn, f32));
  EXPECT_TRUE(areShapesCompatible(f32, bf16));
}

} // namespace
