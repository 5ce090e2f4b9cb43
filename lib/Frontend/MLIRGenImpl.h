//===- MLIRGenImpl.h - MLIRGen's class, shared by its files -----*- C++ -*-===//
//
// MLIRGen's one class, shared by the files that define it:
//   MLIRGen.cpp             locations, names, declarations, the driver
//   ConstantEvaluation.cpp  what a spec computes at compile time
//   Types.cpp               the types a spec writes and conversions
//   Expressions.cpp         expressions as ops (op types: TypeRules.cpp)
//   FunctionInlining.cpp    `fn` calls inlined
//   Statements.cpp          statements, `if` and `for` as regions
// Internal to lib/Frontend: the interface is optgen/Frontend/MLIRGen.h.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_LIB_FRONTEND_MLIRGENIMPL_H
#define OPTGEN_LIB_FRONTEND_MLIRGENIMPL_H

#include "optgen/Frontend/AST.h"
#include "optgen/Frontend/Parser.h"

#include "dialect/OptgenDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace optgen::mlirgen {

using namespace mlir;
using namespace optgen::ast;

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

/// Every builtin function with its arity, for calls and for suggestions.
struct Builtin {
  StringRef name;
  unsigned minArgs, maxArgs;
};

/// Every builtin, and the one named `name` (null if none).
llvm::ArrayRef<Builtin> builtins();
const Builtin *lookupBuiltin(StringRef name);

bool isDTypeName(StringRef name);

/// The candidate closest to `name` by edit distance, if close enough to be a
/// plausible typo.
std::string suggest(StringRef name, ArrayRef<std::string> candidates);

/// Names assigned anywhere in `block`, in order of first assignment.
void collectAssigned(const ast::Block &block, llvm::SetVector<StringRef> &out);

/// Calls `visit` on each direct subexpression of `expr`.
void forEachChild(const Expr &expr,
                  const std::function<void(const Expr &)> &visit);

/// Calls `visitExpr` on the expressions of `stmt` and `visitBlock` on its
/// nested blocks.
void forEachChild(const Stmt &stmt,
                  const std::function<void(const Expr &)> &visitExpr,
                  const std::function<void(const ast::Block &)> &visitBlock);

