//===- AST.h - Abstract syntax tree of an optgen spec -----------*- C++ -*-===//
//
// The parser builds this tree; MLIRGen walks it. The tree is purely syntactic:
// names are not resolved and nothing is type-checked here. Every node carries
// the source range it was parsed from so that later stages can point at it.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_FRONTEND_AST_H
#define OPTGEN_FRONTEND_AST_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Casting.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace optgen {
namespace ast {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class Expr {
public:
  enum class Kind {
    Number,  // 3, 1e-8, 0.95
    String,  // "lm_head.*"
    Name,    // lr, p, polar_express, bf16
    Call,    // sqrt(x), lerp(a, b, w), bf16(x)
    Unary,   // -x, !c
    Binary,  // a + b, a @ b, a >= b, a && b
    Ternary, // c ? a : b
    Tuple,   // (a, b, c)
    List,    // [a, b, c]
    Index,   // t[0]
    Slice,   // t[lo : hi], either bound optional
    Transpose, // x^T
  };

  Expr(Kind kind, llvm::SMRange range) : kind(kind), range(range) {}
  virtual ~Expr() = default;

  Kind getKind() const { return kind; }
  llvm::SMRange getRange() const { return range; }
  llvm::SMLoc getLoc() const { return range.Start; }

private:
  const Kind kind;
  llvm::SMRange range;
};

using ExprPtr = std::unique_ptr<Expr>;

class NumberExpr : public Expr {
public:
  NumberExpr(llvm::SMRange range, double value, bool isInteger)
      : Expr(Kind::Number, range), value(value), isInteger(isInteger) {}
  /// The value; integers are exact up to 2^53.
  double getValue() const { return value; }
  /// True when written without '.', exponent: `5`, not `5.0` or `5e0`.
  bool getIsInteger() const { return isInteger; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Number; }

private:
  double value;
  bool isInteger;
};

class StringExpr : public Expr {
public:
  StringExpr(llvm::SMRange range, std::string value)
      : Expr(Kind::String, range), value(std::move(value)) {}
  /// The decoded contents (escapes resolved, quotes removed).
  llvm::StringRef getValue() const { return value; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::String; }

private:
  std::string value;
};

class NameExpr : public Expr {
public:
  NameExpr(llvm::SMRange range, std::string name)
      : Expr(Kind::Name, range), name(std::move(name)) {}
  llvm::StringRef getName() const { return name; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Name; }

private:
  std::string name;
};

class CallExpr : public Expr {
public:
  CallExpr(llvm::SMRange range, std::string callee, llvm::SMRange calleeRange,
           std::vector<ExprPtr> args)
      : Expr(Kind::Call, range), callee(std::move(callee)),
        calleeRange(calleeRange), args(std::move(args)) {}
  llvm::StringRef getCallee() const { return callee; }
  llvm::SMRange getCalleeRange() const { return calleeRange; }
  const std::vector<ExprPtr> &getArgs() const { return args; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Call; }

private:
  std::string callee;
  llvm::SMRange calleeRange;
  std::vector<ExprPtr> args;
};

enum class UnaryOp { Neg, Not };
enum class BinaryOp {
  Add, Sub, Mul, Div, Mod, Pow, MatMul,
  Lt, Le, Gt, Ge, Eq, Ne,
  And, Or,
};

/// Spelling of an operator as written in a spec ("+", "@", ">=", ...).
llvm::StringRef spelling(UnaryOp op);
llvm::StringRef spelling(BinaryOp op);

class UnaryExpr : public Expr {
public:
  UnaryExpr(llvm::SMRange range, UnaryOp op, ExprPtr operand)
      : Expr(Kind::Unary, range), op(op), operand(std::move(operand)) {}
  UnaryOp getOp() const { return op; }
  const Expr &getOperand() const { return *operand; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Unary; }

private:
  UnaryOp op;
  ExprPtr operand;
};

class BinaryExpr : public Expr {
public:
  BinaryExpr(llvm::SMRange range, BinaryOp op, llvm::SMLoc opLoc, ExprPtr lhs,
             ExprPtr rhs)
      : Expr(Kind::Binary, range), op(op), opLoc(opLoc), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  BinaryOp getOp() const { return op; }
  /// Location of the operator token; diagnostics about the operation point here.
  llvm::SMLoc getOpLoc() const { return opLoc; }
  const Expr &getLhs() const { return *lhs; }
  const Expr &getRhs() const { return *rhs; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Binary; }

private:
  BinaryOp op;
  llvm::SMLoc opLoc;
  ExprPtr lhs, rhs;
};

class TernaryExpr : public Expr {
public:
  TernaryExpr(llvm::SMRange range, ExprPtr cond, ExprPtr thenExpr,
              ExprPtr elseExpr)
      : Expr(Kind::Ternary, range), cond(std::move(cond)),
        thenExpr(std::move(thenExpr)), elseExpr(std::move(elseExpr)) {}
  const Expr &getCond() const { return *cond; }
  const Expr &getThen() const { return *thenExpr; }
  const Expr &getElse() const { return *elseExpr; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Ternary; }

private:
  ExprPtr cond, thenExpr, elseExpr;
};

/// `(a, b)` (Tuple) and `[a, b]` (List) share a representation.
class SequenceExpr : public Expr {
public:
  SequenceExpr(Kind kind, llvm::SMRange range, std::vector<ExprPtr> elements)
      : Expr(kind, range), elements(std::move(elements)) {}
  const std::vector<ExprPtr> &getElements() const { return elements; }
  static bool classof(const Expr *e) {
    return e->getKind() == Kind::Tuple || e->getKind() == Kind::List;
  }

private:
  std::vector<ExprPtr> elements;
};

class IndexExpr : public Expr {
public:
  IndexExpr(llvm::SMRange range, ExprPtr base, ExprPtr index)
      : Expr(Kind::Index, range), base(std::move(base)),
        index(std::move(index)) {}
  const Expr &getBase() const { return *base; }
  const Expr &getIndex() const { return *index; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Index; }

private:
  ExprPtr base, index;
};

class SliceExpr : public Expr {
public:
  SliceExpr(llvm::SMRange range, ExprPtr base, ExprPtr lo, ExprPtr hi)
      : Expr(Kind::Slice, range), base(std::move(base)), lo(std::move(lo)),
        hi(std::move(hi)) {}
  const Expr &getBase() const { return *base; }
  /// Null when omitted (`t[:3]`).
  const Expr *getLo() const { return lo.get(); }
  /// Null when omitted (`t[1:]`).
  const Expr *getHi() const { return hi.get(); }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Slice; }

private:
  ExprPtr base, lo, hi;
};

