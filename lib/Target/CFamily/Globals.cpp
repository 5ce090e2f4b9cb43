//===- Globals.cpp - A spec's globals as C-family statements --------------===//

#include "optgen/Target/CFamily/Globals.h"

#include "optgen/Target/CFamily/Expressions.h"
#include "optgen/Target/CFamily/SourceInfo.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace optgen;

FailureOr<GlobalsPrinter> GlobalsPrinter::create(OptimizerOp optimizer,
                                                 StatementPrinter &printer) {
  GlobalsPrinter globals(optimizer, printer);
  for (GlobalOp global : optimizer.getBlock().getOps<GlobalOp>()) {
    FailureOr<llvm::DenseMap<Operation *, GlobalPart>> parts =
        classifyGlobalBody(global);
    if (failed(parts))
      return failure();
    globals.parts.insert(parts->begin(), parts->end());
    globals.readsParam_ |= !global.getBlock().getArgument(0).use_empty();
    globals.readsGrad_ |= !global.getBlock().getArgument(1).use_empty();
  }
  globals.partials_ = getGlobalPartials(optimizer);
  return globals;
}

std::string GlobalsPrinter::valueOf(Value value) const {
  return exprs.lookup(value);
}

LogicalResult GlobalsPrinter::printScalar(Operation *op) {
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    std::string expr = constantExpression(constant.getValue());
    if (expr.empty())
      return constant.emitError("cannot print the constant ")
             << constant.getValue();
    exprs[constant] = expr;
    return success();
  }
  SmallVector<std::string> operands;
  for (Value operand : op->getOperands())
    operands.push_back(valueOf(operand));
  std::string expr = elementExpression(op, operands);
  if (expr.empty())
    return op->emitError("cannot print this op in a global");
  Value result = op->getResult(0);
  std::string name = p->nameFor(result, "s");
  p->noteSource(op);
  p->line() << "const " << cType(result.getType()) << " " << name << " = "
            << expr << ";\n";
  exprs[result] = name;
  return success();
}

LogicalResult GlobalsPrinter::printConstantsOf(ArrayRef<Operation *> ops) {
  llvm::SmallPtrSet<Operation *, 8> needed;
  SmallVector<Operation *> worklist(ops.begin(), ops.end());
  while (!worklist.empty())
    for (Value operand : worklist.pop_back_val()->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && parts.lookup(def) == GlobalPart::Constant &&
          !exprs.count(operand) && needed.insert(def).second)
        worklist.push_back(def);
  for (GlobalOp global : optimizer.getBlock().getOps<GlobalOp>())
    for (Operation &op : global.getBlock().without_terminator())
      if (needed.contains(&op) && failed(printScalar(&op)))
        return failure();
  return success();
}

LogicalResult GlobalsPrinter::printElementConstants() {
  SmallVector<Operation *> perElement;
  for (auto [op, part] : parts)
    if (part == GlobalPart::PerParameter || isa<ReduceParamsOp>(op))
      perElement.push_back(op);
  return printConstantsOf(perElement);
}

LogicalResult GlobalsPrinter::printElement(
    StringRef param, StringRef grad,
    function_ref<void(size_t, const std::string &)> accumulate) {
  for (GlobalOp global : optimizer.getBlock().getOps<GlobalOp>()) {
    exprs[global.getBlock().getArgument(0)] = param.str();
    exprs[global.getBlock().getArgument(1)] = grad.str();
    for (Operation &op : global.getBlock().without_terminator()) {
      if (auto reduce = dyn_cast<ReduceParamsOp>(op)) {
        p->noteSource(&op);
        accumulate(llvm::find(partials_, reduce) - partials_.begin(),
                   valueOf(reduce.getInput()));
        continue;
      }
      if (parts.lookup(&op) != GlobalPart::PerParameter)
        continue;
      SmallVector<std::string> operands;
      for (Value operand : op.getOperands())
        operands.push_back(valueOf(operand));
      std::string expr = elementExpression(&op, operands);
      if (expr.empty())
        return op.emitError("cannot print this op in a global");
      Value result = op.getResult(0);
      std::optional<StringRef> spec = specName(result);
      std::string name = p->names.unique(
          (spec ? *spec : StringRef("e")).str() + "_" +
          std::to_string(counter++));
      p->noteSource(&op);
      p->line() << "const " << cType(getElementTypeOrSelf(result.getType()))
                << " " << name << " = " << expr << ";\n";
      exprs[result] = name;
    }
  }
  return success();
}

LogicalResult GlobalsPrinter::printFinish(
    function_ref<std::string(size_t)> partial,
    function_ref<void(size_t, const std::string &)> assign) {
  for (auto [index, global] :
       llvm::enumerate(optimizer.getBlock().getOps<GlobalOp>())) {
    SmallVector<Operation *> finish;
    for (Operation &op : global.getBlock().without_terminator())
      if (parts.lookup(&op) == GlobalPart::Finish)
        finish.push_back(&op);
    finish.push_back(global.getBlock().getTerminator());
    if (failed(printConstantsOf(finish)))
      return failure();
    for (Operation *op : finish) {
      if (auto reduce = dyn_cast<ReduceParamsOp>(op)) {
        p->noteSource(op);
        Type element = reduce.getType();
        std::string name = p->nameFor(reduce, "total");
        size_t at = llvm::find(partials_, reduce) - partials_.begin();
        p->line() << "const " << cType(element) << " " << name << " = "
                  << rounded("static_cast<float>(" + partial(at) + ")",
                             element)
                  << ";\n";
        exprs[reduce] = name;
        continue;
      }
      if (isa<YieldOp>(op)) {
        assign(index, valueOf(global.getResult()));
        continue;
      }
      if (failed(printScalar(op)))
        return failure();
    }
  }
  return success();
}
