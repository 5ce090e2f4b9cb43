//===- Statements.cpp - A rule's statements -------------------------------===//
//
// Each statement rebinds names to SSA values; an `if` or `for` turns the
// names its body assigns into region results.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenImpl.h"

namespace optgen::mlirgen {

void MLIRGenImpl::nameValue(Value value, StringRef name) {
  Operation *def = value.getDefiningOp();
  if (!def || isa<NameLoc>(def->getLoc()) || isa<HyperOp, StateOp>(def))
    return;
  def->setLoc(NameLoc::get(builder.getStringAttr(name), def->getLoc()));
}

Value MLIRGenImpl::convertForAssignment(Value value, Type target,
                                        StringRef name, SMRange at) {
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

LogicalResult MLIRGenImpl::claimRuleName(StringRef name, SMRange at) {
  auto it = ruleNames.find(name);
  if (it != ruleNames.end() && !findSymbol(name))
    return duplicate(name, at, it->second);
  ruleNames.try_emplace(name, loc(at));
  return success();
}

LogicalResult MLIRGenImpl::genHyper(const HyperStmt &stmt) {
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
    if (failed(
            declare(item.name, {Symbol::Kind::Hyper, hyper, item.nameRange})))
      return failure();
  }
  return success();
}

LogicalResult MLIRGenImpl::genState(const StateStmt &stmt) {
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
        FailureOr<Type> reduced = inferReduceType(
            loc(init->getLoc()), "reduced", shape, true, constAxis);
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
    auto state = builder.create<StateOp>(loc(item.nameRange), type, item.name,
                                         like, axis);
    if (failed(
            declare(item.name, {Symbol::Kind::State, state, item.nameRange})))
      return failure();
    stateNames.push_back(item.name);
    stateFinal.push_back(Value());
  }
  return success();
}

LogicalResult MLIRGenImpl::genLet(const LetStmt &stmt) {
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
  return declare(binding.name, {Symbol::Kind::Let, value, binding.nameRange});
}

LogicalResult MLIRGenImpl::genAssign(const AssignStmt &stmt) {
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

SmallVector<std::pair<StringRef, Symbol *>>
MLIRGenImpl::carriedSymbols(ArrayRef<const ast::Block *> blocks) {
  llvm::SetVector<StringRef> names;
  for (const ast::Block *block : blocks)
    collectAssigned(*block, names);
  SmallVector<std::pair<StringRef, Symbol *>> carried;
  for (StringRef name : names)
    if (Symbol *symbol = findSymbol(name))
      carried.push_back({name, symbol});
  return carried;
}

LogicalResult MLIRGenImpl::genScopedBlock(const ast::Block &block) {
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

LogicalResult MLIRGenImpl::genIf(const IfStmt &stmt) {
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

LogicalResult MLIRGenImpl::genRuntimeIf(const IfStmt &stmt, Value cond) {
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

LogicalResult MLIRGenImpl::genFor(const ForStmt &stmt) {
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
    error(tableExpr->getRange())
        << "'for' iterates over a constant list, not " << table->describe();
    return failure();
  }
  int64_t numRows = table->elements.size();
  if (lo < 0 || lo > numRows) {
    error(stmt.getIterable().getRange())
        << "slice start " << lo << " is out of range for a table of " << numRows
        << " rows";
    return failure();
  }
  table->elements.erase(table->elements.begin(), table->elements.begin() + lo);
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
      error(tableExpr->getRange())
          << "every row of the table must have " << rowLength << " values";
      return failure();
    }
    rowLength = cells.size();
    for (const ConstValue *cell : cells) {
      if (cell->kind != ConstValue::Kind::Number) {
        error(tableExpr->getRange())
            << "a table holds numbers, not " << cell->describe();
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

  auto tableType =
      RankedTensorType::get({numRows, rowLength}, builder.getF64Type());
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
    symbol->value =
        body.addArgument(symbol->value.getType(), loc(stmt.getLoc()));
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

LogicalResult MLIRGenImpl::genBlock(const ast::Block &block) {
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

void MLIRGenImpl::forgetDeclaredLater(const Stmt &stmt) {
  if (auto *hyper = dyn_cast<HyperStmt>(&stmt))
    for (const ast::Binding &item : hyper->getItems())
      declaredLater.erase(item.name);
  else if (auto *state = dyn_cast<StateStmt>(&stmt))
    for (const ast::Binding &item : state->getItems())
      declaredLater.erase(item.name);
  else if (auto *let = dyn_cast<LetStmt>(&stmt))
    declaredLater.erase(let->getBinding().name);
}

} // namespace optgen::mlirgen
