//===- Expressions.cpp - A spec's expressions as ops ----------------------===//
//
// Names, operators, builtin calls and indexing, each op built with the
// type the dialect infers, errors at the expression's range.
//
//===----------------------------------------------------------------------===//

#include "MLIRGenImpl.h"

namespace optgen::mlirgen {

Value MLIRGenImpl::constant(SMLoc at, const ConstValue &value, SMRange range) {
  switch (value.kind) {
  case ConstValue::Kind::Number:
    if (value.isInteger)
      return builder.create<ConstantOp>(
          loc(at),
          builder.getI64IntegerAttr(static_cast<int64_t>(value.number)));
    return builder.create<ConstantOp>(loc(at),
                                      builder.getF64FloatAttr(value.number));
  case ConstValue::Kind::Bool:
    return builder.create<ConstantOp>(loc(at),
                                      builder.getBoolAttr(value.boolean));
  case ConstValue::Kind::DType:
    error(range) << "'" << value.text << "' is a dtype; convert a value with "
                 << value.text << "(x) or annotate a let: let x: " << value.text
                 << " = ...";
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

Value MLIRGenImpl::genName(const NameExpr &expr) {
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

Value MLIRGenImpl::genGlobalValue(const NameExpr &expr) {
  StringRef name = expr.getName();
  if (currentGlobal) {
    error(expr.getRange())
        << "global '" << currentGlobal->getName() << "' cannot read global '"
        << name
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

Value MLIRGenImpl::genReduceParams(const CallExpr &call) {
  StringRef callee = call.getCallee();
  bool isSum = callee == "sum_params";
  StringRef inner = isSum ? "sum" : "amax";
  std::string sample =
      (callee + "(" + inner + (isSum ? "(g * g))" : "(abs(g)))")).str();
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

Value MLIRGenImpl::genBinary(const BinaryExpr &expr) {
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

Value MLIRGenImpl::genAxis(const Expr &expr) {
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

Value MLIRGenImpl::genCall(const CallExpr &call) {
  StringRef callee = call.getCallee();
  const auto &args = call.getArgs();
  SMLoc at = call.getLoc();

  // A constant naming a dtype converts like the dtype itself.
  auto constIt = consts.find(callee);
  if (constIt != consts.end() &&
      constIt->second.value.kind == ConstValue::Kind::DType &&
      !findSymbol(callee)) {
    if (args.size() != 1) {
      error(call.getCalleeRange())
          << "'" << callee << "' takes 1 argument, but " << args.size()
          << " were given";
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
    for (const Builtin &b : builtins())
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
         << args.size() << (args.size() == 1 ? " was" : " were") << " given";
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
      llvm::is_contained({"sum", "mean", "norm", "amax", "rows", "cols", "size",
                          "ndim", "numel"},
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
        inferReduceType(loc(args.size() == 2 ? args[1]->getLoc() : at), callee,
                        input.getType(), static_cast<bool>(axis), constAxis);
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
      error(args[0]->getRange())
          << "'" << callee << "' needs a matrix, but got "
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
      .Case("floordiv", [&] { return createInferred<FloorDivOp>(at, values); })
      .Case("exp", [&] { return createInferred<ExpOp>(at, values); })
      .Case("log", [&] { return createInferred<LogOp>(at, values); })
      .Case("min", [&] { return createInferred<MinOp>(at, values); })
      .Case("max", [&] { return createInferred<MaxOp>(at, values); })
      .Case("clamp", [&] { return createInferred<ClampOp>(at, values); })
      .Case("lerp", [&] { return createInferred<LerpOp>(at, values); })
      .Default([] { return Value(); })();
}

Value MLIRGenImpl::genIndex(const IndexExpr &expr) {
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
  return builder.create<TupleGetOp>(loc(expr.getLoc()), tuple.getType(position),
                                    base, position);
}

bool MLIRGenImpl::tooDeep(SMLoc at) {
  if (genDepth <= kMaxGenDepth)
    return false;
  if (!reportedTooDeep)
    error(at) << "expressions and blocks nested too deeply, counting "
                 "those of the functions called (the limit is "
              << kMaxGenDepth << ")";
  reportedTooDeep = true;
  return true;
}

Value MLIRGenImpl::genExpr(const Expr &expr) {
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

} // namespace optgen::mlirgen
