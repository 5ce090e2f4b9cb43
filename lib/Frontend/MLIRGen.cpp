//===- MLIRGen.cpp - From a spec's AST to the optgen dialect --------------===//
//
// Three passes over the declarations: constants (in order, so a constant may
// use the ones before it), then rules, then groups and the distribution
// strategy (so a group may name a rule declared after it). Inside a rule,
// names are bound to SSA values; an assignment rebinds the name, and an `if`
// or `for` turns the names its body assigns into region results. This file
// holds the driver, locations, scopes and declarations; the other parts of
// the generator have files of their own (MLIRGenImpl.h lists them).
//
//===----------------------------------------------------------------------===//

#include "optgen/Frontend/MLIRGen.h"
#include "MLIRGenImpl.h"
#include "optgen/Frontend/Parser.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace optgen;
using namespace optgen::ast;

namespace optgen::mlirgen {

bool isDTypeName(StringRef name) {
  return name == "f32" || name == "bf16" || name == "f16";
}

constexpr Builtin kBuiltins[] = {
    {"sqrt", 1, 1},       {"rsqrt", 1, 1},    {"abs", 1, 1},
    {"sign", 1, 1},       {"exp", 1, 1},      {"log", 1, 1},
    {"f32", 1, 1},        {"bf16", 1, 1},     {"f16", 1, 1},
    {"min", 2, 2},        {"max", 2, 2},      {"clamp", 3, 3},
    {"lerp", 3, 3},       {"select", 3, 3},   {"sum", 1, 2},
    {"mean", 1, 2},       {"norm", 1, 2},     {"amax", 1, 2},
    {"transpose", 1, 1},  {"rows", 1, 1},     {"cols", 1, 1},
    {"ndim", 1, 1},       {"numel", 1, 1},    {"size", 2, 2},
    {"zeros_like", 1, 1}, {"zeros", 0, 1},    {"reduced", 2, 2},
    {"floor", 1, 1},      {"floordiv", 2, 2}, {"sum_params", 1, 1},
    {"max_params", 1, 1},
};

llvm::ArrayRef<Builtin> builtins() { return kBuiltins; }

const Builtin *lookupBuiltin(StringRef name) {
  for (const Builtin &b : builtins())
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

Location MLIRGenImpl::fileLoc(SMLoc at) {
  unsigned bufferId = sourceMgr.FindBufferContainingLoc(at);
  if (!bufferId)
    return UnknownLoc::get(&context);
  auto [line, col] = sourceMgr.getLineAndColumn(at, bufferId);
  StringRef file = sourceMgr.getMemoryBuffer(bufferId)->getBufferIdentifier();
  return FileLineColLoc::get(&context, file, line, col);
}

Location MLIRGenImpl::loc(SMLoc at) {
  Location file = fileLoc(at);
  if (frames.empty())
    return file;
  SMRange body = frames.back().function->getRange();
  if (at.getPointer() < body.Start.getPointer() ||
      at.getPointer() >= body.End.getPointer())
    return file;
  return CallSiteLoc::get(file, frames.back().callSite);
}

LogicalResult MLIRGenImpl::duplicate(StringRef name, SMRange at,
                                     SMRange first) {
  return duplicate(name, at, loc(first));
}

LogicalResult MLIRGenImpl::duplicate(StringRef name, SMRange at,
                                     Location first) {
  error(at)
      .append("duplicate definition of '", name, "'")
      .attachNote(first)
      .append("first defined here");
  return failure();
}

Symbol *MLIRGenImpl::findSymbol(StringRef name) {
  for (auto &scope : llvm::reverse(scopes)) {
    auto it = scope.find(name);
    if (it != scope.end())
      return &it->second;
  }
  return nullptr;
}

std::vector<std::string> MLIRGenImpl::visibleNames() {
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

FailureOr<ConstValue> MLIRGenImpl::unknownName(StringRef name, SMRange at) {
  if (globalDecls.count(name)) {
    error(at) << "'" << name
              << "' is a global, known only while a step runs; only "
                 "rules and the functions they call read it";
    return failure();
  }
  if (functions.count(name)) {
    error(at) << "'" << name << "' is a function; call it: " << name << "(...)";
    return failure();
  }
  auto topLevel = topLevelNames.find(name);
  if (topLevel != topLevelNames.end() && !rules.count(name)) {
    error(at)
        .append("'", name, "' is used before its declaration")
        .attachNote(loc(topLevel->second))
        .append("declared here");
    return failure();
  }
  auto later = declaredLater.find(name);
  if (later != declaredLater.end()) {
    error(at)
        .append("'", name, "' is used before its declaration")
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

LogicalResult MLIRGenImpl::declare(StringRef name, Symbol symbol) {
  if (llvm::is_contained({"step", "true", "false"}, name) ||
      isDTypeName(name)) {
    error(symbol.declRange)
        << "'" << name << "' is a builtin name; choose another";
    return failure();
  }
  if (Symbol *previous = findSymbol(name))
    return duplicate(name, symbol.declRange, previous->declRange);
  auto it = consts.find(name);
  if (it != consts.end())
    return duplicate(name, symbol.declRange, it->second.declRange);
  auto global = globalDecls.find(name);
  if (global != globalDecls.end())
    return duplicate(name, symbol.declRange, global->second->getNameRange());
  scopes.back()[name] = symbol;
  return success();
}

LogicalResult MLIRGenImpl::claimTopLevelName(const Decl &decl) {
  auto [it, inserted] =
      topLevelNames.try_emplace(decl.getName(), decl.getNameRange());
  if (!inserted)
    return duplicate(decl.getName(), decl.getNameRange(), it->second);
  return success();
}

LogicalResult MLIRGenImpl::checkReturns(const ast::Block &block,
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

LogicalResult MLIRGenImpl::genConst(const ConstDecl &decl) {
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

FailureOr<Type> MLIRGenImpl::inputType(const RuleDecl &decl) {
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

LogicalResult MLIRGenImpl::genRule(const RuleDecl &decl, mlir::Block &module) {
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

LogicalResult MLIRGenImpl::genGlobal(const GlobalDecl &decl,
                                     mlir::Block &module) {
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
  auto global = builder.create<GlobalOp>(loc(decl.getNameRange()), name,
                                         builder.getStrArrayAttr(inputNames));
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
        << "a global's value is a float, not " << describeType(value.getType());
    return finish(failure());
  }
  value = convertDType(value, builder.getF32Type(), decl.getValue().getLoc());
  nameValue(value, name);
  builder.create<YieldOp>(loc(decl.getValue().getLoc()), value);
  globals[name] = global;
  return finish(success());
}

LogicalResult MLIRGenImpl::genGroup(const GroupDecl &decl,
                                    mlir::Block &module) {
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
      diag << "rule '" << rule.getSymName() << "' has no hyperparameter '"
           << setting.name << "'";
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
    FailureOr<Attribute> attr = hyperAttr(*value, hyper.getType(), setting.name,
                                          setting.value->getRange());
    if (failed(attr))
      return failure();
    settings.push_back(builder.getNamedAttr(setting.name, *attr));
  }
  for (HyperOp hyper : rule.getBlock().getOps<HyperOp>())
    if (!hyper.getDefaultValueAttr() && !seen.count(hyper.getName())) {
      error(decl.getNameRange())
          .append("group '", decl.getName(), "' must set '", hyper.getName(),
                  "': rule '", rule.getSymName(), "' gives it no default");
      return failure();
    }

  builder.setInsertionPointToEnd(&module);
  auto group = builder.create<GroupOp>(
      loc(decl.getNameRange()), decl.getName(), rule.getSymName(),
      builder.getStrArrayAttr(patterns), builder.getDictionaryAttr(settings));
  if (decl.getPredicates().empty())
    return success();

  mlir::Block &body = group.getPredicate().emplaceBlock();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&body);
  Value param =
      body.addArgument(SymbolicTensorType::getUnranked(builder.getF32Type()),
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
    all = all ? builder
                    .create<AndOp>(loc(predicate->getLoc()),
                                   builder.getI1Type(), all, cond)
                    .getResult()
              : cond;
  }
  scopes.clear();
  builder.create<YieldOp>(loc(decl.getNameRange()), all);
  return success();
}

LogicalResult MLIRGenImpl::genDistribute(const DistributeDecl &decl,
                                         mlir::Block &module) {
  std::optional<DistributeStrategy> strategy =
      symbolizeDistributeStrategy(decl.getStrategy());
  if (!strategy) {
    error(decl.getNameRange())
        << "unknown distribution strategy '" << decl.getStrategy()
        << "'; expected none or zero2";
    return failure();
  }
  IntegerAttr smallNumel, shardGroup;
  llvm::StringMap<SMRange> seen;
  for (const GroupDecl::Setting &setting : decl.getSettings()) {
    auto [it, inserted] = seen.try_emplace(setting.name, setting.nameRange);
    if (!inserted)
      return duplicate(setting.name, setting.nameRange, it->second);
    bool known = setting.name == "small_numel" || setting.name == "shard_group";
    if (!known || *strategy != DistributeStrategy::zero2) {
      error(setting.nameRange)
          << "'" << decl.getStrategy() << "' has no setting '" << setting.name
          << "'"
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
        error(setting.value->getRange()) << "small_numel must not be negative";
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
  builder.create<DistributeOp>(loc(decl.getNameRange()), *strategy, smallNumel,
                               shardGroup);
  return success();
}

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
    if (auto *r = dyn_cast<RuleDecl>(decl.get());
        r && failed(genRule(*r, body)))
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
    optimizer->setAttr(kMathAttr,
                       builder.getStringAttr(mathFingerprint(optimizer)));
  return module;
}

} // namespace optgen::mlirgen

OwningOpRef<ModuleOp> optgen::mlirGen(MLIRContext &context,
                                      llvm::SourceMgr &sourceMgr,
                                      const ast::Module &spec,
                                      ArrayRef<const ConstDecl *> overrides) {
  context.getOrLoadDialect<OptgenDialect>();
  return mlirgen::MLIRGenImpl(context, sourceMgr, overrides).gen(spec);
}
