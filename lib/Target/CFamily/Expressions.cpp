//===- Expressions.cpp - Kernel math as C-family expressions --------------===//

#include "optgen/Target/CFamily/Expressions.h"

#include "optgen/Target/CFamily/Names.h"

#include "optgen/Target/CFamily/SourceInfo.h"

#include "dialect/OptgenDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace optgen;

std::string optgen::floatLiteral(double value, bool isDouble) {
  if (std::isnan(value))
    return isDouble ? "std::numeric_limits<double>::quiet_NaN()"
                    : "std::numeric_limits<float>::quiet_NaN()";
  if (std::isinf(value))
    return std::string(value < 0 ? "-" : "") +
           (isDouble ? "std::numeric_limits<double>::infinity()"
                     : "std::numeric_limits<float>::infinity()");
  char text[64];
  std::snprintf(text, sizeof text, isDouble ? "%.17g" : "%.9g",
                isDouble ? value : static_cast<double>(static_cast<float>(value)));
  std::string literal = text;
  if (literal.find_first_of(".e") == std::string::npos)
    literal += ".0";
  return isDouble ? literal : literal + "f";
}

std::string optgen::constantExpression(Attribute value) {
  if (auto b = dyn_cast<BoolAttr>(value))
    return b.getValue() ? "true" : "false";
  if (auto i = dyn_cast<IntegerAttr>(value))
    return i.getType().isInteger(1)
               ? std::string(i.getInt() ? "true" : "false")
               : "int64_t{" + std::to_string(i.getInt()) + "}";
  if (auto f = dyn_cast<FloatAttr>(value))
    return floatLiteral(f.getValueAsDouble(), f.getType().isF64());
  return "";
}

StringRef optgen::cType(Type element) {
  if (element.isInteger(1))
    return "bool";
  if (element.isInteger(64))
    return "int64_t";
  if (element.isF64())
    return "double";
  return "float";
}

std::string optgen::rounded(std::string expr, Type element) {
  if (element.isBF16())
    return "optgen::runtime::roundToBF16(" + expr + ")";
  if (element.isF16())
    return "optgen::runtime::roundToF16(" + expr + ")";
  return expr;
}

std::string optgen::convert(const std::string &expr, Type from, Type to) {
  if (cType(from) == cType(to))
    return expr;
  if (from.isInteger(1) && !to.isInteger(1))
    return "(" + expr + " ? " +
           (to.isInteger(64) ? std::string("1") : floatLiteral(1, to.isF64())) +
           " : " +
           (to.isInteger(64) ? std::string("0") : floatLiteral(0, to.isF64())) +
           ")";
  return "static_cast<" + cType(to).str() + ">(" + expr + ")";
}

