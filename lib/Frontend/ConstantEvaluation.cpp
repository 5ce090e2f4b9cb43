//===- ConstantEvaluation.cpp - What a spec computes at compile time ------===//
//
// A `const`, a literal and the expressions of them are values here, not ops:
// shapes, axes, loop bounds, table rows and defaults are known before any
// op is built, and `-D` overrides a `const` before anything reads it.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenImpl.h"

namespace optgen::mlirgen {

bool MLIRGenImpl::isConstExpr(const Expr &expr) {
  switch (expr.getKind()) {
  case Expr::Kind::Number:
  case Expr::Kind::String:
    return true;
  case Expr::Kind::Name: {
    StringRef name = cast<NameExpr>(expr).getName();
    if (findSymbol(name))
      return false;
    return consts.count(name) || isDTypeName(name) || name == "true" ||
           name == "false";
  }
  case Expr::Kind::Unary:
    return isConstExpr(cast<UnaryExpr>(expr).getOperand());
  case Expr::Kind::Binary: {
    auto &b = cast<BinaryExpr>(expr);
    return b.getOp() != BinaryOp::MatMul && isConstExpr(b.getLhs()) &&
           isConstExpr(b.getRhs());
  }
  case Expr::Kind::Ternary: {
    auto &t = cast<TernaryExpr>(expr);
    return isConstExpr(t.getCond()) && isConstExpr(t.getThen()) &&
           isConstExpr(t.getElse());
  }
  case Expr::Kind::Tuple:
  case Expr::Kind::List:
    return llvm::all_of(cast<SequenceExpr>(expr).getElements(),
                        [&](const ExprPtr &e) { return isConstExpr(*e); });
  case Expr::Kind::Index: {
    auto &i = cast<IndexExpr>(expr);
    return isConstExpr(i.getBase()) && isConstExpr(i.getIndex());
  }
  case Expr::Kind::Slice: {
    auto &s = cast<SliceExpr>(expr);
    return isConstExpr(s.getBase()) &&
           (!s.getLo() || isConstExpr(*s.getLo())) &&
           (!s.getHi() || isConstExpr(*s.getHi()));
  }
  case Expr::Kind::Call:
  case Expr::Kind::Transpose:
    return false;
  }
  llvm_unreachable("covered switch");
}

FailureOr<int64_t> MLIRGenImpl::evalInt(const Expr &expr, StringRef what) {
  FailureOr<ConstValue> v = evalConst(expr);
  if (failed(v))
    return failure();
  if (v->kind != ConstValue::Kind::Number || !v->isInteger) {
    error(expr.getRange()) << what << " must be an int, not " << v->describe();
    return failure();
  }
  return static_cast<int64_t>(v->number);
}

FailureOr<ConstValue> MLIRGenImpl::evalConst(const Expr &expr) {
  switch (expr.getKind()) {
  case Expr::Kind::Number: {
    auto &n = cast<NumberExpr>(expr);
    if (n.getIsInteger() && std::fabs(n.getValue()) >= 9007199254740992.0) {
      error(expr.getRange()) << "integer literal is too large";
      return failure();
    }
    return ConstValue::makeNumber(n.getValue(), n.getIsInteger());
  }
  case Expr::Kind::String: {
    ConstValue v;
    v.kind = ConstValue::Kind::String;
    v.text = cast<StringExpr>(expr).getValue().str();
    return v;
  }
  case Expr::Kind::Name: {
    StringRef name = cast<NameExpr>(expr).getName();
    if (findSymbol(name)) {
      error(expr.getRange()) << "'" << name
                             << "' is not known at compile time; only "
                                "literals and constants are";
      return failure();
    }
    auto it = consts.find(name);
    if (it != consts.end())
      return it->second.value;
    if (isDTypeName(name)) {
      ConstValue v;
      v.kind = ConstValue::Kind::DType;
      v.text = name.str();
      return v;
    }
    if (name == "true" || name == "false")
      return ConstValue::makeBool(name == "true");
    return unknownName(name, expr.getRange());
  }
  case Expr::Kind::Unary: {
    auto &u = cast<UnaryExpr>(expr);
    FailureOr<ConstValue> v = evalConst(u.getOperand());
    if (failed(v))
      return failure();
    if (u.getOp() == UnaryOp::Neg && v->kind == ConstValue::Kind::Number)
      return ConstValue::makeNumber(-v->number, v->isInteger);
    if (u.getOp() == UnaryOp::Not && v->kind == ConstValue::Kind::Bool)
      return ConstValue::makeBool(!v->boolean);
    error(expr.getRange()) << "'" << spelling(u.getOp()) << "' cannot apply to "
                           << v->describe();
    return failure();
  }
  case Expr::Kind::Binary:
    return evalBinary(cast<BinaryExpr>(expr));
  case Expr::Kind::Ternary: {
    auto &t = cast<TernaryExpr>(expr);
    FailureOr<ConstValue> c = evalConst(t.getCond());
    if (failed(c))
      return failure();
    if (c->kind != ConstValue::Kind::Bool) {
      error(t.getCond().getRange())
          << "a condition must be true or false, not " << c->describe();
      return failure();
    }
    return evalConst(c->boolean ? t.getThen() : t.getElse());
  }
  case Expr::Kind::Tuple:
  case Expr::Kind::List: {
    ConstValue v;
    v.kind = expr.getKind() == Expr::Kind::Tuple ? ConstValue::Kind::Tuple
                                                 : ConstValue::Kind::List;
    for (const ExprPtr &e : cast<SequenceExpr>(expr).getElements()) {
      FailureOr<ConstValue> element = evalConst(*e);
      if (failed(element))
        return failure();
      v.elements.push_back(std::move(*element));
    }
    return v;
  }
  case Expr::Kind::Index: {
    auto &i = cast<IndexExpr>(expr);
    FailureOr<ConstValue> base = evalConst(i.getBase());
    if (failed(base))
      return failure();
    FailureOr<int64_t> index = evalInt(i.getIndex(), "an index");
    if (failed(index))
      return failure();
    if (!base->isSequence()) {
      error(i.getBase().getRange()) << "cannot index " << base->describe();
      return failure();
    }
    int64_t size = base->elements.size();
    if (*index < -size || *index >= size) {
      error(i.getIndex().getRange())
          << "index " << *index << " is out of range for " << base->describe()
          << " of " << size << " elements";
      return failure();
    }
    return base->elements[*index < 0 ? *index + size : *index];
  }
  case Expr::Kind::Slice: {
    auto &s = cast<SliceExpr>(expr);
    FailureOr<ConstValue> base = evalConst(s.getBase());
    if (failed(base))
      return failure();
    if (!base->isSequence()) {
      error(s.getBase().getRange()) << "cannot slice " << base->describe();
      return failure();
    }
    int64_t size = base->elements.size();
    FailureOr<int64_t> lo = s.getLo() ? evalInt(*s.getLo(), "a slice bound")
                                      : FailureOr<int64_t>(0);
    FailureOr<int64_t> hi = s.getHi() ? evalInt(*s.getHi(), "a slice bound")
                                      : FailureOr<int64_t>(size);
    if (failed(lo) || failed(hi))
      return failure();
    if (*lo < 0 || *hi > size || *lo > *hi) {
      error(expr.getRange())
          << "slice [" << *lo << " : " << *hi << "] is out of range for "
          << base->describe() << " of " << size << " elements";
      return failure();
    }
    ConstValue v = *base;
    v.elements.assign(base->elements.begin() + *lo,
                      base->elements.begin() + *hi);
    return v;
  }
  case Expr::Kind::Call:
    error(expr.getRange()) << "a function call is not known at compile time";
    return failure();
  case Expr::Kind::Transpose:
    error(expr.getRange()) << "a transpose is not known at compile time";
    return failure();
  }
  llvm_unreachable("covered switch");
}

FailureOr<ConstValue> MLIRGenImpl::evalBinary(const BinaryExpr &b) {
  FailureOr<ConstValue> v = evalArithmetic(b);
  if (succeeded(v) && v->kind == ConstValue::Kind::Number &&
      !std::isfinite(v->number)) {
    error(b.getOpLoc()) << "this computes " << v->number
                        << " at compile time, not a finite number";
    return failure();
  }
  // Ints are exact below 2^53, as integer literals are; beyond, a double
  // is no longer the int (and 2^63 no int64 at all).
  if (succeeded(v) && v->kind == ConstValue::Kind::Number && v->isInteger &&
      std::fabs(v->number) >= 9007199254740992.0) {
    char text[32];
    std::snprintf(text, sizeof text, "%.0f", v->number);
    error(b.getOpLoc()) << "this computes the int " << text
                        << " at compile time, beyond the ints it computes "
                           "exactly (below 2^53 in magnitude)";
    return failure();
  }
  return v;
}

FailureOr<ConstValue> MLIRGenImpl::evalArithmetic(const BinaryExpr &b) {
  FailureOr<ConstValue> lhs = evalConst(b.getLhs());
  if (failed(lhs))
    return failure();
  FailureOr<ConstValue> rhs = evalConst(b.getRhs());
  if (failed(rhs))
    return failure();
  using K = ConstValue::Kind;
  BinaryOp op = b.getOp();
  if (op == BinaryOp::And || op == BinaryOp::Or) {
    if (lhs->kind != K::Bool || rhs->kind != K::Bool) {
      error(b.getOpLoc()) << "'" << spelling(op) << "' needs true or false";
      return failure();
    }
    return ConstValue::makeBool(op == BinaryOp::And
                                    ? lhs->boolean && rhs->boolean
                                    : lhs->boolean || rhs->boolean);
  }
  // `[row] * 5` repeats a table, as in Python.
  if (op == BinaryOp::Mul && lhs->kind == K::List && rhs->kind == K::Number &&
      rhs->isInteger) {
    if (rhs->number < 0 || rhs->number * lhs->elements.size() > 1e6) {
      error(b.getRhs().getRange())
          << "cannot repeat a list " << rhs->number << " times";
      return failure();
    }
    ConstValue repeated = *lhs;
    repeated.elements.clear();
    for (int64_t i = 0; i < static_cast<int64_t>(rhs->number); ++i)
      llvm::append_range(repeated.elements, lhs->elements);
    return repeated;
  }
  if (lhs->kind != K::Number || rhs->kind != K::Number ||
      op == BinaryOp::MatMul) {
    error(b.getOpLoc()) << "'" << spelling(op) << "' cannot combine "
                        << lhs->describe() << " and " << rhs->describe()
                        << " at compile time";
    return failure();
  }
  double x = lhs->number, y = rhs->number;
  bool ints = lhs->isInteger && rhs->isInteger;
  switch (op) {
  case BinaryOp::Add:
    return ConstValue::makeNumber(x + y, ints);
  case BinaryOp::Sub:
    return ConstValue::makeNumber(x - y, ints);
  case BinaryOp::Mul:
    return ConstValue::makeNumber(x * y, ints);
  case BinaryOp::Div:
    return ConstValue::makeNumber(x / y, false);
  case BinaryOp::Mod: {
    if (ints && y == 0) {
      error(b.getOpLoc()) << "'%' by zero";
      return failure();
    }
    double mod = std::fmod(x, y);
    if (mod != 0 && ((y < 0) != (mod < 0)))
      mod += y;
    return ConstValue::makeNumber(mod, ints);
  }
  case BinaryOp::Pow:
    return ConstValue::makeNumber(std::pow(x, y), ints && y >= 0);
  case BinaryOp::Lt:
    return ConstValue::makeBool(x < y);
  case BinaryOp::Le:
    return ConstValue::makeBool(x <= y);
  case BinaryOp::Gt:
    return ConstValue::makeBool(x > y);
  case BinaryOp::Ge:
    return ConstValue::makeBool(x >= y);
  case BinaryOp::Eq:
    return ConstValue::makeBool(x == y);
  case BinaryOp::Ne:
    return ConstValue::makeBool(x != y);
  case BinaryOp::MatMul:
  case BinaryOp::And:
  case BinaryOp::Or:
    break;
  }
  llvm_unreachable("handled above");
}

} // namespace optgen::mlirgen
