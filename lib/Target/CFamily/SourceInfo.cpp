//===- SourceInfo.cpp - What printed code says about its spec -------------===//

#include "optgen/Target/CFamily/SourceInfo.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include <set>

using namespace mlir;
using namespace optgen;

std::optional<FileLineColLoc> optgen::fileLocation(Location loc) {
  std::optional<FileLineColLoc> found;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      found = file;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

std::vector<unsigned> optgen::specLines(Location loc) {
  std::set<unsigned> lines;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner))
      lines.insert(file.getLine());
    return WalkResult::advance();
  });
  return {lines.begin(), lines.end()};
}

std::optional<StringRef> optgen::specName(Value value) {
  if (Operation *def = value.getDefiningOp())
    if (auto name = dyn_cast<NameLoc>(def->getLoc()))
      return name.getName().getValue();
  return std::nullopt;
}

std::optional<int64_t> optgen::constantInt(Value value) {
  APInt v;
  if (matchPattern(value, m_ConstantInt(&v)))
    return v.getSExtValue();
  return std::nullopt;
}