std::string optgen::elementExpression(Operation *op,
                                      ArrayRef<std::string> operands) {
  Type result = getElementTypeOrSelf(op->getResult(0).getType());
  SmallVector<Type> from;
  for (Value operand : op->getOperands())
    from.push_back(getElementTypeOrSelf(operand.getType()));
  // Operands in the result's compute type.
  auto in = [&](unsigned i) { return convert(operands[i], from[i], result); };
  auto call = [&](StringRef fn, ArrayRef<std::string> args) {
    std::string text = fn.str() + "(";
    llvm::interleave(args, [&](const std::string &a) { text += a; },
                     [&] { text += ", "; });
    return text + ")";
  };
  auto math = [&](StringRef fn) { return call(fn, {in(0)}); };

  std::string expr =
      llvm::TypeSwitch<Operation *, std::string>(op)
          .Case([&](AddOp) { return "(" + in(0) + " + " + in(1) + ")"; })
          .Case([&](SubOp) { return "(" + in(0) + " - " + in(1) + ")"; })
          .Case([&](MulOp) { return "(" + in(0) + " * " + in(1) + ")"; })
          .Case([&](DivOp) { return "(" + in(0) + " / " + in(1) + ")"; })
          .Case([&](PowOp) { return call("std::pow", {in(0), in(1)}); })
          .Case([&](ModOp) {
            return call("optgen::runtime::remainder", {in(0), in(1)});
          })
          .Case([&](FloorDivOp) {
            return call("optgen::runtime::floorDivide", {in(0), in(1)});
          })
          .Case([&](MinOp) {
            return call("optgen::runtime::minimum", {in(0), in(1)});
          })
          .Case([&](MaxOp) {
            return call("optgen::runtime::maximum", {in(0), in(1)});
          })
          .Case([&](NegOp) { return "(-" + in(0) + ")"; })
          .Case([&](AbsOp) { return math("std::abs"); })
          .Case([&](SignOp) { return math("optgen::runtime::sign"); })
          .Case([&](FloorOp) { return math("optgen::runtime::floor"); })
          .Case([&](SqrtOp) { return math("std::sqrt"); })
          .Case([&](RsqrtOp) {
            return "(" + floatLiteral(1, result.isF64()) + " / " +
                   math("std::sqrt") + ")";
          })
          .Case([&](ExpOp) { return math("std::exp"); })
          .Case([&](LogOp) { return math("std::log"); })
          .Case([&](LerpOp) {
            return call("optgen::runtime::lerp", {in(0), in(1), in(2)});
          })
          .Case([&](ClampOp) {
            return call("optgen::runtime::minimum",
                        {call("optgen::runtime::maximum", {in(0), in(1)}),
                         in(2)});
          })
          .Case([&](SelectOp) {
            return "(" + operands[0] + " ? " + in(1) + " : " + in(2) + ")";
          })
          .Case([&](CastOp) { return in(0); })
          .Case([&](AndOp) { return "(" + in(0) + " && " + in(1) + ")"; })
          .Case([&](OrOp) { return "(" + in(0) + " || " + in(1) + ")"; })
          .Case([&](NotOp) { return "(!" + in(0) + ")"; })
          .Case([&](CmpOp cmp) {
            // Compare in the operands' promotion: double holds every float
            // exactly, int64_t every int. Where float holds both operands
            // exactly (16- and 32-bit floats, constants it holds), the
            // comparison is the same in float, which a GPU runs at full
            // rate (nanochat's cautious weight decay, `u * p >= 0`).
            auto exactInFloat = [&](unsigned i) {
              if (isa<FloatType>(from[i]) && !from[i].isF64())
                return true;
              auto constant = op->getOperand(i).getDefiningOp<ConstantOp>();
              if (!constant)
                return false;
              if (auto integer = dyn_cast<IntegerAttr>(constant.getValue()))
                return integer.getInt() >= -(int64_t{1} << 24) &&
                       integer.getInt() <= (int64_t{1} << 24);
              if (auto real = dyn_cast<FloatAttr>(constant.getValue()))
                return static_cast<double>(static_cast<float>(
                           real.getValueAsDouble())) ==
                       real.getValueAsDouble();
              return false;
            };
            bool anyFloat = llvm::any_of(
                from, [](Type t) { return isa<FloatType>(t); });
            Type common = Builder(op->getContext()).getI64Type();
            if (anyFloat)
              common = exactInFloat(0) && exactInFloat(1)
                           ? Builder(op->getContext()).getF32Type()
                           : Builder(op->getContext()).getF64Type();
            StringRef symbol;
            switch (cmp.getPredicate()) {
            case CmpPredicate::lt: symbol = " < "; break;
            case CmpPredicate::le: symbol = " <= "; break;
            case CmpPredicate::gt: symbol = " > "; break;
            case CmpPredicate::ge: symbol = " >= "; break;
            case CmpPredicate::eq: symbol = " == "; break;
            case CmpPredicate::ne: symbol = " != "; break;
            }
            return "(" + convert(operands[0], from[0], common) + symbol.str() +
                   convert(operands[1], from[1], common) + ")";
          })
          .Default([](Operation *) { return std::string(); });
  if (isa<AndOp, OrOp, NotOp, CmpOp>(op))
    return expr;
  return rounded(expr, result);
}

std::string optgen::tableDefinition(ForTableOp loop, StringRef name,
                                    StringRef specName) {
  auto table = loop.getTable().getValues<double>();
  int64_t rows = cast<ShapedType>(loop.getTable().getType()).getDimSize(0);
  int64_t width = loop.getRowLength();
  std::string text;
  llvm::raw_string_ostream t(text);
  std::optional<FileLineColLoc> file = fileLocation(loop.getLoc());
  t << "// The table of the loop at " << commentText(specName) << ":"
    << (file ? file->getLine() : 0) << ", as f32.\n";
  t << "constexpr float " << name << "[" << rows << "][" << width
    << "] = {\n";
  auto it = table.begin();
  for (int64_t r = 0; r < rows; ++r) {
    t << "    {";
    for (int64_t c = 0; c < width; ++c, ++it)
      t << (c ? ", " : "") << floatLiteral(*it, false);
    t << "},\n";
  }
  t << "};\n";
  return text;
}

std::string optgen::firstAxisTest(StringRef axis) {
  return ("((" + axis + ") == 0 || (" + axis + ") == -2)").str();
}

std::string optgen::extentAlong(std::optional<int64_t> known, StringRef axis,
                                StringRef rows, StringRef cols) {
  if (known)
    return (isFirstAxis(*known) ? rows : cols).str();
  return ("((" + axis + ") == 0 || (" + axis + ") == -2 ? " + rows + " : " +
          cols + ")")
      .str();
}