/// The hypers, states and lets declared at the top level of `block`, so
/// that a use before the declaration gets a precise error.
llvm::StringMap<SMRange> declaredIn(const ast::Block &block);

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

  Location fileLoc(SMLoc at);
  /// Where `at` is, and inside the function being inlined, the call it
  /// came from (a CallSiteLoc: errors there print a note at each call).
  Location loc(SMLoc at);
  Location loc(SMRange range) { return loc(range.Start); }
  InFlightDiagnostic error(SMLoc at) { return emitError(loc(at)); }
  InFlightDiagnostic error(SMRange range) { return error(range.Start); }

  /// Reports a duplicate of `name` (first defined at `first`).
  LogicalResult duplicate(StringRef name, SMRange at, SMRange first);
  LogicalResult duplicate(StringRef name, SMRange at, Location first);

  //===--------------------------------------------------------------------===//
  // Compile-time evaluation
  //===--------------------------------------------------------------------===//

  /// Whether `expr` can be evaluated at compile time (made only of literals
  /// and constants), without reporting anything.
  bool isConstExpr(const Expr &expr);

  FailureOr<int64_t> evalInt(const Expr &expr, StringRef what);

  FailureOr<ConstValue> evalConst(const Expr &expr);

  FailureOr<ConstValue> evalBinary(const BinaryExpr &b);

  FailureOr<ConstValue> evalArithmetic(const BinaryExpr &b);

  //===--------------------------------------------------------------------===//
  // Types written in the spec
  //===--------------------------------------------------------------------===//

  FailureOr<Type> resolveDType(const TypeAnnotation &type);

  FailureOr<Type> resolveHyperType(const TypeAnnotation &type);

  /// The hyperparameter type a default value implies: floats unless written
  /// with an `int` annotation.
  FailureOr<Type> hyperTypeOf(const ConstValue &value, SMRange at);

  /// The attribute holding `value` as a hyperparameter of type `type`, or
  /// failure after an error at `at`.
  FailureOr<Attribute> hyperAttr(const ConstValue &value, Type type,
                                 StringRef name, SMRange at);

  //===--------------------------------------------------------------------===//
  // Names
  //===--------------------------------------------------------------------===//

  Symbol *findSymbol(StringRef name);

  std::vector<std::string> visibleNames();

  FailureOr<ConstValue> unknownName(StringRef name, SMRange at);

  /// Declares `name` in the innermost scope; no name may hide another.
  LogicalResult declare(StringRef name, Symbol symbol);

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  Value constant(SMLoc at, const ConstValue &value, SMRange range);

  template <typename OpTy>
  FailureOr<Type> inferType(SMLoc at, ValueRange operands) {
    SmallVector<Type, 1> types;
    if (failed(OpTy::inferReturnTypes(&context, loc(at),
                                      typename OpTy::Adaptor(operands), types)))
      return failure();
    return types.front();
  }

  /// Builds an op whose result type the dialect infers from its operands.
  template <typename OpTy> Value createInferred(SMLoc at, ValueRange operands) {
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

  Value genName(const NameExpr &expr);

  /// A global read by name: in a rule (or a function it calls), its value
  /// this step.
  Value genGlobalValue(const NameExpr &expr);

  /// `sum_params(sum(E))` or `max_params(amax(E))` in a global: E,
  /// elementwise math on each parameter and its gradient, reduced over
  /// every element of every parameter.
  Value genReduceParams(const CallExpr &call);

  Value genBinary(const BinaryExpr &expr);

  /// An int-valued axis argument, known at compile time.
  Value genAxis(const Expr &expr);

  Value requireTensor(Value value, const Expr &expr, StringRef callee);

  /// `value` with its elements (or itself, a scalar) converted to
  /// `elementType`.
  Value convertDType(Value value, Type elementType, SMLoc at);

  Value genCall(const CallExpr &call);

  /// The first hyperparameter or state `function` declares, itself or
  /// through the functions it calls: what makes it callable once per rule,
  /// at its top level. Null when it declares none.
  const ast::Binding *firstDeclaration(const FunctionDecl &function);

  /// Inlines a call of a function: its arguments are evaluated here, its
  /// body is generated in a scope of its own (its arguments, and the
  /// constants), and its `return` value is the call's.
  Value genUserCall(const CallExpr &call, const FunctionDecl &function);

  Value genIndex(const IndexExpr &expr);

  /// Holds one level of `genDepth` for as long as it lives.
  struct DepthScope {
    explicit DepthScope(unsigned &depth) : depth(depth) { ++depth; }
    ~DepthScope() { --depth; }
    unsigned &depth;
  };

  /// Expressions and blocks nest at most kMaxNestingDepth deep in the
  /// source, but inlined calls stack them: this bounds the recursion of
  /// generating them, whatever the functions.
  bool tooDeep(SMLoc at);

  Value genExpr(const Expr &expr);

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  /// Records the spec's name for the op computing `value` (a NameLoc around
  /// its location), so that emitted code can name it as the spec does. A
  /// value that already has a name (`let y = x`) keeps it.
  void nameValue(Value value, StringRef name);

  /// `value` as the type `target` of a variable: the dtype converts (as an
  /// in-place update would); the shape must already agree.
  Value convertForAssignment(Value value, Type target, StringRef name,
                             SMRange at);

  /// Claims `name` for a hyperparameter or state of the current rule: they
  /// share one namespace, with those of the functions the rule calls.
  LogicalResult claimRuleName(StringRef name, SMRange at);

  LogicalResult genHyper(const HyperStmt &stmt);

  LogicalResult genState(const StateStmt &stmt);

  LogicalResult genLet(const LetStmt &stmt);

  LogicalResult genAssign(const AssignStmt &stmt);

  /// The symbols declared outside the statement that `block` assigns.
  SmallVector<std::pair<StringRef, Symbol *>>
  carriedSymbols(ArrayRef<const ast::Block *> blocks);

  /// Generates `block`, the body of an `if` or `for`, in a new scope.
  LogicalResult genScopedBlock(const ast::Block &block);

  LogicalResult genIf(const IfStmt &stmt);

  /// An `if` on a bool known only at run time (`step % k == 0`, a
  /// hyperparameter): both branches are computed, and each variable they
  /// assign takes the taken branch's value, as select(cond, then, else).
  LogicalResult genRuntimeIf(const IfStmt &stmt, Value cond);

  LogicalResult genFor(const ForStmt &stmt);

  LogicalResult genBlock(const ast::Block &block);

  void forgetDeclaredLater(const Stmt &stmt);

  //===--------------------------------------------------------------------===//
  // Declarations
  //===--------------------------------------------------------------------===//

  LogicalResult claimTopLevelName(const Decl &decl);

  /// A function's name is not a builtin's; its body ends with its only
  /// `return`.
  LogicalResult checkFunction(const FunctionDecl &function);

  /// No `return` in `block` but a function's last statement.
  LogicalResult checkReturns(const ast::Block &block,
                             const FunctionDecl *function);

  LogicalResult genConst(const ConstDecl &decl);

  FailureOr<Type> inputType(const RuleDecl &decl);

  LogicalResult genRule(const RuleDecl &decl, mlir::Block &module);

  LogicalResult genGlobal(const GlobalDecl &decl, mlir::Block &module);

  LogicalResult genGroup(const GroupDecl &decl, mlir::Block &module);

  LogicalResult genDistribute(const DistributeDecl &decl, mlir::Block &module);
};

} // namespace optgen::mlirgen

#endif // OPTGEN_LIB_FRONTEND_MLIRGENIMPL_H