class TransposeExpr : public Expr {
public:
  TransposeExpr(llvm::SMRange range, ExprPtr operand)
      : Expr(Kind::Transpose, range), operand(std::move(operand)) {}
  const Expr &getOperand() const { return *operand; }
  static bool classof(const Expr *e) { return e->getKind() == Kind::Transpose; }

private:
  ExprPtr operand;
};

//===----------------------------------------------------------------------===//
// Type annotations
//===----------------------------------------------------------------------===//

/// A written type: a name (`f32`, `bf16`, `float`, `int`, `matrix`, or a
/// constant naming a dtype) or a tuple of types (`(float, float)`).
struct TypeAnnotation {
  llvm::SMRange range;
  std::string name;                      // empty for a tuple
  std::vector<TypeAnnotation> elements;  // tuple elements
  bool isTuple() const { return name.empty(); }
};

//===----------------------------------------------------------------------===//
// Statements (inside a rule body)
//===----------------------------------------------------------------------===//

class Stmt {
public:
  enum class Kind { Hyper, State, Let, Assign, If, For, Return };
  Stmt(Kind kind, llvm::SMRange range) : kind(kind), range(range) {}
  virtual ~Stmt() = default;
  Kind getKind() const { return kind; }
  llvm::SMRange getRange() const { return range; }
  llvm::SMLoc getLoc() const { return range.Start; }

private:
  const Kind kind;
  llvm::SMRange range;
};

