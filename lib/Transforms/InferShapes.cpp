//===- InferShapes.cpp - Recompute every value's shape and dtype ----------===//

#include "optgen/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace optgen {
#define GEN_PASS_DEF_INFERSHAPES
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

/// `value` as `type`: itself, or cast when only `?` dimensions differ.
Value asType(OpBuilder &builder, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return builder.create<CastOp>(value.getLoc(), type, value);
}

/// Makes the yields of `block` give exactly `types`.
void castYields(Block &block, TypeRange types) {
  auto yield = cast<YieldOp>(block.getTerminator());
  OpBuilder builder(yield);
  for (auto [operand, type] : llvm::zip(yield->getOpOperands(), types))
    operand.set(asType(builder, operand.get(), type));
}

LogicalResult inferBlock(Block &block);

LogicalResult inferOp(Operation *op) {
  if (auto loop = dyn_cast<ForTableOp>(op)) {
    // Loop-carried values keep their initial values' types.
    Block &body = loop.getBody().front();
    unsigned width = loop.getRowLength();
    for (auto [init, arg, result] :
         llvm::zip(loop.getInits(), body.getArguments().drop_front(width),
                   loop.getResults())) {
      arg.setType(init.getType());
      result.setType(init.getType());
    }
    if (failed(inferBlock(body)))
      return failure();
    castYields(body, loop.getInits().getTypes());
    return success();
  }
  if (auto ifOp = dyn_cast<IfOp>(op)) {
    if (failed(inferBlock(ifOp.getThenRegion().front())) ||
        failed(inferBlock(ifOp.getElseRegion().front())))
      return failure();
    auto yield = cast<YieldOp>(ifOp.getThenRegion().front().getTerminator());
    for (auto [result, type] :
         llvm::zip(ifOp.getResults(), yield.getValues().getTypes()))
      result.setType(type);
    castYields(ifOp.getElseRegion().front(), ifOp.getResultTypes());
    return success();
  }
  if (isa<KernelOp, LaunchOp>(op)) {
    Block &body = op->getRegion(0).front();
    if (failed(inferBlock(body)))
      return failure();
    auto yield = cast<YieldOp>(body.getTerminator());
    for (auto [result, type] :
         llvm::zip(op->getResults(), yield.getValues().getTypes()))
      result.setType(type);
    return success();
  }
  if (auto state = dyn_cast<StateOp>(op)) {
    if (!state.getLike())
      return success();
    Type shape = state.getLike().getType();
    if (state.getAxis()) {
      std::optional<int64_t> axis;
      APInt value;
      if (matchPattern(state.getAxis(), m_ConstantInt(&value)))
        axis = value.getSExtValue();
      FailureOr<Type> reduced =
          inferReduceType(state.getLoc(), "reduced", shape, true, axis);
      if (failed(reduced))
        return failure();
      shape = *reduced;
    }
    auto old = cast<SymbolicTensorType>(state.getType());
    state.getResult().setType(
        cast<SymbolicTensorType>(shape).withElementType(old.getElementType()));
    return success();
  }
  if (auto cast = dyn_cast<CastOp>(op)) {
    Type element = getElementTypeOrSelf(cast.getType());
    if (auto input = dyn_cast<SymbolicTensorType>(cast.getInput().getType()))
      cast.getResult().setType(input.withElementType(element));
    return success();
  }
  auto inferable = dyn_cast<InferTypeOpInterface>(op);
  if (!inferable)
    return success();
  SmallVector<Type> types;
  if (failed(inferable.inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(),
          op->getAttrDictionary(), op->getPropertiesStorage(),
          op->getRegions(), types)))
    return failure();
  for (auto [result, type] : llvm::zip(op->getResults(), types))
    result.setType(type);
  return success();
}

LogicalResult inferBlock(Block &block) {
  for (Operation &op : block)
    if (failed(inferOp(&op)))
      return failure();
  return success();
}

struct InferShapesPass : optgen::impl::InferShapesBase<InferShapesPass> {
  void runOnOperation() override {
    if (failed(inferShapes(getOperation())))
      signalPassFailure();
  }
};

} // namespace

LogicalResult optgen::inferShapes(RuleOp rule) {
  if (failed(inferBlock(rule.getBlock())))
    return failure();
  // The update keeps the declared types of parameter and states.
  auto update = cast<UpdateOp>(rule.getBlock().getTerminator());
  OpBuilder builder(update);
  update.getParamMutable().assign(
      asType(builder, update.getParam(), rule.getParam().getType()));
  for (auto [operand, state] :
       llvm::zip(update.getStatesMutable(), getRuleStates(rule)))
    operand.set(asType(builder, operand.get(), state.getType()));
  return success();
}
