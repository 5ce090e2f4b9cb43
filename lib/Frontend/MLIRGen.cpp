//===- MLIRGen.cpp - From a spec's AST to the optgen dialect --------------===//
//
// Three passes over the declarations: constants (in order, so a constant may
// use the ones before it), then rules, then groups and the distribution
// strategy (so a group may name a rule declared after it). Inside a rule,
// names are bound to SSA values; an assignment rebinds the name, and an `if`
// or `for` turns the names its body assigns into region results.
//
//===----------------------------------------------------------------------===//

#include "optgen/Frontend/MLIRGen.h"
#include "optgen/Frontend/Parser.h"

#include "dialect/OptgenDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstdio>
#include <deque>

using namespace mlir;
using namespace optgen;
using namespace optgen::ast;

namespace {

/// A value known at compile time: the value of a `const`, a literal, or what
/// an expression of them computes.
struct ConstValue {
  enum class Kind { Number, Bool, DType, String, Tuple, List };
  Kind kind = Kind::Number;
  double number = 0;
  bool isInteger = false;
  bool boolean = false;
  std::string text; // the dtype's name or the string
  std::vector<ConstValue> elements;

  static ConstValue makeNumber(double value, bool isInteger) {
    ConstValue v;
    v.number = value;
    v.isInteger = isInteger;
    return v;
  }
  static ConstValue makeBool(bool value) {
    ConstValue v;
    v.kind = Kind::Bool;
    v.boolean = value;
    return v;
  }
  bool isSequence() const { return kind == Kind::Tuple || kind == Kind::List; }
  StringRef describe() const {
    switch (kind) {
    case Kind::Number:
      return isInteger ? "an int" : "a float";
    case Kind::Bool:
      return "a bool";
    case Kind::DType:
      return "a dtype";
    case Kind::String:
      return "a string";
    case Kind::Tuple:
      return "a tuple";
    case Kind::List:
      return "a list";
    }
    llvm_unreachable("covered switch");
  }
};

/// What a name inside a rule or a `where` condition stands for.
struct Symbol {
  enum class Kind { Param, Grad, Hyper, State, Let, LoopVar, Arg };
  Kind kind;
  Value value;
  SMRange declRange;
};

struct ConstEntry {
  ConstValue value;
  SMRange declRange;
};

bool isDTypeName(StringRef name) {
  return name == "f32" || name == "bf16" || name == "f16";
}

/// Every builtin function with its arity, for calls and for suggestions.
struct Builtin {
  StringRef name;
  unsigned minArgs, maxArgs;
};
constexpr Builtin kBuiltins[] = {
    {"sqrt", 1, 1},   {"rsqrt", 1, 1},     {"abs", 1, 1},   {"sign", 1, 1},
    {"exp", 1, 1},    {"log", 1, 1},       {"f32", 1, 1},   {"bf16", 1, 1},
    {"f16", 1, 1},    {"min", 2, 2},       {"max", 2, 2},   {"clamp", 3, 3},
    {"lerp", 3, 3},   {"select", 3, 3},    {"sum", 1, 2},   {"mean", 1, 2},
    {"norm", 1, 2},   {"amax", 1, 2},      {"transpose", 1, 1},
    {"rows", 1, 1},   {"cols", 1, 1},      {"ndim", 1, 1},  {"numel", 1, 1},
    {"size", 2, 2},   {"zeros_like", 1, 1}, {"zeros", 0, 1}, {"reduced", 2, 2},
    {"floor", 1, 1},  {"floordiv", 2, 2},   {"sum_params", 1, 1},
    {"max_params", 1, 1},
};

const Builtin *lookupBuiltin(StringRef name) {
  for (const Builtin &b : kBuiltins)
    if (b.name == name)
      return &b;
  return nullptr;
}

/// The candidate closest to `name` by edit distance, if close enough to be a
/// plausible typo.
std::string suggest(StringRef name, ArrayRef<std::string> candidates) {
  std::string best;
  unsigned bestDistance = std::max<unsigned>(1, name.size() / 3) + 1;
  for (const std::string &c : candidates) {
    unsigned d = name.edit_distance(c, true, bestDistance);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}

/// Names assigned anywhere in `block`, in order of first assignment.
void collectAssigned(const ast::Block &block, llvm::SetVector<StringRef> &out) {
  for (const StmtPtr &stmt : block) {
    if (auto *assign = dyn_cast<AssignStmt>(stmt.get()))
      out.insert(assign->getTarget());
    else if (auto *ifStmt = dyn_cast<IfStmt>(stmt.get())) {
      collectAssigned(ifStmt->getThen(), out);
      collectAssigned(ifStmt->getElse(), out);
    } else if (auto *forStmt = dyn_cast<ForStmt>(stmt.get()))
      collectAssigned(forStmt->getBody(), out);
  }
}

/// Calls `visit` on each direct subexpression of `expr`.
void forEachChild(const Expr &expr,
                  const std::function<void(const Expr &)> &visit) {
  switch (expr.getKind()) {
  case Expr::Kind::Number:
  case Expr::Kind::String:
  case Expr::Kind::Name:
    return;
  case Expr::Kind::Call:
    for (const ExprPtr &arg : cast<CallExpr>(expr).getArgs())
      visit(*arg);
    return;
  case Expr::Kind::Unary:
    return visit(cast<UnaryExpr>(expr).getOperand());
  case Expr::Kind::Binary:
    visit(cast<BinaryExpr>(expr).getLhs());
    return visit(cast<BinaryExpr>(expr).getRhs());
  case Expr::Kind::Ternary:
    visit(cast<TernaryExpr>(expr).getCond());
    visit(cast<TernaryExpr>(expr).getThen());
    return visit(cast<TernaryExpr>(expr).getElse());
  case Expr::Kind::Tuple:
  case Expr::Kind::List:
    for (const ExprPtr &e : cast<SequenceExpr>(expr).getElements())
      visit(*e);
    return;
  case Expr::Kind::Index:
    visit(cast<IndexExpr>(expr).getBase());
    return visit(cast<IndexExpr>(expr).getIndex());
  case Expr::Kind::Slice: {
    auto &s = cast<SliceExpr>(expr);
    visit(s.getBase());
    if (s.getLo())
      visit(*s.getLo());
    if (s.getHi())
      visit(*s.getHi());
    return;
  }
  case Expr::Kind::Transpose:
    return visit(cast<TransposeExpr>(expr).getOperand());
  }
}

/// Calls `visitExpr` on the expressions of `stmt` and `visitBlock` on its
/// nested blocks.
void forEachChild(const Stmt &stmt,
                  const std::function<void(const Expr &)> &visitExpr,
                  const std::function<void(const ast::Block &)> &visitBlock) {
  auto bindings = [&](ArrayRef<ast::Binding> items) {
    for (const ast::Binding &item : items)
      if (item.init)
        visitExpr(*item.init);
  };
  switch (stmt.getKind()) {
  case Stmt::Kind::Hyper:
    return bindings(cast<HyperStmt>(stmt).getItems());
  case Stmt::Kind::State:
    return bindings(cast<StateStmt>(stmt).getItems());
  case Stmt::Kind::Let:
    return bindings(cast<LetStmt>(stmt).getBinding());
  case Stmt::Kind::Assign:
    return visitExpr(cast<AssignStmt>(stmt).getValue());
  case Stmt::Kind::If:
    visitExpr(cast<IfStmt>(stmt).getCond());
    visitBlock(cast<IfStmt>(stmt).getThen());
    return visitBlock(cast<IfStmt>(stmt).getElse());
  case Stmt::Kind::For:
    visitExpr(cast<ForStmt>(stmt).getIterable());
    return visitBlock(cast<ForStmt>(stmt).getBody());
  case Stmt::Kind::Return:
    return visitExpr(cast<ReturnStmt>(stmt).getValue());
  }
}

/// The hypers, states and lets declared at the top level of `block`, so
/// that a use before the declaration gets a precise error.
llvm::StringMap<SMRange> declaredIn(const ast::Block &block) {
  llvm::StringMap<SMRange> names;
  for (const StmtPtr &stmt : block) {
    if (auto *hyper = dyn_cast<HyperStmt>(stmt.get()))
      for (const ast::Binding &item : hyper->getItems())
        names.try_emplace(item.name, item.nameRange);
    else if (auto *state = dyn_cast<StateStmt>(stmt.get()))
      for (const ast::Binding &item : state->getItems())
        names.try_emplace(item.name, item.nameRange);
    else if (auto *let = dyn_cast<LetStmt>(stmt.get()))
      names.try_emplace(let->getBinding().name, let->getBinding().nameRange);
  }
  return names;
}

class MLIRGenImpl {
public:
  MLIRGenImpl(MLIRContext &context, llvm::SourceMgr &sourceMgr,
              ArrayRef<const ConstDecl *> overrides)
      : context(context), sourceMgr(sourceMgr), builder(&context) {
    for (const ConstDecl *decl : overrides)
      this->overrides[decl->getName()] = decl;
  }

  OwningOpRef<ModuleOp> gen(const ast::Module &spec);

private:
  MLIRContext &context;
  llvm::SourceMgr &sourceMgr;
  OpBuilder builder;

  llvm::StringMap<const ConstDecl *> overrides;
  llvm::StringSet<> usedOverrides;
  llvm::StringMap<ConstEntry> consts;
  /// Rules, groups and constants share one namespace.
  llvm::StringMap<SMRange> topLevelNames;
  llvm::StringMap<RuleOp> rules;
  /// Every global's declaration (known before any is generated), and the
  /// ops of those generated.
  llvm::StringMap<const GlobalDecl *> globalDecls;
  llvm::StringMap<GlobalOp> globals;
  /// The global being generated, and its inputs (each parameter and its
  /// gradient), visible only inside sum_params and max_params.
  const GlobalDecl *currentGlobal = nullptr;
  llvm::StringMap<Symbol> globalInputs;
  /// Inside the argument of sum_params or max_params: one parameter's math.
  bool inPerParameter = false;

  /// Names visible in the rule or `where` being generated, innermost last.
  /// A deque: carried-value bookkeeping holds pointers into outer scopes.
  std::deque<llvm::StringMap<Symbol>> scopes;
  /// Top-level hypers, states and lets of the current rule, so that a use
  /// before the declaration gets a precise error.
  llvm::StringMap<SMRange> declaredLater;
  /// State names of the current rule in declaration order, and the final
  /// value of each state a function declared (known when the call returns;
  /// null for the rule's own states, read from its scope at the end).
  std::vector<std::string> stateNames;
  std::vector<Value> stateFinal;
  bool inRule = false;
  /// The `if` and `for` bodies being generated around the current statement,
  /// across inlined calls: `hyper` and `state` need none.
  unsigned controlDepth = 0;

  /// Functions by name; a call inlines the body (MLIRGen has no call op).
  llvm::StringMap<const FunctionDecl *> functions;
  /// The functions being inlined, innermost last, each with the location of
  /// its call: the locations of the ops (and errors) inside the body are
  /// CallSiteLocs, so that an error there names the call too.
  struct Frame {
    const FunctionDecl *function;
    Location callSite;
  };
  SmallVector<Frame> frames;
  /// The value of the innermost function's `return`, once generated.
  Value returnValue;
  /// Hyperparameters and states of the current rule (its functions' too),
  /// which share one namespace, with where each was declared.
  llvm::StringMap<Location> ruleNames;
  /// Functions the current rule called that declare hyperparameters or
  /// states, with their first call: a second call would declare them again.
  llvm::DenseMap<const FunctionDecl *, Location> statefulCalls;
  /// Memo of firstDeclaration().
  llvm::DenseMap<const FunctionDecl *, const ast::Binding *> declarations;
  /// The current rule's parameter.
  Value ruleParam;
  /// Nested expressions and blocks being generated, across inlined calls.
  unsigned genDepth = 0;
  bool reportedTooDeep = false;
  static constexpr unsigned kMaxGenDepth = 1000;
  /// Calls inlined into the current rule, against a blow-up.
  unsigned inlinedCalls = 0;
  static constexpr unsigned kMaxInlinedCalls = 10000;

  //===--------------------------------------------------------------------===//
  // Locations and diagnostics
  //===--------------------------------------------------------------------===//

  Location fileLoc(SMLoc at) {
    unsigned bufferId = sourceMgr.FindBufferContainingLoc(at);
    if (!bufferId)
      return UnknownLoc::get(&context);
    auto [line, col] = sourceMgr.getLineAndColumn(at, bufferId);
    StringRef file =
        sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier();
    return FileLineColLoc::get(&context, file, line, col);
  }
  /// Where `at` is, and inside the function being inlined, the call it
  /// came from (a CallSiteLoc: errors there print a note at each call).
  Location loc(SMLoc at) {
    Location file = fileLoc(at);
    if (frames.empty())
      return file;
    SMRange body = frames.back().function->getRange();
    if (at.getPointer() < body.Start.getPointer() ||
        at.getPointer() >= body.End.getPointer())
      return file;
    return CallSiteLoc::get(file, frames.back().callSite);
  }
  Location loc(SMRange range) { return loc(range.Start); }
  InFlightDiagnostic error(SMLoc at) { return emitError(loc(at)); }
  InFlightDiagnostic error(SMRange range) { return error(range.Start); }

  /// Reports a duplicate of `name` (first defined at `first`).
  LogicalResult duplicate(StringRef name, SMRange at, SMRange first) {
    return duplicate(name, at, loc(first));
  }
  LogicalResult duplicate(StringRef name, SMRange at, Location first) {
    error(at).append("duplicate definition of '", name, "'")
        .attachNote(first)
        .append("first defined here");
    return failure();
  }

  //===--------------------------------------------------------------------===//
  // Compile-time evaluation
  //===--------------------------------------------------------------------===//

  /// Whether `expr` can be evaluated at compile time (made only of literals
  /// and constants), without reporting anything.
  bool isConstExpr(const Expr &expr) {
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
      return isConstExpr(s.getBase()) && (!s.getLo() || isConstExpr(*s.getLo())) &&
             (!s.getHi() || isConstExpr(*s.getHi()));
    }
    case Expr::Kind::Call:
    case Expr::Kind::Transpose:
      return false;
    }
    llvm_unreachable("covered switch");
  }