using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

/// One `name (: type)? (= expr)?` item of `hyper` or `state`, or the single
/// item of `let`.
struct Binding {
  llvm::SMRange nameRange;
  std::string name;
  std::optional<TypeAnnotation> type;
  ExprPtr init; // may be null for hypers without a default
};

/// `hyper lr, beta1 = 0.9, ns_steps: int = 5`
class HyperStmt : public Stmt {
public:
  HyperStmt(llvm::SMRange range, std::vector<Binding> items)
      : Stmt(Kind::Hyper, range), items(std::move(items)) {}
  const std::vector<Binding> &getItems() const { return items; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Hyper; }

private:
  std::vector<Binding> items;
};

/// `state m = zeros_like(p), v: bf16 = zeros_like(p)`
class StateStmt : public Stmt {
public:
  StateStmt(llvm::SMRange range, std::vector<Binding> items)
      : Stmt(Kind::State, range), items(std::move(items)) {}
  const std::vector<Binding> &getItems() const { return items; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::State; }

private:
  std::vector<Binding> items;
};

/// `let x: bf16 = lerp(g, buf, momentum)`
class LetStmt : public Stmt {
public:
  LetStmt(llvm::SMRange range, Binding binding)
      : Stmt(Kind::Let, range), binding(std::move(binding)) {}
  const Binding &getBinding() const { return binding; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Let; }

private:
  Binding binding;
};

/// `m = lerp(m, g, 1 - beta1)`
class AssignStmt : public Stmt {
public:
  AssignStmt(llvm::SMRange range, std::string target, llvm::SMRange targetRange,
             ExprPtr value)
      : Stmt(Kind::Assign, range), target(std::move(target)),
        targetRange(targetRange), value(std::move(value)) {}
  llvm::StringRef getTarget() const { return target; }
  llvm::SMRange getTargetRange() const { return targetRange; }
  const Expr &getValue() const { return *value; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Assign; }

private:
  std::string target;
  llvm::SMRange targetRange;
  ExprPtr value;
};

/// `if cond { ... } else { ... }`; `else if` nests an IfStmt as the only
/// statement of the else block.
class IfStmt : public Stmt {
public:
  IfStmt(llvm::SMRange range, ExprPtr cond, Block thenBlock, Block elseBlock)
      : Stmt(Kind::If, range), cond(std::move(cond)),
        thenBlock(std::move(thenBlock)), elseBlock(std::move(elseBlock)) {}
  const Expr &getCond() const { return *cond; }
  const Block &getThen() const { return thenBlock; }
  const Block &getElse() const { return elseBlock; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::If; }

private:
  ExprPtr cond;
  Block thenBlock, elseBlock;
};

/// `for (a, b, c) in table[0 : ns_steps] { ... }` or `for w in weights { ... }`
class ForStmt : public Stmt {
public:
  struct Var {
    llvm::SMRange range;
    std::string name;
  };
  ForStmt(llvm::SMRange range, std::vector<Var> vars, bool destructures,
          ExprPtr iterable, Block body)
      : Stmt(Kind::For, range), vars(std::move(vars)),
        destructures(destructures), iterable(std::move(iterable)),
        body(std::move(body)) {}
  const std::vector<Var> &getVars() const { return vars; }
  /// True for the parenthesised form `(a, b)`, even with one name.
  bool getDestructures() const { return destructures; }
  const Expr &getIterable() const { return *iterable; }
  const Block &getBody() const { return body; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::For; }

private:
  std::vector<Var> vars;
  bool destructures;
  ExprPtr iterable;
  Block body;
};

/// `return m / (sqrt(v) + eps)`: the value of a function, its last statement.
class ReturnStmt : public Stmt {
public:
  ReturnStmt(llvm::SMRange range, ExprPtr value)
      : Stmt(Kind::Return, range), value(std::move(value)) {}
  const Expr &getValue() const { return *value; }
  static bool classof(const Stmt *s) { return s->getKind() == Kind::Return; }

private:
  ExprPtr value;
};

