//===- SpecializeShapes.cpp - A copy of each bucket's rule per shape ------===//

#include "optgen/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

namespace optgen {
#define GEN_PASS_DEF_SPECIALIZESHAPES
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

struct SpecializeShapesPass
    : optgen::impl::SpecializeShapesBase<SpecializeShapesPass> {
  void runOnOperation() override {
    OptimizerOp optimizer = getOperation();
    SymbolTable symbols(optimizer);
    // Copies follow their rule, in the order of the buckets.
    llvm::DenseMap<Operation *, Operation *> lastCopy;
    for (BucketOp bucket : optimizer.getBlock().getOps<BucketOp>()) {
      auto group = symbols.lookup<GroupOp>(bucket.getGroup());
      auto rule = symbols.lookup<RuleOp>(group.getRule());
      std::string name = (rule.getSymName() + "_" +
                          llvm::join(llvm::map_range(bucket.getShape(),
                                                     [](int64_t d) {
                                                       return std::to_string(d);
                                                     }),
                                     "x"))
                             .str();
      if (!symbols.lookup(name)) {
        auto type = cast<SymbolicTensorType>(rule.getParam().getType());
        SmallVector<Attribute> dims;
        for (int64_t d : bucket.getShape())
          dims.push_back(IntegerAttr::get(IntegerType::get(&getContext(), 64), d));
        auto concrete = SymbolicTensorType::get(dims, type.getElementType());
        OpBuilder builder(rule);
        Operation *&after = lastCopy[rule];
        builder.setInsertionPointAfter(after ? after : rule.getOperation());
        auto copy = cast<RuleOp>(builder.clone(*rule));
        after = copy;
        copy.setSymName(name);
        // What holds for the rule for any shape (being elementwise: ZeRO-2
        // may split it by element) holds for its copy.
        copy->setAttr(kSpecializesAttr, FlatSymbolRefAttr::get(rule));
        for (BlockArgument arg : copy.getBlock().getArguments())
          arg.setType(concrete);
        symbols.insert(copy);
        if (failed(inferShapes(copy)))
          return signalPassFailure();
      }
      bucket.setRuleAttr(FlatSymbolRefAttr::get(&getContext(), name));
    }
  }
};

} // namespace
