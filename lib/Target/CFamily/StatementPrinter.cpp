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
