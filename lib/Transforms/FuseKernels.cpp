//===- FuseKernels.cpp - Fuse elementwise chains into kernels -------------===//
//
// Three steps over every block of a rule:
//  1. sink each elementwise tensor op to just before its first user, so the
//     chains that feed one consumer sit together (a * x waits for the matrix
//     product it is added to);
//  2. hoist scalar math (hyperparameter arithmetic, shape queries) to just
//     after its operands, so it does not split the tensor work;
//  3. cut the block into maximal runs of elementwise ops over one iteration
//     space, with the reductions of values they compute, and wrap each run
//     in an `optgen.kernel`; scalar math inside a run that the run does not
//     read (a norm's scaling) moves after the kernel instead of ending it.
//
//===----------------------------------------------------------------------===//

#include "optgen/Transforms/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace optgen {
#define GEN_PASS_DEF_FUSEKERNELS
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

bool isTensor(Type type) { return isa<SymbolicTensorType>(type); }

bool isElementwiseTensorOp(Operation *op) {
  return op->hasTrait<ElementwiseMath>() &&
         isTensor(op->getResult(0).getType());
}

/// Scalar math that may move up freely: pure, no regions, no tensor values
/// (except shape queries, which read only a tensor's shape).
bool isHoistableScalarOp(Operation *op) {
  if (isa<HyperOp, StateOp>(op) || op->getNumRegions() != 0 ||
      op->hasTrait<OpTrait::IsTerminator>() || !isPure(op))
    return false;
  if (isa<DimOp, NDimOp, NumelOp>(op))
    return true;
  return llvm::none_of(op->getOperandTypes(), isTensor) &&
         llvm::none_of(op->getResultTypes(), isTensor);
}

/// Shapes are the same iteration space when their dimensions agree; the
/// element type does not matter.
bool sameSpace(Type a, Type b) {
  auto x = dyn_cast<SymbolicTensorType>(a), y = dyn_cast<SymbolicTensorType>(b);
  return x && y && x.getAnyRank() == y.getAnyRank() &&
         x.getDims() == y.getDims();
}

void sinkElementwiseOps(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    if (isElementwiseTensorOp(&op))
      ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    Operation *firstUser = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *inBlock = block.findAncestorOpInBlock(*user);
      if (inBlock && (!firstUser || inBlock->isBeforeInBlock(firstUser)))
        firstUser = inBlock;
    }
    if (firstUser && op->getNextNode() != firstUser)
      op->moveBefore(firstUser);
  }
}

void hoistScalarOps(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  // Ops that depend on nothing in the block go, in their order, after the
  // declarations (hypers, states) that precede them.
  Operation *independentCursor = nullptr;
  for (Operation *op : ops) {
    if (isa<HyperOp, StateOp>(op)) {
      independentCursor = op;
      continue;
    }
    if (!isHoistableScalarOp(op))
      continue;
    Operation *lastOperand = nullptr;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || def->getBlock() != &block)
        continue;
      if (!lastOperand || lastOperand->isBeforeInBlock(def))
        lastOperand = def;
    }
    if (lastOperand) {
      op->moveAfter(lastOperand);
      continue;
    }
    if (independentCursor)
      op->moveAfter(independentCursor);
    else
      op->moveBefore(&block.front());
    independentCursor = op;
  }
}

/// Wraps the contiguous ops of `group` in one kernel.
void wrapInKernel(ArrayRef<Operation *> group) {
  llvm::SmallPtrSet<Operation *, 16> members(group.begin(), group.end());
  SmallVector<Value> escaping;
  for (Operation *op : group)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !members.contains(
                group.front()->getBlock()->findAncestorOpInBlock(*user));
          }))
        escaping.push_back(result);

  OpBuilder builder(group.front());
  SmallVector<Location> locs;
  for (Operation *op : group)
    locs.push_back(op->getLoc());
  auto kernel = builder.create<KernelOp>(builder.getFusedLoc(locs),
                                         ValueRange(escaping).getTypes());
  Block &body = kernel.getBody().emplaceBlock();
  for (Operation *op : group)
    op->moveBefore(&body, body.end());
  builder.setInsertionPointToEnd(&body);
  builder.create<YieldOp>(kernel.getLoc(), escaping);
  for (auto [value, result] : llvm::zip(escaping, kernel.getResults()))
    value.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !kernel->isProperAncestor(use.getOwner());
    });
}

void formKernels(Block &block) {
  SmallVector<Operation *> group;
  Type space;
  llvm::SmallPtrSet<Value, 4> reductions; // computed by the current group
  // Scalar math met inside the current run (a reduction's result scaled,
  // a shape query) does not end it: it ends up after the kernel, where what
  // it reads is computed. An op of the run that needs it ends the run.
  llvm::SmallPtrSet<Value, 8> deferred;
  auto flush = [&] {
    if (!group.empty())
      wrapInKernel(group);
    group.clear();
    reductions.clear();
    deferred.clear();
  };
  auto usesReduction = [&](Operation *op) {
    return llvm::any_of(op->getOperands(), [&](Value v) {
      return reductions.contains(v) || deferred.contains(v);
    });
  };

  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  for (Operation *op : ops) {
    if (isElementwiseTensorOp(op)) {
      Type opSpace = op->getResult(0).getType();
      if (group.empty() || !sameSpace(opSpace, space) || usesReduction(op)) {
        flush();
        space = opSpace;
      }
      group.push_back(op);
      continue;
    }
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      Type input = reduce.getInput().getType();
      if (group.empty() || !sameSpace(input, space) || usesReduction(op)) {
        flush();
        space = input;
      }
      group.push_back(op);
      reductions.insert(reduce.getResult());
      continue;
    }
    // (Shape queries of the run's tensors are not deferred: they would make
    // the kernel write the tensor out.)
    if (!group.empty() && isHoistableScalarOp(op) &&
        llvm::none_of(op->getOperandTypes(), isTensor)) {
      for (Value result : op->getResults())
        deferred.insert(result);
      continue;
    }
    flush();
    if (isa<IfOp, ForTableOp>(op))
      for (Region &region : op->getRegions())
        for (Block &nested : region)
          formKernels(nested);
  }
  flush();
}

struct FuseKernelsPass : optgen::impl::FuseKernelsBase<FuseKernelsPass> {
  void runOnOperation() override {
    RuleOp rule = getOperation();
    // Nested blocks first (their own sinking and hoisting), then each level
    // forms its kernels.
    SmallVector<Block *> blocks;
    rule.walk([&](Block *block) {
      if (!isa<KernelOp, LaunchOp, GroupOp>(block->getParentOp()))
        blocks.push_back(block);
    });
    for (Block *block : blocks) {
      sinkElementwiseOps(*block);
      hoistScalarOps(*block);
    }
    formKernels(rule.getBlock());
  }
};

} // namespace
