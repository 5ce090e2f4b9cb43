//===- StatementPrinter.cpp - Printing statements of generated code -------===//

#include "optgen/Target/CFamily/StatementPrinter.h"

#include "optgen/Target/CFamily/Expressions.h"
#include "optgen/Target/CFamily/SourceInfo.h"

using namespace mlir;
using namespace optgen;

raw_ostream &StatementPrinter::line() {
  for (unsigned i = 0; i < indent; ++i)
    os << "  ";
  return os;
}

void StatementPrinter::noteSource(Operation *op) {
  std::optional<FileLineColLoc> file = fileLocation(op->getLoc());
  if (!file || file->getLine() == lastLine)
    return;
  lastLine = file->getLine();
  std::string text = sourceLine ? sourceLine(lastLine) : std::string();
  line() << "// " << commentText(specFile) << ":" << lastLine;
  if (!text.empty())
    os << ": " << commentText(text);
  os << "\n";
}

std::string StatementPrinter::nameFor(Value value, StringRef fallback) {
  std::optional<StringRef> spec = specName(value);
  return names.unique(spec ? *spec : fallback);
}

/// Where `global`'s value is in a call's globals: its global's place among
/// the optimizer's.
static int64_t globalIndex(GlobalValueOp global) {
  int64_t index = 0;
  for (GlobalOp g :
       global->getParentOfType<OptimizerOp>().getBlock().getOps<GlobalOp>()) {
    if (g.getSymName() == global.getGlobal())
      break;
    ++index;
  }
  return index;
}

std::optional<std::string>
StatementPrinter::printScalarRead(Operation *op, StringRef hypers) {
  // A hyperparameter's element `index` at `offset`, read as `type`.
  auto hyperRead = [&](HyperOp hyper, Type type,
                       int64_t index) -> std::optional<std::string> {
    std::optional<uint64_t> offset = hyper.getOffset();
    if (!offset) {
      hyper.emitError("generated code reads hyperparameters at their "
                      "offsets; run --optgen-assign-hyper-offsets first");
      return std::nullopt;
    }
    if (isa<TupleType>(type))
      return std::to_string(*offset);
    noteSource(hyper);
    std::string name =
        names.unique(isa<TupleType>(hyper.getType())
                         ? hyper.getName().str() + "_" + std::to_string(index)
                         : hyper.getName().str());
    line() << "const " << cType(type) << " " << name << " = static_cast<"
           << cType(type) << ">(" << hypers << "[" << *offset + index
           << "]);\n";
    return name;
  };
  if (auto hyper = dyn_cast<HyperOp>(op))
    return hyperRead(hyper, hyper.getType(), 0);
  if (auto get = dyn_cast<TupleGetOp>(op)) {
    auto hyper = get.getTuple().getDefiningOp<HyperOp>();
    if (!hyper) {
      get.emitError("generated code reads tuples of hyperparameters only");
      return std::nullopt;
    }
    return hyperRead(hyper, get.getType(), get.getIndex());
  }
  if (auto global = dyn_cast<GlobalValueOp>(op)) {
    noteSource(global);
    std::string name = nameFor(global, "global");
    line() << "const float " << name << " = call.globals["
           << globalIndex(global) << "];\n";
    return name;
  }
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    std::string expr = constantExpression(constant.getValue());
    if (expr.empty()) {
      constant.emitError("generated code has no spelling of ")
          << constant.getValue();
      return std::nullopt;
    }
    return expr;
  }
  return std::string();
}

std::string StatementPrinter::printMath(Operation *op,
                                        ArrayRef<std::string> operands,
                                        StringRef fallback) {
  std::string expr = elementExpression(op, operands);
  if (expr.empty())
    return expr;
  Value result = op->getResult(0);
  std::string name = nameFor(result, fallback);
  line() << "const " << cType(getElementTypeOrSelf(result.getType())) << " "
         << name << " = " << expr << ";\n";
  return name;
}