  FailureOr<int64_t> evalInt(const Expr &expr, StringRef what) {
    FailureOr<ConstValue> v = evalConst(expr);
    if (failed(v))
      return failure();
    if (v->kind != ConstValue::Kind::Number || !v->isInteger) {
      error(expr.getRange()) << what << " must be an int, not "
                             << v->describe();
      return failure();
    }
    return static_cast<int64_t>(v->number);
  }

  FailureOr<ConstValue> evalConst(const Expr &expr) {
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
        error(t.getCond().getRange()) << "a condition must be true or false, not "
                                      << c->describe();
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
        error(expr.getRange()) << "slice [" << *lo << " : " << *hi
                               << "] is out of range for " << base->describe()
                               << " of " << size << " elements";
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

  FailureOr<ConstValue> evalBinary(const BinaryExpr &b) {
    FailureOr<ConstValue> v = evalArithmetic(b);
    if (succeeded(v) && v->kind == ConstValue::Kind::Number &&
        !std::isfinite(v->number)) {
      error(b.getOpLoc()) << "this computes " << v->number
                          << " at compile time, not a finite number";
      return failure();
    }
    // Ints are exact below 2^53, as integer literals are; beyond, a double
    // is no longer the int (and 2^63 no int64 at all).
    if (succeeded(v) && v->kind == ConstValue::Kind::Number &&
        v->isInteger && std::fabs(v->number) >= 9007199254740992.0) {
      char text[32];
      std::snprintf(text, sizeof text, "%.0f", v->number);
      error(b.getOpLoc()) << "this computes the int " << text
                          << " at compile time, beyond the ints it computes "
                             "exactly (below 2^53 in magnitude)";
      return failure();
    }
    return v;
  }

  FailureOr<ConstValue> evalArithmetic(const BinaryExpr &b) {
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
    if (op == BinaryOp::Mul && lhs->kind == K::List &&
        rhs->kind == K::Number && rhs->isInteger) {
      if (rhs->number < 0 || rhs->number * lhs->elements.size() > 1e6) {
        error(b.getRhs().getRange()) << "cannot repeat a list "
                                     << rhs->number << " times";
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

  //===--------------------------------------------------------------------===//
  // Types written in the spec
  //===--------------------------------------------------------------------===//

  FailureOr<Type> resolveDType(const TypeAnnotation &type) {
    if (!type.isTuple()) {
      std::string name = type.name;
      auto it = consts.find(name);
      if (it != consts.end() && it->second.value.kind == ConstValue::Kind::DType)
        name = it->second.value.text;
      if (name == "f32")
        return Type(builder.getF32Type());
      if (name == "bf16")
        return Type(builder.getBF16Type());
      if (name == "f16")
        return Type(builder.getF16Type());
    }
    error(type.range) << "expected a dtype (f32, bf16, f16, or a constant "
                         "naming one)";
    return failure();
  }

  FailureOr<Type> resolveHyperType(const TypeAnnotation &type) {
    if (type.isTuple()) {
      SmallVector<Type> elements;
      for (const TypeAnnotation &element : type.elements) {
        FailureOr<Type> t = resolveHyperType(element);
        if (failed(t))
          return failure();
        if (isa<TupleType>(*t)) {
          error(element.range) << "tuples do not nest";
          return failure();
        }
        elements.push_back(*t);
      }
      return Type(builder.getTupleType(elements));
    }
    if (type.name == "float")
      return Type(builder.getF32Type());
    if (type.name == "int")
      return Type(builder.getI64Type());
    error(type.range) << "a hyperparameter is a float, an int, or a tuple of "
                         "them, e.g. (float, float)";
    return failure();
  }

  /// The hyperparameter type a default value implies: floats unless written
  /// with an `int` annotation.
  FailureOr<Type> hyperTypeOf(const ConstValue &value, SMRange at) {
    if (!value.isSequence())
      return Type(builder.getF32Type());
    SmallVector<Type> elements;
    for (const ConstValue &e : value.elements) {
      if (e.isSequence()) {
        error(at) << "tuples do not nest";
        return failure();
      }
      elements.push_back(builder.getF32Type());
    }
    return Type(builder.getTupleType(elements));
  }

  /// The attribute holding `value` as a hyperparameter of type `type`, or
  /// failure after an error at `at`.
  FailureOr<Attribute> hyperAttr(const ConstValue &value, Type type,
                                 StringRef name, SMRange at) {
    if (auto tuple = dyn_cast<TupleType>(type)) {
      if (!value.isSequence() || value.elements.size() != tuple.size()) {
        error(at) << "hyperparameter '" << name << "' is a tuple of "
                  << tuple.size() << " values";
        return failure();
      }
      SmallVector<Attribute> elements;
      for (auto [element, elementType] :
           llvm::zip(value.elements, tuple.getTypes())) {
        FailureOr<Attribute> a = hyperAttr(element, elementType, name, at);
        if (failed(a))
          return failure();
        elements.push_back(*a);
      }
      return Attribute(builder.getArrayAttr(elements));
    }
    if (value.kind != ConstValue::Kind::Number) {
      error(at) << "hyperparameter '" << name << "' takes a number, not "
                << value.describe();
      return failure();
    }
    if (type.isInteger(64)) {
      if (!value.isInteger) {
        error(at) << "hyperparameter '" << name << "' takes an int, not "
                  << value.describe();
        return failure();
      }
      return Attribute(builder.getI64IntegerAttr(
          static_cast<int64_t>(value.number)));
    }
    return Attribute(builder.getF32FloatAttr(static_cast<float>(value.number)));
  }

  //===--------------------------------------------------------------------===//
  // Names
  //===--------------------------------------------------------------------===//

  Symbol *findSymbol(StringRef name) {
    for (auto &scope : llvm::reverse(scopes)) {
      auto it = scope.find(name);
      if (it != scope.end())
        return &it->second;
    }
    return nullptr;
  }

  std::vector<std::string> visibleNames() {
    std::vector<std::string> names;
    for (auto &scope : scopes)
      for (auto &entry : scope)
        names.push_back(entry.getKey().str());
    for (auto &entry : consts)
      names.push_back(entry.getKey().str());
    names.push_back("step");
    llvm::sort(names);
    return names;
  }

  FailureOr<ConstValue> unknownName(StringRef name, SMRange at) {
    if (globalDecls.count(name)) {
      error(at) << "'" << name
                << "' is a global, known only while a step runs; only "
                   "rules and the functions they call read it";
      return failure();
    }
    if (functions.count(name)) {
      error(at) << "'" << name << "' is a function; call it: " << name
                << "(...)";
      return failure();
    }
    auto topLevel = topLevelNames.find(name);
    if (topLevel != topLevelNames.end() && !rules.count(name)) {
      error(at).append("'", name, "' is used before its declaration")
          .attachNote(loc(topLevel->second))
          .append("declared here");
      return failure();
    }
    auto later = declaredLater.find(name);
    if (later != declaredLater.end()) {
      error(at).append("'", name, "' is used before its declaration")
          .attachNote(loc(later->second))
          .append("declared here");
      return failure();
    }
    InFlightDiagnostic diag = error(at);
    diag << "unknown name '" << name << "'";
    std::string guess = suggest(name, visibleNames());
    if (!guess.empty())
      diag << "; did you mean '" << guess << "'?";
    return failure();
  }

  /// Declares `name` in the innermost scope; no name may hide another.
  LogicalResult declare(StringRef name, Symbol symbol) {
    if (llvm::is_contained({"step", "true", "false"}, name) ||
        isDTypeName(name)) {
      error(symbol.declRange) << "'" << name
                              << "' is a builtin name; choose another";
      return failure();
    }
    if (Symbol *previous = findSymbol(name))
      return duplicate(name, symbol.declRange, previous->declRange);
    auto it = consts.find(name);
    if (it != consts.end())
      return duplicate(name, symbol.declRange, it->second.declRange);
    auto global = globalDecls.find(name);
    if (global != globalDecls.end())
      return duplicate(name, symbol.declRange,
                       global->second->getNameRange());
    scopes.back()[name] = symbol;
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  Value constant(SMLoc at, const ConstValue &value, SMRange range) {
    switch (value.kind) {
    case ConstValue::Kind::Number:
      if (value.isInteger)
        return builder.create<ConstantOp>(
            loc(at), builder.getI64IntegerAttr(static_cast<int64_t>(value.number)));
      return builder.create<ConstantOp>(loc(at),
                                        builder.getF64FloatAttr(value.number));
    case ConstValue::Kind::Bool:
      return builder.create<ConstantOp>(loc(at),
                                        builder.getBoolAttr(value.boolean));
    case ConstValue::Kind::DType:
      error(range) << "'" << value.text << "' is a dtype; convert a value with "
                   << value.text << "(x) or annotate a let: let x: "
                   << value.text << " = ...";
      return {};
    case ConstValue::Kind::String:
      error(range) << "a string can only be a pattern of 'match'";
      return {};
    case ConstValue::Kind::Tuple:
    case ConstValue::Kind::List:
      error(range) << value.describe()
                   << " has no single value here; index it, or iterate "
                      "over it with 'for'";
      return {};
    }
    llvm_unreachable("covered switch");
  }

  template <typename OpTy>
  FailureOr<Type> inferType(SMLoc at, ValueRange operands) {
    SmallVector<Type, 1> types;
    if (failed(OpTy::inferReturnTypes(&context, loc(at),
                                      typename OpTy::Adaptor(operands), types)))
      return failure();
    return types.front();
  }

  /// Builds an op whose result type the dialect infers from its operands.
  template <typename OpTy>
  Value createInferred(SMLoc at, ValueRange operands) {
    if (llvm::any_of(operands, [](Value v) { return !v; }))
      return {};
    for (Value v : operands)
      if (isa<TupleType>(v.getType())) {
        StringRef name = "betas";
        if (auto hyper = v.getDefiningOp<HyperOp>())
          name = hyper.getName();
        error(at) << "a tuple hyperparameter has no single value; index it, "
                     "as in "
                  << name << "[0]";
        return {};
      }
    FailureOr<Type> type = inferType<OpTy>(at, operands);
    if (failed(type))
      return {};
    return builder.create<OpTy>(loc(at), *type, operands);
  }

  Value genName(const NameExpr &expr) {
    StringRef name = expr.getName();
    if (Symbol *symbol = findSymbol(name))
      return symbol->value;
    auto it = consts.find(name);
    if (it != consts.end())
      return constant(expr.getLoc(), it->second.value, expr.getRange());
    if (name == "step") {
      if (!inRule) {
        error(expr.getRange()) << "'step' exists only inside a rule";
        return {};
      }
      return builder.create<StepOp>(loc(expr.getLoc()), builder.getI64Type());
    }
    if (name == "true" || name == "false" || isDTypeName(name))
      return constant(expr.getLoc(), *evalConst(expr), expr.getRange());
    if (globalDecls.count(name))
      return genGlobalValue(expr);
    if (currentGlobal && globalInputs.count(name)) {
      error(expr.getRange())
          << "'" << name << "' is "
          << (globalInputs[name].kind == Symbol::Kind::Param
                  ? "each parameter"
                  : "each parameter's gradient")
          << ": a global reads it only inside sum_params(...) or "
             "max_params(...)";
      return {};
    }
    (void)unknownName(name, expr.getRange());
    return {};
  }

  /// A global read by name: in a rule (or a function it calls), its value
  /// this step.
  Value genGlobalValue(const NameExpr &expr) {
    StringRef name = expr.getName();
    if (currentGlobal) {
      error(expr.getRange())
          << "global '" << currentGlobal->getName()
          << "' cannot read global '" << name
          << "': every global is reduced from the parameters in the same "
             "pass; repeat its math here";
      return {};
    }
    if (!inRule) {
      (void)unknownName(name, expr.getRange());
      return {};
    }
    // Named as the spec names it, in the code a printer makes.
    return builder.create<GlobalValueOp>(
        NameLoc::get(builder.getStringAttr(name), loc(expr.getLoc())),
        builder.getF32Type(), globals.lookup(name).getSymName());
  }

  /// `sum_params(sum(E))` or `max_params(amax(E))` in a global: E,
  /// elementwise math on each parameter and its gradient, reduced over
  /// every element of every parameter.
  Value genReduceParams(const CallExpr &call) {
    StringRef callee = call.getCallee();
    bool isSum = callee == "sum_params";
    StringRef inner = isSum ? "sum" : "amax";
    std::string sample = (callee + "(" + inner +
                          (isSum ? "(g * g))" : "(abs(g)))"))
                             .str();
    if (!currentGlobal) {
      error(call.getCalleeRange())
          << "'" << callee
          << "' reduces across every parameter of the step; it belongs in a "
             "global: global NAME(p, g) = "
          << (isSum ? "sqrt(" + sample + ")" : sample);
      return {};
    }
    if (inPerParameter) {
      error(call.getCalleeRange())
          << "'" << callee
          << "' cannot be inside another reduction across parameters";
      return {};
    }
    const Expr &arg = *call.getArgs()[0];
    auto *contribution = dyn_cast<CallExpr>(&arg);
    if (!contribution || contribution->getCallee() != inner ||
        contribution->getArgs().size() != 1) {
      error(arg.getRange())
          << "the argument of " << callee
          << " is each parameter's contribution: " << inner
          << "(...) of elementwise math on the parameter and its gradient, "
             "over the whole parameter, as in "
          << sample;
      return {};
    }
    const Expr &elementwise = *contribution->getArgs()[0];
    scopes.emplace_back();
    for (auto &input : globalInputs)
      scopes.back()[input.getKey()] = input.second;
    inPerParameter = true;
    Value input = genExpr(elementwise);
    inPerParameter = false;
    scopes.pop_back();
    if (!(input = requireTensor(input, elementwise, inner)))
      return {};
    FailureOr<Type> type =
        inferReduceType(loc(contribution->getLoc()), inner, input.getType(),
                        /*hasAxis=*/false, std::nullopt);
    if (failed(type))
      return {};
    return builder.create<ReduceParamsOp>(
        loc(call.getLoc()), *type, isSum ? ReduceKind::sum : ReduceKind::max,
        input, /*accumulator=*/TypeAttr());
  }

  Value genBinary(const BinaryExpr &expr) {
    Value lhs = genExpr(expr.getLhs());
    if (!lhs)
      return {};
    Value rhs = genExpr(expr.getRhs());
    if (!rhs)
      return {};
    SMLoc at = expr.getOpLoc();
    auto compare = [&](CmpPredicate predicate) -> Value {
      FailureOr<Type> type = inferType<CmpOp>(at, {lhs, rhs});
      if (failed(type))
        return {};
      return builder.create<CmpOp>(loc(at), *type, predicate, lhs, rhs);
    };
    switch (expr.getOp()) {
    case BinaryOp::Add:
      return createInferred<AddOp>(at, {lhs, rhs});
    case BinaryOp::Sub:
      return createInferred<SubOp>(at, {lhs, rhs});
    case BinaryOp::Mul:
      return createInferred<MulOp>(at, {lhs, rhs});
    case BinaryOp::Div:
      return createInferred<DivOp>(at, {lhs, rhs});
    case BinaryOp::Mod:
      return createInferred<ModOp>(at, {lhs, rhs});
    case BinaryOp::Pow:
      return createInferred<PowOp>(at, {lhs, rhs});
    case BinaryOp::MatMul:
      return createInferred<MatmulOp>(at, {lhs, rhs});
    case BinaryOp::And:
      return createInferred<AndOp>(at, {lhs, rhs});
    case BinaryOp::Or:
      return createInferred<OrOp>(at, {lhs, rhs});
    case BinaryOp::Lt:
      return compare(CmpPredicate::lt);
    case BinaryOp::Le:
      return compare(CmpPredicate::le);
    case BinaryOp::Gt:
      return compare(CmpPredicate::gt);
    case BinaryOp::Ge:
      return compare(CmpPredicate::ge);
    case BinaryOp::Eq:
      return compare(CmpPredicate::eq);
    case BinaryOp::Ne:
      return compare(CmpPredicate::ne);
    }
    llvm_unreachable("covered switch");
  }

  /// An int-valued axis argument, known at compile time.
  Value genAxis(const Expr &expr) {
    Value axis = genExpr(expr);
    if (!axis)
      return {};
    if (!axis.getType().isInteger(64)) {
      error(expr.getRange()) << "an axis must be an int, not "
                             << describeType(axis.getType());
      return {};
    }
    Value culprit;
    if (!isKnownAtCompileTime(axis, &culprit)) {
      error(expr.getRange()) << "an axis must be known at compile time, but "
                                "this one depends on "
                             << describeRuntimeValue(culprit);
      return {};
    }
    return axis;
  }

  Value requireTensor(Value value, const Expr &expr, StringRef callee) {
    if (value && !isa<SymbolicTensorType>(value.getType())) {
      error(expr.getRange()) << "'" << callee << "' needs a tensor, but got "
                             << describeType(value.getType());
      return {};
    }
    return value;
  }

  /// `value` with its elements (or itself, a scalar) converted to `elementType`.
  Value convertDType(Value value, Type elementType, SMLoc at) {
    Type target = elementType;
    if (auto tensor = dyn_cast<SymbolicTensorType>(value.getType()))
      target = tensor.withElementType(elementType);
    if (target == value.getType())
      return value;
    return builder.create<CastOp>(loc(at), target, value);
  }

  Value genCall(const CallExpr &call) {
    StringRef callee = call.getCallee();
    const auto &args = call.getArgs();
    SMLoc at = call.getLoc();

    // A constant naming a dtype converts like the dtype itself.
    auto constIt = consts.find(callee);
    if (constIt != consts.end() &&
        constIt->second.value.kind == ConstValue::Kind::DType &&
        !findSymbol(callee)) {
      if (args.size() != 1) {
        error(call.getCalleeRange()) << "'" << callee
                                     << "' takes 1 argument, but "
                                     << args.size() << " were given";
        return {};
      }
      callee = constIt->second.value.text;
    }

    auto function = functions.find(callee);
    if (function != functions.end())
      return genUserCall(call, *function->second);

    const Builtin *builtin = lookupBuiltin(callee);
    if (!builtin) {
      InFlightDiagnostic diag = error(call.getCalleeRange());
      diag << "unknown function '" << callee << "'";
      std::vector<std::string> names;
      for (const Builtin &b : kBuiltins)
        names.push_back(b.name.str());
      std::vector<std::string> userNames;
      for (auto &entry : functions)
        userNames.push_back(entry.getKey().str());
      llvm::sort(userNames);
      llvm::append_range(names, userNames);
      std::string guess = suggest(callee, names);
      if (!guess.empty())
        diag << "; did you mean '" << guess << "'?";
      return {};
    }
    if (args.size() < builtin->minArgs || args.size() > builtin->maxArgs) {
      InFlightDiagnostic diag = error(call.getCalleeRange());
      diag << "'" << callee << "' takes ";
      if (builtin->minArgs == builtin->maxArgs)
        diag << builtin->minArgs;
      else
        diag << builtin->minArgs << " or " << builtin->maxArgs;
      diag << (builtin->maxArgs == 1 ? " argument" : " arguments") << ", but "
           << args.size() << (args.size() == 1 ? " was" : " were")
           << " given";
      return {};
    }
    if (callee == "zeros_like" || callee == "zeros" || callee == "reduced") {
      error(call.getCalleeRange()) << "'" << callee
                                   << "' can only give a state its initial "
                                      "value: state m = zeros_like(p)";
      return {};
    }
    if (callee == "sum_params" || callee == "max_params")
      return genReduceParams(call);
    if (inPerParameter &&
        llvm::is_contained({"sum", "mean", "norm", "amax", "rows", "cols",
                            "size", "ndim", "numel"},
                           callee)) {
      error(call.getCalleeRange())
          << "'" << callee
          << "' of one parameter cannot be part of a global: its math on "
             "the parameter and gradient is elementwise, as a distributed "
             "step may hold a parameter in parts";
      return {};
    }

    SmallVector<Value> values;
    for (const ExprPtr &arg : args) {
      // The axis of a reduction or of size() is generated by genAxis.
      if (values.size() == 1 &&
          llvm::is_contained({"sum", "mean", "norm", "amax", "size"}, callee))
        break;
      Value v = genExpr(*arg);
      if (!v)
        return {};
      values.push_back(v);
    }

    if (isDTypeName(callee))
      return convertDType(
          values[0], *resolveDType({call.getCalleeRange(), callee.str(), {}}),
          at);

    if (llvm::is_contained({"sum", "mean", "norm", "amax"}, callee)) {
      Value input = requireTensor(values[0], *args[0], callee);
      if (!input)
        return {};
      Value axis;
      if (args.size() == 2 && !(axis = genAxis(*args[1])))
        return {};
      ReduceKind kind = llvm::StringSwitch<ReduceKind>(callee)
                            .Case("sum", ReduceKind::sum)
                            .Case("mean", ReduceKind::mean)
                            .Case("norm", ReduceKind::norm)
                            .Default(ReduceKind::max);
      std::optional<int64_t> constAxis;
      APInt axisValue;
      if (axis && matchPattern(axis, m_ConstantInt(&axisValue)))
        constAxis = axisValue.getSExtValue();
      FailureOr<Type> type =
          inferReduceType(loc(args.size() == 2 ? args[1]->getLoc() : at),
                          callee, input.getType(), static_cast<bool>(axis),
                          constAxis);
      if (failed(type))
        return {};
      return builder.create<ReduceOp>(loc(at), *type, kind, input, axis,
                                      /*accumulator=*/TypeAttr());
    }

    if (llvm::is_contained({"rows", "cols", "size"}, callee)) {
      Value input = requireTensor(values[0], *args[0], callee);
      if (!input)
        return {};
      Value axis;
      if (callee == "size") {
        if (!(axis = genAxis(*args[1])))
          return {};
      } else {
        axis = builder.create<ConstantOp>(
            loc(at), builder.getI64IntegerAttr(callee == "rows" ? -2 : -1));
      }
      auto tensor = cast<SymbolicTensorType>(input.getType());
      APInt axisValue;
      if (tensor.isRanked() && callee != "size" && tensor.getRank() != 2) {
        error(args[0]->getRange()) << "'" << callee << "' needs a matrix, but got "
                                   << describeType(tensor);
        return {};
      }
      if (callee == "size" && tensor.isRanked() &&
          matchPattern(axis, m_ConstantInt(&axisValue)) &&
          failed(normalizeAxis(loc(args[1]->getLoc()), "size", tensor,
                               axisValue.getSExtValue())))
        return {};
      return builder.create<DimOp>(loc(at), input, axis);
    }
    if (callee == "ndim" || callee == "numel") {
      Value input = requireTensor(values[0], *args[0], callee);
      if (!input)
        return {};
      if (callee == "ndim")
        return builder.create<NDimOp>(loc(at), input);
      return builder.create<NumelOp>(loc(at), input);
    }
    if (callee == "transpose")
      return createInferred<TransposeOp>(at, values);
    if (callee == "select")
      return createInferred<SelectOp>(at, values);
    return llvm::StringSwitch<std::function<Value()>>(callee)
        .Case("sqrt", [&] { return createInferred<SqrtOp>(at, values); })
        .Case("rsqrt", [&] { return createInferred<RsqrtOp>(at, values); })
        .Case("abs", [&] { return createInferred<AbsOp>(at, values); })
        .Case("sign", [&] { return createInferred<SignOp>(at, values); })
        .Case("floor", [&] { return createInferred<FloorOp>(at, values); })
        .Case("floordiv",
              [&] { return createInferred<FloorDivOp>(at, values); })
        .Case("exp", [&] { return createInferred<ExpOp>(at, values); })
        .Case("log", [&] { return createInferred<LogOp>(at, values); })
        .Case("min", [&] { return createInferred<MinOp>(at, values); })
        .Case("max", [&] { return createInferred<MaxOp>(at, values); })
        .Case("clamp", [&] { return createInferred<ClampOp>(at, values); })
        .Case("lerp", [&] { return createInferred<LerpOp>(at, values); })
        .Default([] { return Value(); })();
  }

  /// The first hyperparameter or state `function` declares, itself or
  /// through the functions it calls: what makes it callable once per rule,
  /// at its top level. Null when it declares none.
  const ast::Binding *firstDeclaration(const FunctionDecl &function) {
    auto known = declarations.find(&function);
    if (known != declarations.end())
      return known->second;
    // Breadth first over the functions it calls, each once: no recursion
    // through calls, however long their chains.
    const ast::Binding *found = nullptr;
    SmallVector<const FunctionDecl *> worklist{&function};
    llvm::SmallPtrSet<const FunctionDecl *, 8> seen;
    seen.insert(&function);
    for (size_t i = 0; i < worklist.size() && !found; ++i) {
      std::function<void(const Expr &)> visitExpr = [&](const Expr &expr) {
        if (auto *call = dyn_cast<CallExpr>(&expr)) {
          auto callee = functions.find(call->getCallee());
          if (callee != functions.end() && seen.insert(callee->second).second)
            worklist.push_back(callee->second);
        }
        forEachChild(expr, visitExpr);
      };
      std::function<void(const ast::Block &)> visitBlock =
          [&](const ast::Block &block) {
            for (const StmtPtr &stmt : block) {
              if (found)
                return;
              if (auto *hyper = dyn_cast<HyperStmt>(stmt.get()))
                found = &hyper->getItems().front();
              else if (auto *state = dyn_cast<StateStmt>(stmt.get()))
                found = &state->getItems().front();
              else
                forEachChild(*stmt, visitExpr, visitBlock);
            }
          };
      visitBlock(worklist[i]->getBody());
    }
    declarations[&function] = found;
    return found;
  }

  /// Inlines a call of a function: its arguments are evaluated here, its
  /// body is generated in a scope of its own (its arguments, and the
  /// constants), and its `return` value is the call's.
  Value genUserCall(const CallExpr &call, const FunctionDecl &function) {
    SMRange at = call.getCalleeRange();
    StringRef name = function.getName();
    const auto &args = call.getArgs();
    size_t arity = function.getParams().size();
    if (!inRule) {
      error(at) << "function '" << name << "' can be called only in a rule"
                << (currentGlobal ? ", not in a global" : "");
      return {};
    }
    if (args.size() != arity) {
      error(at)
          .append("'", name, "' takes ", arity,
                  arity == 1 ? " argument" : " arguments", ", but ",
                  args.size(), args.size() == 1 ? " was" : " were", " given")
          .attachNote(fileLoc(function.getNameRange().Start))
          .append("'", name, "' is declared here");
      return {};
    }
    for (auto [i, frame] : llvm::enumerate(frames)) {
      if (frame.function != &function)
        continue;
      std::string cycle;
      for (const Frame &f : ArrayRef<Frame>(frames).drop_front(i))
        cycle += f.function->getName().str() + " -> ";
      error(at) << "function '" << name << "' calls itself (" << cycle << name
                << "); a function cannot be recursive";
      return {};
    }
    if (frames.size() >= kMaxNestingDepth) {
      error(at) << "function calls nested too deeply (the limit is "
                << kMaxNestingDepth << ")";
      return {};
    }
    if (++inlinedCalls > kMaxInlinedCalls) {
      error(at) << "a rule may make at most " << kMaxInlinedCalls
                << " function calls, counting those made inside functions";
      return {};
    }
    if (const ast::Binding *declared = firstDeclaration(function)) {
      if (controlDepth > 0) {
        error(at).append("function '", name, "' declares '", declared->name,
                         "', a hyperparameter or state, so it can be called "
                         "only at the top level of a rule, outside 'if' and "
                         "'for'");
        return {};
      }
      auto [first, inserted] = statefulCalls.try_emplace(&function, loc(at));
      if (!inserted) {
        error(at)
            .append("function '", name, "' declares '", declared->name,
                    "', a hyperparameter or state, so a rule may call it "
                    "only once")
            .attachNote(first->second)
            .append("first called here");
        return {};
      }
    }
    SmallVector<Value> values;
    for (const ExprPtr &arg : args) {
      Value v = genExpr(*arg);
      if (!v)
        return {};
      values.push_back(v);
    }

    // Into the function: its own names only.
    frames.push_back({&function, loc(at)});
    std::deque<llvm::StringMap<Symbol>> callerScopes = std::move(scopes);
    llvm::StringMap<SMRange> callerLater = std::move(declaredLater);
    Value callerReturn = returnValue;
    scopes.assign(1, {});
    declaredLater = declaredIn(function.getBody());
    returnValue = {};
    auto leave = [&] {
      scopes = std::move(callerScopes);
      declaredLater = std::move(callerLater);
      returnValue = callerReturn;
      frames.pop_back();
    };
    for (auto [param, value] : llvm::zip(function.getParams(), values))
      if (failed(declare(param.name,
                         {Symbol::Kind::Arg, value, param.range}))) {
        leave();
        return {};
      }
    if (failed(genBlock(function.getBody()))) {
      leave();
      return {};
    }
    Value result = returnValue;
    if (isa<TupleType>(result.getType())) {
      error(function.getBody().back()->getRange())
          << "a function returns a tensor or a scalar, not a tuple; index it";
      leave();
      return {};
    }
    // The states it declared are final: only its body assigns them.
    for (auto &entry : scopes.front())
      if (entry.second.kind == Symbol::Kind::State)
        for (auto [stateName, finalValue] : llvm::zip(stateNames, stateFinal))
          if (stateName == entry.getKey())
            finalValue = entry.second.value;
    leave();
    nameValue(result, name);
    return result;
  }

  Value genIndex(const IndexExpr &expr) {
    if (isConstExpr(expr.getBase())) {
      FailureOr<ConstValue> v = evalConst(expr);
      if (failed(v))
        return {};
      return constant(expr.getLoc(), *v, expr.getRange());
    }
    Value base = genExpr(expr.getBase());
    if (!base)
      return {};
    auto tuple = dyn_cast<TupleType>(base.getType());
    if (!tuple) {
      error(expr.getBase().getRange())
          << "only tuples and constant tables can be indexed, not "
          << describeType(base.getType());
      return {};
    }
    FailureOr<int64_t> index = evalInt(expr.getIndex(), "a tuple index");
    if (failed(index))
      return {};
    int64_t size = tuple.size();
    if (*index < -size || *index >= size) {
      error(expr.getIndex().getRange())
          << "index " << *index << " is out of range for a tuple of " << size;
      return {};
    }
    int64_t position = *index < 0 ? *index + size : *index;
    return builder.create<TupleGetOp>(loc(expr.getLoc()),
                                      tuple.getType(position), base, position);
  }

  /// Holds one level of `genDepth` for as long as it lives.
  struct DepthScope {
    explicit DepthScope(unsigned &depth) : depth(depth) { ++depth; }
    ~DepthScope() { --depth; }
    unsigned &depth;
  };

  /// Expressions and blocks nest at most kMaxNestingDepth deep in the
  /// source, but inlined calls stack them: this bounds the recursion of
  /// generating them, whatever the functions.
  bool tooDeep(SMLoc at) {
    if (genDepth <= kMaxGenDepth)
      return false;
    if (!reportedTooDeep)
      error(at) << "expressions and blocks nested too deeply, counting "
                   "those of the functions called (the limit is "
                << kMaxGenDepth << ")";
    reportedTooDeep = true;
    return true;
  }

  Value genExpr(const Expr &expr) {
    DepthScope depth(genDepth);
    if (tooDeep(expr.getLoc()))
      return {};
    switch (expr.getKind()) {
    case Expr::Kind::Number:
    case Expr::Kind::String: {
      FailureOr<ConstValue> v = evalConst(expr);
      if (failed(v))
        return {};
      return constant(expr.getLoc(), *v, expr.getRange());
    }
    case Expr::Kind::Name:
      return genName(cast<NameExpr>(expr));
    case Expr::Kind::Call:
      return genCall(cast<CallExpr>(expr));
    case Expr::Kind::Unary: {
      auto &u = cast<UnaryExpr>(expr);
      // `-3` is a literal, not an op on one.
      if (u.getOp() == UnaryOp::Neg && isa<NumberExpr>(u.getOperand())) {
        FailureOr<ConstValue> v = evalConst(expr);
        return failed(v) ? Value() : constant(expr.getLoc(), *v, expr.getRange());
      }
      Value operand = genExpr(u.getOperand());
      if (u.getOp() == UnaryOp::Neg)
        return createInferred<NegOp>(expr.getLoc(), operand);
      return createInferred<NotOp>(expr.getLoc(), operand);
    }
    case Expr::Kind::Binary:
      return genBinary(cast<BinaryExpr>(expr));
    case Expr::Kind::Ternary: {
      auto &t = cast<TernaryExpr>(expr);
      Value c = genExpr(t.getCond());
      if (!c)
        return {};
      Value a = genExpr(t.getThen());
      if (!a)
        return {};
      Value b = genExpr(t.getElse());
      return createInferred<SelectOp>(expr.getLoc(), {c, a, b});
    }
    case Expr::Kind::Tuple:
    case Expr::Kind::List:
      error(expr.getRange()) << "a tuple or list can be the value of a "
                                "constant or a hyperparameter, not of a tensor";
      return {};
    case Expr::Kind::Index:
      return genIndex(cast<IndexExpr>(expr));
    case Expr::Kind::Slice:
      error(expr.getRange()) << "a slice of a table can only be iterated with "
                                "'for'";
      return {};
    case Expr::Kind::Transpose: {
      Value operand = genExpr(cast<TransposeExpr>(expr).getOperand());
      return createInferred<TransposeOp>(expr.getLoc(), operand);
    }
    }
    llvm_unreachable("covered switch");
  }

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  /// Records the spec's name for the op computing `value` (a NameLoc around
  /// its location), so that emitted code can name it as the spec does. A
  /// value that already has a name (`let y = x`) keeps it.
  void nameValue(Value value, StringRef name) {
    Operation *def = value.getDefiningOp();
    if (!def || isa<NameLoc>(def->getLoc()) ||
        isa<HyperOp, StateOp>(def))
      return;
    def->setLoc(NameLoc::get(builder.getStringAttr(name), def->getLoc()));
  }

  /// `value` as the type `target` of a variable: the dtype converts (as an
  /// in-place update would); the shape must already agree.
  Value convertForAssignment(Value value, Type target, StringRef name,
                             SMRange at) {
    if (value.getType() == target)
      return value;
    auto rank = [](Type t) {
      Type element = getElementTypeOrSelf(t);
      return element.isInteger(1) ? 0 : isa<IntegerType>(element) ? 1 : 2;
    };
    if (!areShapesCompatible(value.getType(), target) ||
        rank(value.getType()) > rank(target)) {
      error(at) << "cannot assign a value of type "
                << describeType(value.getType()) << " to '" << name
                << "', which has type " << describeType(target);
      return {};
    }
    return builder.create<CastOp>(loc(at), target, value);
  }

  /// Claims `name` for a hyperparameter or state of the current rule: they
  /// share one namespace, with those of the functions the rule calls.
  LogicalResult claimRuleName(StringRef name, SMRange at) {
    auto it = ruleNames.find(name);
    if (it != ruleNames.end() && !findSymbol(name))
      return duplicate(name, at, it->second);
    ruleNames.try_emplace(name, loc(at));
    return success();
  }

  LogicalResult genHyper(const HyperStmt &stmt) {
    for (const ast::Binding &item : stmt.getItems()) {
      Type type = builder.getF32Type();
      std::optional<ConstValue> initial;
      if (item.init) {
        FailureOr<ConstValue> v = evalConst(*item.init);
        if (failed(v))
          return failure();
        initial = *v;
        FailureOr<Type> implied = hyperTypeOf(*v, item.init->getRange());
        if (failed(implied))
          return failure();
        type = *implied;
      }
      if (item.type) {
        FailureOr<Type> t = resolveHyperType(*item.type);
        if (failed(t))
          return failure();
        type = *t;
      }
      Attribute defaultValue;
      if (initial) {
        FailureOr<Attribute> a =
            hyperAttr(*initial, type, item.name, item.init->getRange());
        if (failed(a))
          return failure();
        defaultValue = *a;
      }
      if (failed(claimRuleName(item.name, item.nameRange)))
        return failure();
      // Laid out later, by optgen-assign-hyper-offsets.
      auto hyper = builder.create<HyperOp>(loc(item.nameRange), type, item.name,
                                           defaultValue,
                                           /*offset=*/nullptr);
      if (failed(declare(item.name,
                         {Symbol::Kind::Hyper, hyper, item.nameRange})))
        return failure();
    }
    return success();
  }

  LogicalResult genState(const StateStmt &stmt) {
    for (const ast::Binding &item : stmt.getItems()) {
      std::optional<Type> dtype;
      if (item.type) {
        FailureOr<Type> t = resolveDType(*item.type);
        if (failed(t))
          return failure();
        dtype = *t;
      }
      auto *init = item.init ? dyn_cast<CallExpr>(item.init.get()) : nullptr;
      auto badInit = [&] {
        error(item.init ? item.init->getRange() : item.nameRange)
            << "a state starts as zeros_like(x), zeros(reduced(x, axis)) or "
               "zeros() for a scalar";
        return failure();
      };
      if (!init)
        return badInit();
      Value like, axis;
      if (init->getCallee() == "zeros_like" && init->getArgs().size() == 1) {
        like = requireTensor(genExpr(*init->getArgs()[0]), *init->getArgs()[0],
                             "zeros_like");
        if (!like)
          return failure();
      } else if (init->getCallee() == "zeros" && init->getArgs().size() == 1) {
        auto *reducedCall = dyn_cast<CallExpr>(init->getArgs()[0].get());
        if (!reducedCall || reducedCall->getCallee() != "reduced" ||
            reducedCall->getArgs().size() != 2)
          return badInit();
        like = requireTensor(genExpr(*reducedCall->getArgs()[0]),
                             *reducedCall->getArgs()[0], "reduced");
        if (!like || !(axis = genAxis(*reducedCall->getArgs()[1])))
          return failure();
      } else if (!(init->getCallee() == "zeros" && init->getArgs().empty())) {
        return badInit();
      }

      Type type = dtype.value_or(builder.getF32Type());
      if (like) {
        Type shape = like.getType();
        if (axis) {
          APInt axisValue;
          std::optional<int64_t> constAxis;
          if (matchPattern(axis, m_ConstantInt(&axisValue)))
            constAxis = axisValue.getSExtValue();
          FailureOr<Type> reduced =
              inferReduceType(loc(init->getLoc()), "reduced", shape, true,
                              constAxis);
          if (failed(reduced))
            return failure();
          shape = *reduced;
        }
        auto tensor = cast<SymbolicTensorType>(shape);
        Type element = tensor.getElementType();
        type = tensor.withElementType(dtype.value_or(
            isa<FloatType>(element) ? element : builder.getF32Type()));
        // Shaped like the parameter (a function's argument, computed from
        // the gradient): the parameter is what the state's shape follows.
        auto likeType = cast<SymbolicTensorType>(like.getType());
        auto paramType = cast<SymbolicTensorType>(ruleParam.getType());
        if (likeType.getAnyRank() == paramType.getAnyRank() &&
            likeType.getDims() == paramType.getDims() &&
            llvm::none_of(likeType.getDims(),
                          [](Attribute d) { return isa<UnitAttr>(d); }))
          like = ruleParam;
      }
      if (failed(claimRuleName(item.name, item.nameRange)))
        return failure();
      auto state = builder.create<StateOp>(loc(item.nameRange), type,
                                           item.name, like, axis);
      if (failed(declare(item.name,
                         {Symbol::Kind::State, state, item.nameRange})))
        return failure();
      stateNames.push_back(item.name);
      stateFinal.push_back(Value());
    }
    return success();
  }

  LogicalResult genLet(const LetStmt &stmt) {
    const ast::Binding &binding = stmt.getBinding();
    Value value = genExpr(*binding.init);
    if (!value)
      return failure();
    if (binding.type) {
      FailureOr<Type> dtype = resolveDType(*binding.type);
      if (failed(dtype))
        return failure();
      value = convertDType(value, *dtype, binding.nameRange.Start);
    }
    if (isa<TupleType>(value.getType())) {
      error(binding.init->getRange()) << "a let holds a tensor or a scalar, "
                                         "not a tuple; index it";
      return failure();
    }
    nameValue(value, binding.name);
    return declare(binding.name,
                   {Symbol::Kind::Let, value, binding.nameRange});
  }

  LogicalResult genAssign(const AssignStmt &stmt) {
    StringRef name = stmt.getTarget();
    SMRange at = stmt.getTargetRange();
    Symbol *symbol = findSymbol(name);
    if (!symbol) {
      if (consts.count(name)) {
        error(at) << "cannot assign to the constant '" << name << "'";
        return failure();
      }
      if (name == "step") {
        error(at) << "cannot assign to 'step'; it counts the steps itself";
        return failure();
      }
      if (globalDecls.count(name)) {
        error(at) << "cannot assign to the global '" << name
                  << "'; it is computed from every parameter at each step";
        return failure();
      }
      if (declaredLater.count(name))
        return (void)unknownName(name, at), failure();
      error(at) << "cannot assign to undeclared '" << name
                << "'; declare it first: let " << name << " = ...";
      return failure();
    }
    switch (symbol->kind) {
    case Symbol::Kind::Grad:
      error(at) << "cannot assign to the gradient '" << name
                << "'; copy it first: let u = " << name;
      return failure();
    case Symbol::Kind::Hyper:
      error(at) << "cannot assign to the hyperparameter '" << name
                << "'; groups and training code set it";
      return failure();
    case Symbol::Kind::LoopVar:
      error(at) << "cannot assign to the loop variable '" << name << "'";
      return failure();
    case Symbol::Kind::Arg:
      error(at) << "cannot assign to the argument '" << name
                << "'; copy it first: let u = " << name;
      return failure();
    case Symbol::Kind::Param:
      if (!inRule) {
        error(at) << "cannot assign to the parameter in a 'where' condition";
        return failure();
      }
      break;
    case Symbol::Kind::State:
    case Symbol::Kind::Let:
      break;
    }
    Value value = genExpr(stmt.getValue());
    if (!value)
      return failure();
    value = convertForAssignment(value, symbol->value.getType(), name,
                                 stmt.getValue().getRange());
    if (!value)
      return failure();
    nameValue(value, name);
    symbol->value = value;
    return success();
  }

  /// The symbols declared outside the statement that `block` assigns.
  SmallVector<std::pair<StringRef, Symbol *>>
  carriedSymbols(ArrayRef<const ast::Block *> blocks) {
    llvm::SetVector<StringRef> names;
    for (const ast::Block *block : blocks)
      collectAssigned(*block, names);
    SmallVector<std::pair<StringRef, Symbol *>> carried;
    for (StringRef name : names)
      if (Symbol *symbol = findSymbol(name))
        carried.push_back({name, symbol});
    return carried;
  }

  /// Generates `block`, the body of an `if` or `for`, in a new scope.
  LogicalResult genScopedBlock(const ast::Block &block) {
    DepthScope depth(genDepth);
    if (!block.empty() && tooDeep(block.front()->getLoc()))
      return failure();
    scopes.emplace_back();
    ++controlDepth;
    LogicalResult result = genBlock(block);
    --controlDepth;
    scopes.pop_back();
    return result;
  }

  LogicalResult genIf(const IfStmt &stmt) {
    Value cond = genExpr(stmt.getCond());
    if (!cond)
      return failure();
    if (isa<SymbolicTensorType>(cond.getType()) &&
        getElementTypeOrSelf(cond.getType()).isInteger(1)) {
      error(stmt.getCond().getRange())
          << "the condition of 'if' must be one bool, not a mask ("
          << describeType(cond.getType())
          << "); use select(c, a, b) to choose elementwise";
      return failure();
    }
    if (!cond.getType().isInteger(1)) {
      error(stmt.getCond().getRange())
          << "the condition of 'if' must be true or false, not "
          << describeType(cond.getType());
      return failure();
    }
    if (!isKnownAtCompileTime(cond))
      return genRuntimeIf(stmt, cond);
    auto carried = carriedSymbols({&stmt.getThen(), &stmt.getElse()});
    SmallVector<Type> types;
    SmallVector<Value> before;
    for (auto &[name, symbol] : carried) {
      types.push_back(symbol->value.getType());
      before.push_back(symbol->value);
    }
    auto ifOp = builder.create<IfOp>(loc(stmt.getLoc()), types, cond);
    OpBuilder::InsertionGuard guard(builder);
    for (auto [region, block] :
         {std::pair(&ifOp.getThenRegion(), &stmt.getThen()),
          std::pair(&ifOp.getElseRegion(), &stmt.getElse())}) {
      builder.setInsertionPointToStart(&region->emplaceBlock());
      if (failed(genScopedBlock(*block)))
        return failure();
      SmallVector<Value> results;
      for (auto &[name, symbol] : carried)
        results.push_back(symbol->value);
      builder.create<YieldOp>(loc(stmt.getLoc()), results);
      for (auto [entry, value] : llvm::zip(carried, before))
        entry.second->value = value;
    }
    for (auto [entry, result] : llvm::zip(carried, ifOp.getResults()))
      entry.second->value = result;
    return success();
  }

  /// An `if` on a bool known only at run time (`step % k == 0`, a
  /// hyperparameter): both branches are computed, and each variable they
  /// assign takes the taken branch's value, as select(cond, then, else).
  LogicalResult genRuntimeIf(const IfStmt &stmt, Value cond) {
    auto carried = carriedSymbols({&stmt.getThen(), &stmt.getElse()});
    SmallVector<Value> before, afterThen;
    for (auto &[name, symbol] : carried)
      before.push_back(symbol->value);
    if (failed(genScopedBlock(stmt.getThen())))
      return failure();
    for (auto [entry, value] : llvm::zip(carried, before)) {
      afterThen.push_back(entry.second->value);
      entry.second->value = value;
    }
    if (failed(genScopedBlock(stmt.getElse())))
      return failure();
    SMLoc at = stmt.getLoc();
    for (auto [entry, onTrue, old] : llvm::zip(carried, afterThen, before)) {
      auto &[name, symbol] = entry;
      Value onFalse = symbol->value;
      if (onTrue == onFalse)
        continue;
      Value chosen = createInferred<SelectOp>(at, {cond, onTrue, onFalse});
      if (!chosen)
        return failure();
      // A mask's select gives floats: back to the variable's type.
      if (chosen.getType() != old.getType())
        chosen = builder.create<CastOp>(loc(at), old.getType(), chosen);
      nameValue(chosen, name);
      symbol->value = chosen;
    }
    return success();
  }

  LogicalResult genFor(const ForStmt &stmt) {
    // The table: a constant list, possibly sliced with a bound known only
    // at run time (`polar_express[0 : ns_steps]`).
    const Expr *tableExpr = &stmt.getIterable();
    const Expr *runtimeBound = nullptr;
    int64_t lo = 0;
    if (auto *slice = dyn_cast<SliceExpr>(tableExpr);
        slice && slice->getHi() && !isConstExpr(*slice->getHi())) {
      runtimeBound = slice->getHi();
      tableExpr = &slice->getBase();
      if (slice->getLo()) {
        FailureOr<int64_t> v = evalInt(*slice->getLo(), "a slice bound");
        if (failed(v))
          return failure();
        lo = *v;
      }
    }
    FailureOr<ConstValue> table = evalConst(*tableExpr);
    if (failed(table))
      return failure();
    if (!table->isSequence()) {
      error(tableExpr->getRange()) << "'for' iterates over a constant list, not "
                                   << table->describe();
      return failure();
    }
    int64_t numRows = table->elements.size();
    if (lo < 0 || lo > numRows) {
      error(stmt.getIterable().getRange())
          << "slice start " << lo << " is out of range for a table of "
          << numRows << " rows";
      return failure();
    }
    table->elements.erase(table->elements.begin(),
                          table->elements.begin() + lo);
    numRows -= lo;
    if (numRows == 0) {
      error(stmt.getIterable().getRange()) << "the loop has no rows to run";
      return failure();
    }
    SmallVector<double> values;
    int64_t rowLength = -1;
    for (const ConstValue &row : table->elements) {
      SmallVector<const ConstValue *> cells;
      if (row.isSequence())
        for (const ConstValue &cell : row.elements)
          cells.push_back(&cell);
      else
        cells.push_back(&row);
      if (rowLength >= 0 && static_cast<int64_t>(cells.size()) != rowLength) {
        error(tableExpr->getRange()) << "every row of the table must have "
                                     << rowLength << " values";
        return failure();
      }
      rowLength = cells.size();
      for (const ConstValue *cell : cells) {
        if (cell->kind != ConstValue::Kind::Number) {
          error(tableExpr->getRange()) << "a table holds numbers, not "
                                       << cell->describe();
          return failure();
        }
        values.push_back(cell->number);
      }
    }
    if (static_cast<int64_t>(stmt.getVars().size()) != rowLength ||
        (rowLength > 1 && !stmt.getDestructures())) {
      error(stmt.getVars().front().range)
          << "each row has " << rowLength << " value"
          << (rowLength == 1 ? "" : "s") << ", but the loop names "
          << stmt.getVars().size();
      return failure();
    }

    Value count;
    if (runtimeBound) {
      count = genExpr(*runtimeBound);
      if (!count)
        return failure();
      if (!count.getType().isInteger(64)) {
        error(runtimeBound->getRange()) << "a loop bound must be an int, not "
                                        << describeType(count.getType());
        return failure();
      }
      if (lo != 0)
        count = builder.create<SubOp>(
            loc(runtimeBound->getLoc()), builder.getI64Type(), count,
            builder.create<ConstantOp>(loc(runtimeBound->getLoc()),
                                       builder.getI64IntegerAttr(lo)));
    } else {
      count = builder.create<ConstantOp>(loc(stmt.getIterable().getLoc()),
                                         builder.getI64IntegerAttr(numRows));
    }

    auto tableType = RankedTensorType::get({numRows, rowLength},
                                           builder.getF64Type());
    auto carried = carriedSymbols({&stmt.getBody()});
    SmallVector<Value> inits;
    for (auto &[name, symbol] : carried)
      inits.push_back(symbol->value);
    auto forOp = builder.create<ForTableOp>(
        loc(stmt.getLoc()), ValueRange(inits).getTypes(), count,
        DenseFPElementsAttr::get(tableType, values), inits);

    OpBuilder::InsertionGuard guard(builder);
    mlir::Block &body = forOp.getBody().emplaceBlock();
    builder.setInsertionPointToStart(&body);
    scopes.emplace_back();
    for (const ForStmt::Var &var : stmt.getVars()) {
      Value arg = body.addArgument(builder.getF32Type(), loc(var.range));
      if (failed(declare(var.name, {Symbol::Kind::LoopVar, arg, var.range}))) {
        scopes.pop_back();
        return failure();
      }
    }
    for (auto &[name, symbol] : carried)
      symbol->value = body.addArgument(symbol->value.getType(),
                                       loc(stmt.getLoc()));
    LogicalResult result = genScopedBlock(stmt.getBody());
    scopes.pop_back();
    if (failed(result))
      return failure();
    SmallVector<Value> yields;
    for (auto &[name, symbol] : carried)
      yields.push_back(symbol->value);
    builder.create<YieldOp>(loc(stmt.getLoc()), yields);
    for (auto [entry, value] : llvm::zip(carried, forOp.getResults()))
      entry.second->value = value;
    return success();
  }

  LogicalResult genBlock(const ast::Block &block) {
    for (const StmtPtr &stmt : block) {
      // The top level of a rule's or a function's body.
      bool topLevel = scopes.size() == 1;
      LogicalResult result = success();
      switch (stmt->getKind()) {
      case Stmt::Kind::Hyper:
      case Stmt::Kind::State:
        if (!topLevel || controlDepth > 0) {
          error(stmt->getRange())
              << "'" << (isa<HyperStmt>(stmt.get()) ? "hyper" : "state")
              << "' declarations belong at the top level of a "
              << (frames.empty() ? "rule" : "function");
          return failure();
        }
        result = isa<HyperStmt>(stmt.get())
                     ? genHyper(*cast<HyperStmt>(stmt.get()))
                     : genState(*cast<StateStmt>(stmt.get()));
        break;
      case Stmt::Kind::Let:
        result = genLet(*cast<LetStmt>(stmt.get()));
        break;
      case Stmt::Kind::Assign:
        result = genAssign(*cast<AssignStmt>(stmt.get()));
        break;
      case Stmt::Kind::If:
        result = genIf(*cast<IfStmt>(stmt.get()));
        break;
      case Stmt::Kind::For:
        result = genFor(*cast<ForStmt>(stmt.get()));
        break;
      case Stmt::Kind::Return:
        // Only as a function's last statement (checkReturns).
        returnValue = genExpr(cast<ReturnStmt>(stmt.get())->getValue());
        if (!returnValue)
          return failure();
        break;
      }
      if (failed(result))
        return failure();
      // Declared now: a later use is an ordinary one.
      if (topLevel)
        forgetDeclaredLater(*stmt);
    }
    return success();
  }

  void forgetDeclaredLater(const Stmt &stmt) {
    if (auto *hyper = dyn_cast<HyperStmt>(&stmt))
      for (const ast::Binding &item : hyper->getItems())
        declaredLater.erase(item.name);
    else if (auto *state = dyn_cast<StateStmt>(&stmt))
      for (const ast::Binding &item : state->getItems())
        declaredLater.erase(item.name);
    else if (auto *let = dyn_cast<LetStmt>(&stmt))
      declaredLater.erase(let->getBinding().name);
  }

  //===--------------------------------------------------------------------===//
  // Declarations
  //===--------------------------------------------------------------------===//

  LogicalResult claimTopLevelName(const Decl &decl) {
    auto [it, inserted] =
        topLevelNames.try_emplace(decl.getName(), decl.getNameRange());
    if (!inserted)
      return duplicate(decl.getName(), decl.getNameRange(), it->second);
    return success();
  }

  /// A function's name is not a builtin's; its body ends with its only
  /// `return`.
  LogicalResult checkFunction(const FunctionDecl &function) {
    StringRef name = function.getName();
    if (lookupBuiltin(name) || isDTypeName(name) ||
        llvm::is_contained({"step", "true", "false"}, name)) {
      error(function.getNameRange())
          << "'" << name << "' is a builtin name; choose another";
      return failure();
    }
    const ast::Block &body = function.getBody();
    if (body.empty() || !isa<ReturnStmt>(body.back().get())) {
      error(function.getNameRange())
          << "function '" << name
          << "' must end with 'return EXPR', which gives its value";
      return failure();
    }
    return checkReturns(body, &function);
  }

  /// No `return` in `block` but a function's last statement.
  LogicalResult checkReturns(const ast::Block &block,
                             const FunctionDecl *function) {
    for (const StmtPtr &stmt : block) {
      if (auto *ret = dyn_cast<ReturnStmt>(stmt.get())) {
        if (!function) {
          error(ret->getRange())
              << "'return' belongs at the end of a function; a rule gives "
                 "its result by assigning the parameter and its states";
          return failure();
        }
        if (ret != function->getBody().back().get()) {
          error(ret->getRange())
              << "'return' must be the last statement of the function, "
                 "outside 'if' and 'for'";
          return failure();
        }
        continue;
      }
      LogicalResult result = success();
      forEachChild(
          *stmt, [](const Expr &) {},
          [&](const ast::Block &nested) {
            if (succeeded(result))
              result = checkReturns(nested, function);
          });
      if (failed(result))
        return failure();
    }
    return success();
  }

  LogicalResult genConst(const ConstDecl &decl) {
    const Expr *value = &decl.getValue();
    auto override = overrides.find(decl.getName());
    if (override != overrides.end()) {
      value = &override->second->getValue();
      usedOverrides.insert(decl.getName());
    }
    FailureOr<ConstValue> v = evalConst(*value);
    if (failed(v))
      return failure();
    consts[decl.getName()] = {*v, decl.getNameRange()};
    return success();
  }

  FailureOr<Type> inputType(const RuleDecl &decl) {
    const RuleDecl::Input *annotated = nullptr;
    for (const RuleDecl::Input &input : decl.getInputs()) {
      if (!input.type)
        continue;
      if (annotated && annotated->type->name != input.type->name) {
        error(input.type->range) << "the gradient has the parameter's shape: "
                                    "annotate both alike";
        return failure();
      }
      annotated = &input;
    }
    Type f32 = builder.getF32Type();
    if (!annotated || annotated->type->name == "tensor")
      return Type(SymbolicTensorType::getUnranked(f32));
    Attribute m = builder.getStringAttr("m"), n = builder.getStringAttr("n");
    if (annotated->type->name == "matrix")
      return Type(SymbolicTensorType::get({m, n}, f32));
    if (annotated->type->name == "vector")
      return Type(SymbolicTensorType::get({n}, f32));
    error(annotated->type->range) << "a rule input is a 'matrix', a 'vector' "
                                     "or a 'tensor' (any rank)";
    return failure();
  }

  LogicalResult genRule(const RuleDecl &decl, mlir::Block &module) {
    if (decl.getInputs().size() != 2) {
      error(decl.getNameRange()) << "a rule takes two inputs, the parameter "
                                    "and its gradient: rule "
                                 << decl.getName() << "(p, g)";
      return failure();
    }
    FailureOr<Type> type = inputType(decl);
    if (failed(type))
      return failure();
    builder.setInsertionPointToEnd(&module);
    SmallVector<StringRef> inputNames;
    for (const RuleDecl::Input &input : decl.getInputs())
      inputNames.push_back(input.name);
    auto rule = builder.create<RuleOp>(loc(decl.getNameRange()), decl.getName(),
                                       builder.getStrArrayAttr(inputNames));
    rules[decl.getName()] = rule;
    mlir::Block &body = rule.getBody().emplaceBlock();
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&body);

    inRule = true;
    scopes.assign(1, {});
    stateNames.clear();
    stateFinal.clear();
    ruleNames.clear();
    statefulCalls.clear();
    inlinedCalls = 0;
    controlDepth = 0;
    declaredLater = declaredIn(decl.getBody());
    auto finish = [&](LogicalResult result) {
      inRule = false;
      scopes.clear();
      return result;
    };
    for (auto [index, input] : llvm::enumerate(decl.getInputs())) {
      Value arg = body.addArgument(*type, loc(input.range));
      if (index == 0)
        ruleParam = arg;
      auto kind = index == 0 ? Symbol::Kind::Param : Symbol::Kind::Grad;
      if (failed(declare(input.name, {kind, arg, input.range})))
        return finish(failure());
    }
    if (failed(genBlock(decl.getBody())))
      return finish(failure());
    SmallVector<Value> states;
    for (auto [name, finalValue] : llvm::zip(stateNames, stateFinal))
      states.push_back(finalValue ? finalValue : scopes.front()[name].value);
    builder.create<UpdateOp>(loc(decl.getRange().End),
                             scopes.front()[decl.getInputs()[0].name].value,
                             states);
    return finish(success());
  }

  LogicalResult genGlobal(const GlobalDecl &decl, mlir::Block &module) {
    StringRef name = decl.getName();
    if (decl.getInputs().size() != 2) {
      error(decl.getNameRange())
          << "a global takes two inputs, each parameter and its gradient: "
             "global "
          << name << "(p, g) = ...";
      return failure();
    }
    builder.setInsertionPointToEnd(&module);
    SmallVector<StringRef> inputNames;
    for (const GlobalDecl::Input &input : decl.getInputs())
      inputNames.push_back(input.name);
    auto global = builder.create<GlobalOp>(
        loc(decl.getNameRange()), name, builder.getStrArrayAttr(inputNames));
    mlir::Block &body = global.getBody().emplaceBlock();
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&body);

    currentGlobal = &decl;
    scopes.assign(1, {});
    auto finish = [&](LogicalResult result) {
      currentGlobal = nullptr;
      globalInputs.clear();
      scopes.clear();
      return result;
    };
    Type any = SymbolicTensorType::getUnranked(builder.getF32Type());
    for (auto [index, input] : llvm::enumerate(decl.getInputs())) {
      Value arg = body.addArgument(any, loc(input.range));
      auto kind = index == 0 ? Symbol::Kind::Param : Symbol::Kind::Grad;
      if (failed(declare(input.name, {kind, arg, input.range})))
        return finish(failure());
    }
    // Declared as a rule's inputs are, but visible only inside the
    // reductions across parameters.
    globalInputs = std::move(scopes.front());
    scopes.assign(1, {});
    Value value = genExpr(decl.getValue());
    if (!value)
      return finish(failure());
    if (body.getOps<ReduceParamsOp>().empty()) {
      error(decl.getNameRange())
          << "global '" << name
          << "' reduces nothing across parameters: its value needs "
             "sum_params(sum(...)) or max_params(amax(...))";
      return finish(failure());
    }
    if (!isa<FloatType>(value.getType())) {
      error(decl.getValue().getRange())
          << "a global's value is a float, not "
          << describeType(value.getType());
      return finish(failure());
    }
    value = convertDType(value, builder.getF32Type(), decl.getValue().getLoc());
    nameValue(value, name);
    builder.create<YieldOp>(loc(decl.getValue().getLoc()), value);
    globals[name] = global;
    return finish(success());
  }

  LogicalResult genGroup(const GroupDecl &decl, mlir::Block &module) {
    auto ruleIt = rules.find(decl.getRule());
    if (ruleIt == rules.end() && functions.count(decl.getRule())) {
      error(decl.getRuleRange())
          << "group '" << decl.getName() << "' needs a rule, but '"
          << decl.getRule()
          << "' is a function; call it from a rule: rule r(p, g) { p = "
          << decl.getRule() << "(...) }";
      return failure();
    }
    if (ruleIt == rules.end()) {
      InFlightDiagnostic diag = error(decl.getRuleRange());
      diag << "group '" << decl.getName() << "' uses unknown rule '"
           << decl.getRule() << "'";
      std::vector<std::string> names;
      for (auto &entry : rules)
        names.push_back(entry.getKey().str());
      llvm::sort(names);
      std::string guess = suggest(decl.getRule(), names);
      if (!guess.empty())
        diag << "; did you mean '" << guess << "'?";
      return failure();
    }
    RuleOp rule = ruleIt->second;
    if (decl.getPatterns().empty()) {
      error(decl.getNameRange()) << "group '" << decl.getName()
                                 << "' matches no parameters; add match "
                                    "\"pattern\"";
      return failure();
    }
    SmallVector<StringRef> patterns;
    for (const auto &pattern : decl.getPatterns()) {
      StringRef text = pattern->getValue();
      size_t open = text.find('[');
      if (text.empty() ||
          (open != StringRef::npos && text.find(']', open) == StringRef::npos)) {
        error(pattern->getRange()) << (text.empty() ? "an empty pattern "
                                                      "matches nothing"
                                                    : "unterminated '[' in "
                                                      "pattern");
        return failure();
      }
      patterns.push_back(text);
    }

    SmallVector<NamedAttribute> settings;
    llvm::StringMap<SMRange> seen;
    for (const GroupDecl::Setting &setting : decl.getSettings()) {
      auto [it, inserted] = seen.try_emplace(setting.name, setting.nameRange);
      if (!inserted)
        return duplicate(setting.name, setting.nameRange, it->second);
      HyperOp hyper = rule.lookupHyper(setting.name);
      if (!hyper) {
        InFlightDiagnostic diag = error(setting.nameRange);
        diag << "rule '" << rule.getSymName()
             << "' has no hyperparameter '" << setting.name << "'";
        std::vector<std::string> names;
        for (HyperOp h : rule.getBlock().getOps<HyperOp>())
          names.push_back(h.getName().str());
        std::string guess = suggest(setting.name, names);
        if (!guess.empty())
          diag << "; did you mean '" << guess << "'?";
        return failure();
      }
      FailureOr<ConstValue> value = evalConst(*setting.value);
      if (failed(value))
        return failure();
      FailureOr<Attribute> attr = hyperAttr(*value, hyper.getType(),
                                            setting.name,
                                            setting.value->getRange());
      if (failed(attr))
        return failure();
      settings.push_back(builder.getNamedAttr(setting.name, *attr));
    }
    for (HyperOp hyper : rule.getBlock().getOps<HyperOp>())
      if (!hyper.getDefaultValueAttr() && !seen.count(hyper.getName())) {
        error(decl.getNameRange()).append(
            "group '", decl.getName(), "' must set '", hyper.getName(),
            "': rule '", rule.getSymName(), "' gives it no default");
        return failure();
      }

    builder.setInsertionPointToEnd(&module);
    auto group = builder.create<GroupOp>(
        loc(decl.getNameRange()), decl.getName(), rule.getSymName(),
        builder.getStrArrayAttr(patterns),
        builder.getDictionaryAttr(settings));
    if (decl.getPredicates().empty())
      return success();

    mlir::Block &body = group.getPredicate().emplaceBlock();
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&body);
    Value param = body.addArgument(
        SymbolicTensorType::getUnranked(builder.getF32Type()),
        loc(decl.getNameRange()));
    scopes.assign(1, {});
    scopes.front()["param"] = {Symbol::Kind::Param, param, decl.getNameRange()};
    Value all;
    for (const ExprPtr &predicate : decl.getPredicates()) {
      Value cond = genExpr(*predicate);
      if (!cond) {
        scopes.clear();
        return failure();
      }
      Value culprit;
      if (!cond.getType().isInteger(1)) {
        error(predicate->getRange()) << "a 'where' condition must be true or "
                                        "false, not "
                                     << describeType(cond.getType());
        scopes.clear();
        return failure();
      }
      if (!isKnownAtCompileTime(cond, &culprit)) {
        error(predicate->getRange())
            << "a 'where' condition may use only the parameter's shape "
               "(rows, cols, size, ndim, numel) and constants; it depends on "
            << describeRuntimeValue(culprit);
        scopes.clear();
        return failure();
      }
      all = all ? builder.create<AndOp>(loc(predicate->getLoc()),
                                        builder.getI1Type(), all, cond)
                      .getResult()
                : cond;
    }
    scopes.clear();
    builder.create<YieldOp>(loc(decl.getNameRange()), all);
    return success();
  }

  LogicalResult genDistribute(const DistributeDecl &decl, mlir::Block &module) {
    std::optional<DistributeStrategy> strategy =
        symbolizeDistributeStrategy(decl.getStrategy());
    if (!strategy) {
      error(decl.getNameRange()) << "unknown distribution strategy '"
                                 << decl.getStrategy()
                                 << "'; expected none or zero2";
      return failure();
    }
    IntegerAttr smallNumel, shardGroup;
    llvm::StringMap<SMRange> seen;
    for (const GroupDecl::Setting &setting : decl.getSettings()) {
      auto [it, inserted] = seen.try_emplace(setting.name, setting.nameRange);
      if (!inserted)
        return duplicate(setting.name, setting.nameRange, it->second);
      bool known =
          setting.name == "small_numel" || setting.name == "shard_group";
      if (!known || *strategy != DistributeStrategy::zero2) {
        error(setting.nameRange)
            << "'" << decl.getStrategy() << "' has no setting '"
            << setting.name << "'"
            << (*strategy == DistributeStrategy::zero2
                    ? "; zero2 takes small_numel and shard_group"
                    : "");
        return failure();
      }
      FailureOr<int64_t> value = evalInt(*setting.value, setting.name);
      if (failed(value))
        return failure();
      if (setting.name == "small_numel") {
        if (*value < 0) {
          error(setting.value->getRange())
              << "small_numel must not be negative";
          return failure();
        }
        smallNumel = builder.getI64IntegerAttr(*value);
      } else {
        if (*value < 1) {
          error(setting.value->getRange())
              << "shard_group must be at least 1 (ranks a group)";
          return failure();
        }
        shardGroup = builder.getI64IntegerAttr(*value);
      }
    }
    // nanochat's threshold, when the spec does not give one.
    if (*strategy == DistributeStrategy::zero2 && !smallNumel)
      smallNumel = builder.getI64IntegerAttr(1024);
    builder.setInsertionPointToEnd(&module);
    builder.create<DistributeOp>(loc(decl.getNameRange()), *strategy,
                                 smallNumel, shardGroup);
    return success();
  }
};

OwningOpRef<ModuleOp> MLIRGenImpl::gen(const ast::Module &spec) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc(spec.getNameRange()));
  builder.setInsertionPointToEnd(module->getBody());
  auto optimizer =
      builder.create<OptimizerOp>(loc(spec.getNameRange()), spec.getName());
  mlir::Block &body = optimizer.getBody().emplaceBlock();

