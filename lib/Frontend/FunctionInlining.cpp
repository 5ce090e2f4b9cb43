//===- FunctionInlining.cpp - A spec's `fn` calls, inlined ----------------===//
//
// MLIRGen has no call op: a call generates the function's body in a scope
// of its own, at the call, with the locations of its ops CallSiteLocs so
// that an error inside names the call too. A function that declares
// hyperparameters or states is called once per rule, at its top level.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenImpl.h"

namespace optgen::mlirgen {

const ast::Binding *
MLIRGenImpl::firstDeclaration(const FunctionDecl &function) {
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

Value MLIRGenImpl::genUserCall(const CallExpr &call,
                               const FunctionDecl &function) {
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
                arity == 1 ? " argument" : " arguments", ", but ", args.size(),
                args.size() == 1 ? " was" : " were", " given")
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
    if (failed(declare(param.name, {Symbol::Kind::Arg, value, param.range}))) {
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

LogicalResult MLIRGenImpl::checkFunction(const FunctionDecl &function) {
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

} // namespace optgen::mlirgen