//===----------------------------------------------------------------------===//
// Top-level declarations
//===----------------------------------------------------------------------===//

class Decl {
public:
  enum class Kind {
    Const,
    Rule,
    Function,
    Global,
    Group,
    Distribute,
    OnNonFinite
  };
  Decl(Kind kind, llvm::SMRange range, std::string name,
       llvm::SMRange nameRange)
      : kind(kind), range(range), name(std::move(name)), nameRange(nameRange) {}
  virtual ~Decl() = default;
  Kind getKind() const { return kind; }
  llvm::SMRange getRange() const { return range; }
  llvm::SMLoc getLoc() const { return range.Start; }
  llvm::StringRef getName() const { return name; }
  llvm::SMRange getNameRange() const { return nameRange; }

private:
  const Kind kind;
  llvm::SMRange range;
  std::string name;
  llvm::SMRange nameRange;
};

using DeclPtr = std::unique_ptr<Decl>;

/// `const polar_express = [(8.15, -22.4, 15.8), ...]`
class ConstDecl : public Decl {
public:
  ConstDecl(llvm::SMRange range, std::string name, llvm::SMRange nameRange,
            ExprPtr value)
      : Decl(Kind::Const, range, std::move(name), nameRange),
        value(std::move(value)) {}
  const Expr &getValue() const { return *value; }
  static bool classof(const Decl *d) { return d->getKind() == Kind::Const; }

private:
  ExprPtr value;
};

/// `rule muon(p: matrix, g: matrix) { ... }`
class RuleDecl : public Decl {
public:
  struct Input {
    llvm::SMRange range;
    std::string name;
    std::optional<TypeAnnotation> type; // `matrix`, `vector`, `tensor`
  };
  RuleDecl(llvm::SMRange range, std::string name, llvm::SMRange nameRange,
           std::vector<Input> inputs, Block body)
      : Decl(Kind::Rule, range, std::move(name), nameRange),
        inputs(std::move(inputs)), body(std::move(body)) {}
  const std::vector<Input> &getInputs() const { return inputs; }
  const Block &getBody() const { return body; }
  static bool classof(const Decl *d) { return d->getKind() == Kind::Rule; }

private:
  std::vector<Input> inputs;
  Block body;
};

/// `fn adam(u) { hyper betas = (0.9, 0.999); ...; return m / (sqrt(v) + eps) }`
class FunctionDecl : public Decl {
public:
  struct Param {
    llvm::SMRange range;
    std::string name;
  };
  FunctionDecl(llvm::SMRange range, std::string name, llvm::SMRange nameRange,
               std::vector<Param> params, Block body)
      : Decl(Kind::Function, range, std::move(name), nameRange),
        params(std::move(params)), body(std::move(body)) {}
  const std::vector<Param> &getParams() const { return params; }
  const Block &getBody() const { return body; }
  static bool classof(const Decl *d) { return d->getKind() == Kind::Function; }

private:
  std::vector<Param> params;
  Block body;
};

/// `global grad_norm(p, g) = sqrt(sum_params(sum(g * g)))`: a value of the
/// whole step, reduced across every parameter, that rules read by name.
class GlobalDecl : public Decl {
public:
  struct Input {
    llvm::SMRange range;
    std::string name;
  };
  GlobalDecl(llvm::SMRange range, std::string name, llvm::SMRange nameRange,
             std::vector<Input> inputs, ExprPtr value)
      : Decl(Kind::Global, range, std::move(name), nameRange),
        inputs(std::move(inputs)), value(std::move(value)) {}
  /// The names of each parameter and its gradient, as a rule names them.
  const std::vector<Input> &getInputs() const { return inputs; }
  const Expr &getValue() const { return *value; }
  static bool classof(const Decl *d) { return d->getKind() == Kind::Global; }

private:
  std::vector<Input> inputs;
  ExprPtr value;
};