  const DistributeDecl *distribute = nullptr;
  const OnNonFiniteDecl *onNonFinite = nullptr;
  for (const DeclPtr &decl : spec.getDecls()) {
    if (auto *d = dyn_cast<DistributeDecl>(decl.get())) {
      if (distribute) {
        (void)duplicate("distribute", d->getRange(), distribute->getRange());
        return nullptr;
      }
      distribute = d;
    } else if (auto *n = dyn_cast<OnNonFiniteDecl>(decl.get())) {
      if (onNonFinite) {
        (void)duplicate("on_nonfinite", n->getRange(), onNonFinite->getRange());
        return nullptr;
      }
      onNonFinite = n;
    } else if (failed(claimTopLevelName(*decl))) {
      return nullptr;
    }
    if (auto *g = dyn_cast<GlobalDecl>(decl.get()))
      globalDecls[g->getName()] = g;
    if (auto *f = dyn_cast<FunctionDecl>(decl.get())) {
      if (failed(checkFunction(*f)))
        return nullptr;
      functions[f->getName()] = f;
    } else if (auto *r = dyn_cast<RuleDecl>(decl.get());
               r && failed(checkReturns(r->getBody(), nullptr)))
      return nullptr;
  }
  for (const DeclPtr &decl : spec.getDecls())
    if (auto *c = dyn_cast<ConstDecl>(decl.get()); c && failed(genConst(*c)))
      return nullptr;
  for (const auto &entry : overrides)
    if (!usedOverrides.contains(entry.getKey())) {
      error(entry.second->getNameRange())
          << "'" << entry.getKey() << "' is not a constant of the spec";
      return nullptr;
    }
  // Globals before the rules that read them.
  for (const DeclPtr &decl : spec.getDecls())
    if (auto *g = dyn_cast<GlobalDecl>(decl.get());
        g && failed(genGlobal(*g, body)))
      return nullptr;
  for (const DeclPtr &decl : spec.getDecls())
    if (auto *r = dyn_cast<RuleDecl>(decl.get()); r && failed(genRule(*r, body)))
      return nullptr;
  for (const DeclPtr &decl : spec.getDecls())
    if (auto *g = dyn_cast<GroupDecl>(decl.get());
        g && failed(genGroup(*g, body)))
      return nullptr;
  if (distribute) {
    if (failed(genDistribute(*distribute, body)))
      return nullptr;
  } else {
    builder.setInsertionPointToEnd(&body);
    builder.create<DistributeOp>(loc(spec.getNameRange()),
                                 DistributeStrategy::none, IntegerAttr(),
                                 IntegerAttr());
  }
  if (onNonFinite) {
    std::optional<NonFinitePolicy> policy =
        symbolizeNonFinitePolicy(onNonFinite->getPolicy());
    if (!policy) {
      error(onNonFinite->getNameRange())
          << "unknown non-finite policy '" << onNonFinite->getPolicy()
          << "'; expected propagate or skip";
      return nullptr;
    }
    builder.setInsertionPointToEnd(&body);
    builder.create<OnNonFiniteOp>(loc(onNonFinite->getNameRange()), *policy);
  }
  if (failed(verify(*module)))
    return nullptr;
  // The math as the spec and -D made it, before any stage changes its
  // form: what every rank and every checkpoint must agree on.
  for (OptimizerOp optimizer : module->getOps<OptimizerOp>())
    optimizer->setAttr(kMathAttr, builder.getStringAttr(mathFingerprint(optimizer)));
  return module;
}

} // namespace

OwningOpRef<ModuleOp>
optgen::mlirGen(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                const ast::Module &spec,
                ArrayRef<const ConstDecl *> overrides) {
  context.getOrLoadDialect<OptgenDialect>();
  return MLIRGenImpl(context, sourceMgr, overrides).gen(spec);
}