/// `group lm_head = adamw { match "lm_head.*"; where ndim(param) == 2; lr = 0.004 }`
class GroupDecl : public Decl {
public:
  struct Setting {
    llvm::SMRange nameRange;
    std::string name;
    ExprPtr value;
  };
  GroupDecl(llvm::SMRange range, std::string name, llvm::SMRange nameRange,
            std::string rule, llvm::SMRange ruleRange,
            std::vector<std::unique_ptr<StringExpr>> patterns,
            std::vector<ExprPtr> predicates, std::vector<Setting> settings)
      : Decl(Kind::Group, range, std::move(name), nameRange),
        rule(std::move(rule)), ruleRange(ruleRange),
        patterns(std::move(patterns)), predicates(std::move(predicates)),
        settings(std::move(settings)) {}
  llvm::StringRef getRule() const { return rule; }
  llvm::SMRange getRuleRange() const { return ruleRange; }
  /// Glob patterns from every `match` item, in order.
  const std::vector<std::unique_ptr<StringExpr>> &getPatterns() const {
    return patterns;
  }
  /// Every `where` item; a parameter must satisfy all of them.
  const std::vector<ExprPtr> &getPredicates() const { return predicates; }
  const std::vector<Setting> &getSettings() const { return settings; }
  static bool classof(const Decl *d) { return d->getKind() == Kind::Group; }

private:
  std::string rule;
  llvm::SMRange ruleRange;
  std::vector<std::unique_ptr<StringExpr>> patterns;
  std::vector<ExprPtr> predicates;
  std::vector<Setting> settings;
};

/// `distribute zero2 { small_numel = 1024 }` / `distribute none`
class DistributeDecl : public Decl {
public:
  DistributeDecl(llvm::SMRange range, std::string strategy,
                 llvm::SMRange strategyRange,
                 std::vector<GroupDecl::Setting> settings)
      : Decl(Kind::Distribute, range, std::move(strategy), strategyRange),
        settings(std::move(settings)) {}
  /// The strategy is the declaration's name: "none" or "zero2".
  llvm::StringRef getStrategy() const { return getName(); }
  const std::vector<GroupDecl::Setting> &getSettings() const {
    return settings;
  }
  static bool classof(const Decl *d) {
    return d->getKind() == Kind::Distribute;
  }

private:
  std::vector<GroupDecl::Setting> settings;
};

/// `on_nonfinite skip` / `on_nonfinite propagate`: what a step does when a
/// gradient holds NaN or Inf.
class OnNonFiniteDecl : public Decl {
public:
  OnNonFiniteDecl(llvm::SMRange range, std::string policy,
                  llvm::SMRange policyRange)
      : Decl(Kind::OnNonFinite, range, std::move(policy), policyRange) {}
  /// The policy is the declaration's name: "propagate" or "skip".
  llvm::StringRef getPolicy() const { return getName(); }
  static bool classof(const Decl *d) {
    return d->getKind() == Kind::OnNonFinite;
  }
};

/// A whole spec file: `optimizer NAME` followed by declarations.
class Module {
public:
  Module(std::string name, llvm::SMRange nameRange, std::vector<DeclPtr> decls)
      : name(std::move(name)), nameRange(nameRange), decls(std::move(decls)) {}
  llvm::StringRef getName() const { return name; }
  llvm::SMRange getNameRange() const { return nameRange; }
  const std::vector<DeclPtr> &getDecls() const { return decls; }

private:
  std::string name;
  llvm::SMRange nameRange;
  std::vector<DeclPtr> decls;
};

/// Prints the tree in an indented, S-expression-like form (`--emit=ast`).
/// Locations are printed as line:col resolved through `lineCol`.
void dump(const Module &module, llvm::raw_ostream &os,
          const std::function<std::pair<unsigned, unsigned>(llvm::SMLoc)>
              &lineCol);

} // namespace ast
} // namespace optgen

#endif // OPTGEN_FRONTEND_AST_H
