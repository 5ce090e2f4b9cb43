//===- OptgenOps.cpp - Operations of the optgen dialect -------------------===//

#include "dialect/OptgenDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/xxhash.h"

#include <map>

using namespace mlir;
using namespace optgen;

#define GET_OP_CLASSES
#include "dialect/OptgenOps.cpp.inc"

/// The value of `axis` when it is a constant.
static std::optional<int64_t> getConstantAxis(Value axis) {
  APInt value;
  if (axis && matchPattern(axis, m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

LogicalResult OptimizerOp::verify() {
  Operation *firstDistribute = nullptr, *firstPolicy = nullptr;
  for (Operation &op : getBlock()) {
    if (!isa<RuleOp, GlobalOp, GroupOp, DistributeOp, OnNonFiniteOp, ParamOp,
             BucketOp, ScheduleOp>(op))
      return op.emitOpError("cannot appear in an optimizer; only rules, "
                            "globals, groups, parameters, buckets, schedules, "
                            "one distribute and one on_nonfinite do");
    bool distribute = isa<DistributeOp>(op);
    if (!distribute && !isa<OnNonFiniteOp>(op))
      continue;
    Operation *&first = distribute ? firstDistribute : firstPolicy;
    if (first)
      return op.emitOpError(distribute
                                ? "repeats the optimizer's distribution strategy"
                                : "repeats the optimizer's non-finite policy")
                 .attachNote(first->getLoc())
             << "first given here";
    first = &op;
  }
  return success();
}

LogicalResult RuleOp::verifyRegions() {
  Block &block = getBlock();
  if (block.getNumArguments() != 2 || getInputs().size() != 2)
    return emitOpError("takes exactly two inputs: the parameter and its "
                       "gradient");
  Type paramType = block.getArgument(0).getType();
  if (!isa<SymbolicTensorType>(paramType) ||
      block.getArgument(1).getType() != paramType)
    return emitOpError("parameter and gradient must be tensors of one type");
  llvm::StringMap<Operation *> names;
  for (Operation &op : block) {
    StringRef name;
    if (auto hyper = dyn_cast<HyperOp>(op))
      name = hyper.getName();
    else if (auto state = dyn_cast<StateOp>(op))
      name = state.getName();
    else
      continue;
    auto [it, inserted] = names.try_emplace(name, &op);
    if (!inserted)
      return op.emitOpError("redeclares '")
                 .append(name, "'")
                 .attachNote(it->second->getLoc())
             << "first declared here";
  }
  if (!isa<UpdateOp>(block.back()))
    return emitOpError("must end with 'optgen.update'");
  return verifyHyperOffsets();
}

LogicalResult RuleOp::verifyHyperOffsets() {
  auto hypers = llvm::to_vector(getBlock().getOps<HyperOp>());
  auto hasOffset = [](HyperOp hyper) { return bool(hyper.getOffsetAttr()); };
  if (llvm::none_of(hypers, hasOffset))
    return success();
  // Two values must never share a double of the group's array.
  std::map<int64_t, HyperOp> starts;
  for (HyperOp hyper : hypers) {
    if (!hasOffset(hyper))
      return hyper.emitOpError("has no offset while others of its rule do");
    auto [it, inserted] =
        starts.emplace(static_cast<int64_t>(*hyper.getOffset()), hyper);
    if (!inserted)
      return hyper.emitOpError("has the offset of '")
                 .append(it->second.getName(), "'")
                 .attachNote(it->second.getLoc())
             << "declared here";
  }
  HyperOp previous;
  for (auto [start, hyper] : starts) {
    if (previous &&
        static_cast<int64_t>(*previous.getOffset()) + previous.getWidth() >
            start)
      return hyper.emitOpError("at offset ")
                 .append(start, " overlaps '", previous.getName(), "'")
                 .attachNote(previous.getLoc())
             << "declared here";
    previous = hyper;
  }
  return success();
}

HyperOp RuleOp::lookupHyper(StringRef name) {
  for (auto hyper : getBlock().getOps<HyperOp>())
    if (hyper.getName() == name)
      return hyper;
  return {};
}

SmallVector<StateOp> optgen::getRuleStates(RuleOp rule) {
  return llvm::to_vector(rule.getBlock().getOps<StateOp>());
}

bool optgen::isElementwiseRule(RuleOp rule) {
  // A copy specialised to one shape is elementwise when its rule is.
  if (auto origin = rule->getAttrOfType<FlatSymbolRefAttr>(kSpecializesAttr))
    if (auto generic =
            SymbolTable::lookupNearestSymbolFrom<RuleOp>(rule, origin))
      return isElementwiseRule(generic);
  if (cast<SymbolicTensorType>(rule.getParam().getType()).isRanked())
    return false;
  return !rule
              .walk([](Operation *op) {
                return isa<ReduceOp, DimOp, NDimOp, NumelOp, MatmulOp, GemmOp,
                           TransposeOp>(op)
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              })
              .wasInterrupted();
}

void RuleOp::getAsmBlockArgumentNames(Region &region,
                                      OpAsmSetValueNameFn setNameFn) {
  for (auto [arg, name] : llvm::zip(region.getArguments(), getInputs()))
    setNameFn(arg, cast<StringAttr>(name).getValue());
}

int64_t HyperOp::getWidth() {
  auto tuple = dyn_cast<TupleType>(getType());
  return tuple ? static_cast<int64_t>(tuple.size()) : 1;
}

LogicalResult HyperOp::verify() {
  if (auto value = getDefaultValueAttr())
    return verifyHyperValue([&] { return emitOpError(); }, getName(),
                            getType(), value);
  return success();
}

void HyperOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult StateOp::verify() {
  Type type = getType();
  if (!isa<FloatType>(getElementTypeOrSelf(type)))
    return emitOpError("state holds floats, not ") << describeType(type);
  if (!getLike()) {
    if (getAxis())
      return emitOpError("a reduced state needs the tensor it is shaped like");
    if (isa<SymbolicTensorType>(type))
      return emitOpError("a tensor state needs the tensor it is shaped like");
    return success();
  }
  if (!isa<SymbolicTensorType>(type))
    return emitOpError("a state shaped like a tensor is a tensor");
  Type shape = getLike().getType();
  if (getAxis()) {
    FailureOr<Type> reduced =
        inferReduceType(getLoc(), "state", shape, true,
                        getConstantAxis(getAxis()));
    if (failed(reduced))
      return failure();
    shape = *reduced;
  }
  if (!areShapesCompatible(shape, type))
    return emitOpError("type ")
           << describeType(type) << " does not have the shape "
           << describeType(shape);
  return success();
}

void StateOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult UpdateOp::verify() {
  auto rule = cast<RuleOp>(getOperation()->getParentOp());
  // Nested ops are verified before their rule's region: a rule without its
  // two inputs is its own verifier's error, reported after this.
  if (rule.getBlock().getNumArguments() != 2)
    return success();
  if (getParam().getType() != rule.getParam().getType())
    return emitOpError("gives the parameter type ")
           << describeType(getParam().getType()) << ", but it is "
           << describeType(rule.getParam().getType());
  SmallVector<StateOp> states = getRuleStates(rule);
  if (states.size() != getStates().size())
    return emitOpError("gives ") << getStates().size()
                                 << " state values for the rule's "
                                 << states.size() << " states";
  for (auto [decl, value] : llvm::zip(states, getStates()))
    if (decl.getType() != value.getType())
      return emitOpError("gives state '")
             << decl.getName() << "' the type " << describeType(value.getType())
             << ", but it is " << describeType(decl.getType());
  return success();
}

LogicalResult GroupOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto rule = symbolTable.lookupNearestSymbolFrom<RuleOp>(*this, getRuleAttr());
  if (!rule)
    return emitOpError("uses '") << getRule() << "', which is not a rule";
  for (NamedAttribute setting : getSettings()) {
    HyperOp hyper = rule.lookupHyper(setting.getName());
    if (!hyper)
      return emitOpError("sets '")
             << setting.getName().getValue() << "', which rule '"
             << rule.getSymName() << "' does not declare";
    if (failed(verifyHyperValue([&] { return emitOpError(); },
                                hyper.getName(), hyper.getType(),
                                setting.getValue())))
      return failure();
  }
  for (HyperOp hyper : rule.getBlock().getOps<HyperOp>())
    if (!hyper.getDefaultValueAttr() && !getSettings().get(hyper.getName()))
      return emitOpError("does not set '")
             << hyper.getName() << "', which has no default in rule '"
             << rule.getSymName() << "'";
  if (!getPredicate().empty()) {
    Type param = rule.getParam().getType();
    Block &block = getPredicate().front();
    if (block.getNumArguments() != 1 ||
        !isa<SymbolicTensorType>(block.getArgument(0).getType()))
      return emitOpError("'where' takes the parameter as its one argument");
    (void)param;
  }
  return success();
}

LogicalResult GroupOp::verifyRegions() {
  if (getPatterns().empty())
    return emitOpError("matches no names: give at least one pattern");
  if (getPredicate().empty())
    return success();
  Block &block = getPredicate().front();
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield || yield.getValues().size() != 1 ||
      !yield.getValues()[0].getType().isInteger(1))
    return emitOpError("'where' must yield one condition (i1)");
  return success();
}

void GroupOp::getAsmBlockArgumentNames(Region &region,
                                       OpAsmSetValueNameFn setNameFn) {
  for (BlockArgument arg : region.getArguments())
    setNameFn(arg, "param");
}

LogicalResult GlobalOp::verifyRegions() {
  Block &block = getBlock();
  if (block.getNumArguments() != 2 || getInputs().size() != 2)
    return emitOpError("takes exactly two inputs: each parameter and its "
                       "gradient");
  auto any = SymbolicTensorType::getUnranked(Float32Type::get(getContext()));
  for (BlockArgument arg : block.getArguments())
    if (arg.getType() != any)
      return emitOpError("inputs are f32 tensors of any rank, not ")
             << describeType(arg.getType());
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield || yield.getValues().size() != 1 ||
      !yield.getValues()[0].getType().isF32())
    return emitOpError("must yield one f32, its value");
  bool reduces = false;
  for (Operation &op : block.without_terminator()) {
    if (isa<ReduceParamsOp>(op)) {
      reduces = true;
      continue;
    }
    if (!isa<ConstantOp>(op) && !op.hasTrait<ElementwiseMath>())
      return op.emitOpError("cannot be part of a global: only elementwise "
                            "math, constants and optgen.reduce_params");
  }
  // Elementwise math keeps tensors tensors: one parameter's values reach
  // the scalar it yields only through a reduction across every parameter.
  if (!reduces)
    return emitOpError("reduces nothing across parameters: it needs an "
                       "optgen.reduce_params");
  return classifyGlobalBody(*this);
}

Value GlobalOp::getResult() {
  return cast<YieldOp>(getBlock().getTerminator()).getValues()[0];
}

void GlobalOp::getAsmBlockArgumentNames(Region &region,
                                        OpAsmSetValueNameFn setNameFn) {
  for (auto [arg, name] : llvm::zip(region.getArguments(), getInputs()))
    setNameFn(arg, cast<StringAttr>(name).getValue());
}

FailureOr<llvm::DenseMap<Operation *, GlobalPart>>
optgen::classifyGlobalBody(GlobalOp global) {
  llvm::DenseMap<Operation *, GlobalPart> parts;
  for (Operation &op : global.getBlock().without_terminator()) {
    // A reduction's result is known once every parameter is in.
    if (isa<ReduceParamsOp>(op)) {
      parts[&op] = GlobalPart::Finish;
      continue;
    }
    bool perParameter = false, finish = false;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      GlobalPart part = def ? parts.lookup(def) : GlobalPart::PerParameter;
      perParameter |= part == GlobalPart::PerParameter;
      finish |= part == GlobalPart::Finish;
    }
    if (perParameter && finish)
      return op.emitOpError("reads both one parameter's values and a "
                            "reduction across every parameter");
    parts[&op] = finish         ? GlobalPart::Finish
                 : perParameter ? GlobalPart::PerParameter
                                : GlobalPart::Constant;
  }
  return parts;
}

SmallVector<ReduceParamsOp> optgen::getGlobalPartials(OptimizerOp optimizer) {
  SmallVector<ReduceParamsOp> partials;
  for (GlobalOp global : optimizer.getBlock().getOps<GlobalOp>())
    llvm::append_range(partials, global.getBlock().getOps<ReduceParamsOp>());
  return partials;
}

LogicalResult
GlobalValueOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (!symbolTable.lookupNearestSymbolFrom<GlobalOp>(*this, getGlobalAttr()))
    return emitOpError("reads '")
           << getGlobal() << "', which is not a global of the optimizer";
  return success();
}

void GlobalValueOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getGlobal());
}

LogicalResult GlobalValueOp::verify() {
  if (!(*this)->getParentOfType<RuleOp>())
    return emitOpError("reads a global outside a rule; only rules read "
                       "globals");
  return success();
}

/// The group `symbol` names, or an error on `op`.
static FailureOr<GroupOp> lookupGroup(Operation *op, FlatSymbolRefAttr symbol,
                                      SymbolTableCollection &symbolTable) {
  auto group = symbolTable.lookupNearestSymbolFrom<GroupOp>(op, symbol);
  if (!group)
    return op->emitOpError("names '")
           << symbol.getValue() << "', which is not a group";
  return group;
}

LogicalResult ParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (!getGroupAttr())
    return success();
  FailureOr<GroupOp> group = lookupGroup(*this, getGroupAttr(), symbolTable);
  if (failed(group))
    return failure();
  auto rule = symbolTable.lookupNearestSymbolFrom<RuleOp>(*group,
                                                          group->getRuleAttr());
  // A group without its rule is the group's error.
  if (!rule)
    return success();
  auto type = cast<SymbolicTensorType>(rule.getParam().getType());
  if (type.isRanked() &&
      type.getRank() != static_cast<int64_t>(getShape().size()))
    return emitOpError("of rank ")
           << getShape().size() << " is bound to group '"
           << group->getSymName() << "', whose rule takes rank "
           << type.getRank();
  return success();
}

LogicalResult BucketOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (failed(lookupGroup(*this, getGroupAttr(), symbolTable)))
    return failure();
  if (getParams().empty())
    return emitOpError("holds no parameter");
  return success();
}

LogicalResult DistributeOp::verify() {
  if (getStrategy() == DistributeStrategy::none && getSmallNumel())
    return emitOpError("'small_numel' applies only to zero2");
  if (getStrategy() == DistributeStrategy::none && getShardGroup())
    return emitOpError("'shard_group' applies only to zero2");
  if (getShardGroup() && *getShardGroup() < 1)
    return emitOpError("'shard_group' must be at least 1");
  return success();
}

//===----------------------------------------------------------------------===//
// Constants, tuples, shape queries
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult TupleGetOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  auto tuple = cast<TupleType>(adaptor.getTuple().getType());
  int64_t index = adaptor.getIndex();
  if (index < 0 || index >= static_cast<int64_t>(tuple.size()))
    return emitOptionalError(loc, "index ", index, " is out of range for a "
                             "tuple of ", tuple.size());
  results.push_back(tuple.getType(index));
  return success();
}

LogicalResult DimOp::verify() {
  std::optional<int64_t> axis = getConstantAxis(getAxis());
  auto tensor = cast<SymbolicTensorType>(getInput().getType());
  if (axis && tensor.isRanked())
    return normalizeAxis(getLoc(), "size", tensor, *axis);
  return success();
}

/// An earlier value with the shape of `value`: an operand of the
/// elementwise op or the initial value of the loop that computes it, when
/// the shapes are known to agree (no `?`).
static Value sameShapeSource(Value value) {
  auto type = dyn_cast<SymbolicTensorType>(value.getType());
  if (!type || llvm::any_of(type.getDims(), [](Attribute d) {
        return isa<UnitAttr>(d);
      }))
    return {};
  auto sameShape = [&](Value v) {
    auto t = dyn_cast<SymbolicTensorType>(v.getType());
    return t && t.getAnyRank() == type.getAnyRank() &&
           t.getDims() == type.getDims();
  };
  Operation *def = value.getDefiningOp();
  if (def && def->hasTrait<ElementwiseMath>())
    for (Value operand : def->getOperands())
      if (sameShape(operand))
        return operand;
  if (auto loop = dyn_cast_or_null<ForTableOp>(def))
    return loop.getInits()[cast<OpResult>(value).getResultNumber()];
  return {};
}

template <typename ShapeQuery>
static LogicalResult askEarlierValue(ShapeQuery op, PatternRewriter &rewriter) {
  Value source = sameShapeSource(op.getInput());
  if (!source)
    return failure();
  rewriter.modifyOpInPlace(op, [&] { op.getInputMutable().assign(source); });
  return success();
}

LogicalResult DimOp::canonicalize(DimOp op, PatternRewriter &rewriter) {
  return askEarlierValue(op, rewriter);
}
LogicalResult NDimOp::canonicalize(NDimOp op, PatternRewriter &rewriter) {
  return askEarlierValue(op, rewriter);
}
LogicalResult NumelOp::canonicalize(NumelOp op, PatternRewriter &rewriter) {
  return askEarlierValue(op, rewriter);
}

OpFoldResult DimOp::fold(FoldAdaptor adaptor) {
  auto tensor = cast<SymbolicTensorType>(getInput().getType());
  auto axis = dyn_cast_or_null<IntegerAttr>(adaptor.getAxis());
  if (!axis || tensor.getAnyRank())
    return {};
  int64_t index = axis.getInt();
  if (index < -tensor.getRank() || index >= tensor.getRank())
    return {};
  if (index < 0)
    index += tensor.getRank();
  if (auto size = dyn_cast<IntegerAttr>(tensor.getDims()[index]))
    return size;
  return {};
}

OpFoldResult NDimOp::fold(FoldAdaptor) {
  auto tensor = cast<SymbolicTensorType>(getInput().getType());
  if (tensor.getAnyRank())
    return {};
  return IntegerAttr::get(getType(), tensor.getRank());
}

OpFoldResult NumelOp::fold(FoldAdaptor) {
  auto tensor = cast<SymbolicTensorType>(getInput().getType());
  if (tensor.getAnyRank())
    return {};
  int64_t numel = 1;
  for (Attribute dim : tensor.getDims()) {
    auto size = dyn_cast<IntegerAttr>(dim);
    if (!size)
      return {};
    numel *= size.getInt();
  }
  return IntegerAttr::get(getType(), numel);
}

//===----------------------------------------------------------------------===//
// Elementwise math
//===----------------------------------------------------------------------===//

/// Inferred and declared result types agree when they have the same element
/// types and shapes that may be equal (`?` matches any size).
static bool compatibleResults(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != actual.size())
    return false;
  for (auto [a, b] : llvm::zip(inferred, actual))
    if (getElementTypeOrSelf(a) != getElementTypeOrSelf(b) ||
        !areShapesCompatible(a, b))
      return false;
  return true;
}

#define OPTGEN_COMPATIBLE_RESULTS(OP)                                          \
  bool OP::isCompatibleReturnTypes(TypeRange inferred, TypeRange actual) {     \
    return compatibleResults(inferred, actual);                                \
  }
OPTGEN_COMPATIBLE_RESULTS(AddOp)
OPTGEN_COMPATIBLE_RESULTS(SubOp)
OPTGEN_COMPATIBLE_RESULTS(MulOp)
OPTGEN_COMPATIBLE_RESULTS(DivOp)
OPTGEN_COMPATIBLE_RESULTS(PowOp)
OPTGEN_COMPATIBLE_RESULTS(ModOp)
OPTGEN_COMPATIBLE_RESULTS(FloorDivOp)
OPTGEN_COMPATIBLE_RESULTS(MinOp)
OPTGEN_COMPATIBLE_RESULTS(MaxOp)
OPTGEN_COMPATIBLE_RESULTS(AndOp)
OPTGEN_COMPATIBLE_RESULTS(OrOp)
OPTGEN_COMPATIBLE_RESULTS(CmpOp)
OPTGEN_COMPATIBLE_RESULTS(NegOp)
OPTGEN_COMPATIBLE_RESULTS(NotOp)
OPTGEN_COMPATIBLE_RESULTS(SqrtOp)
OPTGEN_COMPATIBLE_RESULTS(RsqrtOp)
OPTGEN_COMPATIBLE_RESULTS(AbsOp)
OPTGEN_COMPATIBLE_RESULTS(SignOp)
OPTGEN_COMPATIBLE_RESULTS(FloorOp)
OPTGEN_COMPATIBLE_RESULTS(ExpOp)
OPTGEN_COMPATIBLE_RESULTS(LogOp)
OPTGEN_COMPATIBLE_RESULTS(LerpOp)
OPTGEN_COMPATIBLE_RESULTS(ClampOp)
OPTGEN_COMPATIBLE_RESULTS(SelectOp)
OPTGEN_COMPATIBLE_RESULTS(ReduceOp)
OPTGEN_COMPATIBLE_RESULTS(MatmulOp)
OPTGEN_COMPATIBLE_RESULTS(TransposeOp)
#undef OPTGEN_COMPATIBLE_RESULTS

static LogicalResult inferInto(FailureOr<Type> type,
                               SmallVectorImpl<Type> &results) {
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

#define OPTGEN_ELEMENTWISE_INFER(OP, NAME, KIND)                               \
  LogicalResult OP::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &results) {         \
    return inferInto(inferElementwiseType(loc, NAME,                           \
                                          adaptor.getOperands().getTypes(),    \
                                          ResultDType::KIND),                  \
                     results);                                                 \
  }

OPTGEN_ELEMENTWISE_INFER(AddOp, "+", Promoted)
OPTGEN_ELEMENTWISE_INFER(SubOp, "-", Promoted)
OPTGEN_ELEMENTWISE_INFER(MulOp, "*", Promoted)
OPTGEN_ELEMENTWISE_INFER(DivOp, "/", Float)
OPTGEN_ELEMENTWISE_INFER(PowOp, "^", Float)
OPTGEN_ELEMENTWISE_INFER(ModOp, "%", Promoted)
OPTGEN_ELEMENTWISE_INFER(FloorDivOp, "floordiv", Promoted)
OPTGEN_ELEMENTWISE_INFER(MinOp, "min", Promoted)
OPTGEN_ELEMENTWISE_INFER(MaxOp, "max", Promoted)
OPTGEN_ELEMENTWISE_INFER(AndOp, "&&", Logical)
OPTGEN_ELEMENTWISE_INFER(OrOp, "||", Logical)
OPTGEN_ELEMENTWISE_INFER(CmpOp, "comparison", Bool)
OPTGEN_ELEMENTWISE_INFER(NegOp, "-", Promoted)
OPTGEN_ELEMENTWISE_INFER(NotOp, "!", Logical)
OPTGEN_ELEMENTWISE_INFER(SqrtOp, "sqrt", Float)
OPTGEN_ELEMENTWISE_INFER(RsqrtOp, "rsqrt", Float)
OPTGEN_ELEMENTWISE_INFER(AbsOp, "abs", Promoted)
OPTGEN_ELEMENTWISE_INFER(SignOp, "sign", Promoted)
OPTGEN_ELEMENTWISE_INFER(FloorOp, "floor", Promoted)
OPTGEN_ELEMENTWISE_INFER(ExpOp, "exp", Float)
OPTGEN_ELEMENTWISE_INFER(LogOp, "log", Float)
OPTGEN_ELEMENTWISE_INFER(LerpOp, "lerp", Float)
OPTGEN_ELEMENTWISE_INFER(ClampOp, "clamp", Promoted)

#undef OPTGEN_ELEMENTWISE_INFER

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  return inferInto(inferSelectType(loc, adaptor.getCondition().getType(),
                                   adaptor.getOnTrue().getType(),
                                   adaptor.getOnFalse().getType()),
                   results);
}

/// The value of a scalar constant as a double, if it is one.
static std::optional<double> constantNumber(Attribute attr) {
  if (auto i = dyn_cast_or_null<IntegerAttr>(attr))
    return static_cast<double>(i.getType().isInteger(1) ? i.getValue().getZExtValue()
                                                        : i.getInt());
  if (auto f = dyn_cast_or_null<FloatAttr>(attr))
    return f.getValueAsDouble();
  return std::nullopt;
}

OpFoldResult CmpOp::fold(FoldAdaptor adaptor) {
  std::optional<double> a = constantNumber(adaptor.getLhs());
  std::optional<double> b = constantNumber(adaptor.getRhs());
  if (!a || !b || isa<SymbolicTensorType>(getType()))
    return {};
  bool value = false;
  switch (getPredicate()) {
  case CmpPredicate::lt: value = *a < *b; break;
  case CmpPredicate::le: value = *a <= *b; break;
  case CmpPredicate::gt: value = *a > *b; break;
  case CmpPredicate::ge: value = *a >= *b; break;
  case CmpPredicate::eq: value = *a == *b; break;
  case CmpPredicate::ne: value = *a != *b; break;
  }
  return BoolAttr::get(getContext(), value);
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  auto condition = dyn_cast_or_null<BoolAttr>(adaptor.getCondition());
  if (!condition)
    if (auto i = dyn_cast_or_null<IntegerAttr>(adaptor.getCondition()))
      condition = BoolAttr::get(getContext(), i.getValue().getBoolValue());
  if (!condition)
    return {};
  Value chosen = condition.getValue() ? getOnTrue() : getOnFalse();
  return chosen.getType() == getType() ? chosen : Value();
}

LogicalResult CastOp::verify() {
  if (!areShapesCompatible(getInput().getType(), getType()))
    return emitOpError("cannot change the shape ")
           << describeType(getInput().getType()) << " to "
           << describeType(getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and linear algebra
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  Value axis = adaptor.getAxis();
  return inferInto(
      inferReduceType(loc, stringifyReduceKind(adaptor.getKind()),
                      adaptor.getInput().getType(), static_cast<bool>(axis),
                      getConstantAxis(axis)),
      results);
}

LogicalResult ReduceParamsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  auto input = dyn_cast<SymbolicTensorType>(adaptor.getInput().getType());
  if (!input || !isa<FloatType>(input.getElementType()))
    return emitOptionalError(loc, "reduce_params reduces a float tensor");
  results.push_back(input.getElementType());
  return success();
}

LogicalResult ReduceParamsOp::verify() {
  if (getKind() != ReduceKind::sum && getKind() != ReduceKind::max)
    return emitOpError("reduces by sum or max, not ")
           << stringifyReduceKind(getKind());
  if (auto accumulator = getAccumulator();
      accumulator && !accumulator->isF32() && !accumulator->isF64())
    return emitOpError("accumulates in f32 or f64, not ") << *accumulator;
  return success();
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  return inferInto(inferMatmulType(loc, adaptor.getLhs().getType(),
                                   adaptor.getRhs().getType()),
                   results);
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  return inferInto(inferTransposeType(loc, adaptor.getInput().getType()),
                   results);
}

//===----------------------------------------------------------------------===//
// Compile-time control flow
//===----------------------------------------------------------------------===//

static LogicalResult verifyYieldTypes(Operation *op, Region &region,
                                      TypeRange expected, StringRef what) {
  auto yield = cast<YieldOp>(region.front().getTerminator());
  if (yield.getValues().getTypes() != expected)
    return op->emitOpError() << what << " must yield " << expected.size()
                             << " values of the result types";
  return success();
}

LogicalResult IfOp::verify() {
  Value culprit;
  if (!isKnownAtCompileTime(getCondition(), &culprit))
    return emitOpError("condition must be known at compile time, but it "
                       "depends on ")
           << describeRuntimeValue(culprit);
  if (failed(verifyYieldTypes(*this, getThenRegion(), getResultTypes(),
                              "the then region")) ||
      failed(verifyYieldTypes(*this, getElseRegion(), getResultTypes(),
                              "the else region")))
    return failure();
  return success();
}

/// An `if` whose condition is known: its taken branch, inline.
LogicalResult IfOp::canonicalize(IfOp op, PatternRewriter &rewriter) {
  BoolAttr condition;
  if (!matchPattern(op.getCondition(), m_Constant(&condition)))
    return failure();
  Block &taken = (condition.getValue() ? op.getThenRegion() : op.getElseRegion())
                     .front();
  auto yield = cast<YieldOp>(taken.getTerminator());
  SmallVector<Value> results(yield.getValues());
  rewriter.inlineBlockBefore(&taken, op);
  rewriter.replaceOp(op, results);
  rewriter.eraseOp(yield);
  return success();
}

LogicalResult ForTableOp::verifyRegions() {
  auto tableType = cast<ShapedType>(getTable().getType());
  if (tableType.getRank() != 2)
    return emitOpError("table must be 2-D: rows of values");
  int64_t rowLength = getRowLength();
  Block &body = getBody().front();
  if (static_cast<int64_t>(body.getNumArguments()) !=
      rowLength + static_cast<int64_t>(getInits().size()))
    return emitOpError("body takes the ")
           << rowLength << " values of a row and the "
           << getInits().size() << " loop-carried values";
  for (int64_t i = 0; i < rowLength; ++i)
    if (!body.getArgument(i).getType().isF32())
      return emitOpError("table values enter the body as f32");
  for (auto [init, arg, result] :
       llvm::zip(getInits(), body.getArguments().drop_front(rowLength),
                 getResults()))
    if (init.getType() != arg.getType() || init.getType() != result.getType())
      return emitOpError("loop-carried values keep their types");
  return verifyYieldTypes(*this, getBody(), getInits().getTypes(), "the body");
}

//===----------------------------------------------------------------------===//
// The distributed step
//===----------------------------------------------------------------------===//

void UnitOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getUnit(), stringifyUnitKind(getKind()));
}

int64_t UnitOp::getPackedElements() {
  int64_t total = 0;
  for (int64_t count : getCounts())
    total += count;
  return total;
}

LogicalResult UnitOp::verify() {
  size_t size = getParams().size();
  if (size == 0)
    return emitOpError("packs no parameter");
  if (getOffsets().size() != size || getRules().size() != size)
    return emitOpError("gives ")
           << getOffsets().size() << " offsets and " << getRules().size()
           << " rules for " << size << " parameters";
  // Counts and owners name the positions of a shard group.
  int64_t worldSize =
      cast<ScheduleOp>((*this)->getParentOp()).getShardGroupSize();
  if (getKind() == UnitKind::local) {
    if (!getCounts().empty())
      return emitOpError("gives counts; a local unit shares nothing out");
  } else if (getKind() == UnitKind::small) {
    if (getCounts().size() != 1)
      return emitOpError("gives ")
             << getCounts().size()
             << " counts; a small unit has one, its packed total";
  } else if (static_cast<int64_t>(getCounts().size()) != worldSize) {
    return emitOpError("gives ")
           << getCounts().size() << " counts for " << worldSize << " ranks";
  }
  for (int64_t count : getCounts())
    if (count < 0)
      return emitOpError("gives a negative count");
  bool owned = getKind() == UnitKind::owned;
  if (owned != getOwners().has_value())
    return emitOpError(owned ? "of owned matrices needs their owners"
                             : "has owners, which only an owned unit has");
  if (!owned)
    return success();
  ArrayRef<int32_t> owners = *getOwners();
  if (owners.size() != size)
    return emitOpError("gives ")
           << owners.size() << " owners for " << size << " parameters";
  for (auto [i, owner] : llvm::enumerate(owners)) {
    if (owner < 0 || owner >= worldSize)
      return emitOpError("gives '")
             << cast<StringAttr>(getParams()[i]).getValue() << "' to rank "
             << owner << " of " << worldSize;
    if (i > 0 && owner < owners[i - 1])
      return emitOpError("packs '")
             << cast<StringAttr>(getParams()[i]).getValue() << "' (rank "
             << owner << "'s) after a matrix of rank " << owners[i - 1]
             << ": an owned unit is packed by owner";
  }
  return success();
}

LogicalResult UnitOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto optimizer = (*this)->getParentOfType<OptimizerOp>();
  llvm::StringMap<ParamOp> params;
  for (ParamOp param : optimizer.getBlock().getOps<ParamOp>())
    params[param.getName()] = param;
  bool owned = getKind() == UnitKind::owned;
  SmallVector<int64_t> ownedElements(owned ? getCounts().size() : 0, 0);
  int64_t packed = 0;
  for (auto [i, nameAttr, ruleAttr, offset] :
       llvm::enumerate(getParams().getAsValueRange<StringAttr>(),
                       getRules().getAsRange<FlatSymbolRefAttr>(),
                       getOffsets())) {
    StringRef name = nameAttr;
    ParamOp param = params.lookup(name);
    if (!param)
      return emitOpError("packs '")
             << name << "', which is not a parameter of the optimizer";
    auto rule = symbolTable.lookupNearestSymbolFrom<RuleOp>(*this, ruleAttr);
    if (!rule)
      return emitOpError("updates '")
             << name << "' with '" << ruleAttr.getValue()
             << "', which is not a rule";
    auto type = cast<SymbolicTensorType>(rule.getParam().getType());
    if (type.isRanked() &&
        type.getRank() != static_cast<int64_t>(param.getShape().size()))
      return emitOpError("updates '")
             << name << "' of rank " << param.getShape().size()
             << " with rule '" << rule.getSymName() << "', which takes rank "
             << type.getRank();
    if (offset != packed)
      return emitOpError("places '")
             << name << "' at element " << offset
             << "; packed after the parameters before it, it starts at "
             << packed;
    int64_t elements = ShapedType::getNumElements(param.getShape());
    packed += elements;
    if (owned)
      ownedElements[(*getOwners())[i]] += elements;
  }
  switch (getKind()) {
  case UnitKind::small:
    if (getCounts()[0] != packed)
      return emitOpError("counts ")
             << getCounts()[0] << " elements, but its parameters pack "
             << packed;
    break;
  case UnitKind::flat:
    if (getPackedElements() < packed)
      return emitOpError("shares out ")
             << getPackedElements()
             << " elements, fewer than its parameters pack (" << packed << ")";
    break;
  case UnitKind::local:
    break;
  case UnitKind::owned:
    for (auto [rank, count] : llvm::enumerate(getCounts()))
      if (count != ownedElements[rank])
        return emitOpError("gives rank ")
               << rank << " " << count
               << " elements, but the matrices it owns pack "
               << ownedElements[rank];
    break;
  }
  return success();
}

/// The unit a collective works on, which must be a small one (an
/// all-reduce) or not (a reduce-scatter or all-gather).
static LogicalResult verifyCollectiveUnit(Operation *op, Value unit,
                                          bool wantSmall) {
  auto definition = unit.getDefiningOp<UnitOp>();
  if (!definition)
    return op->emitOpError("works on a value that no optgen.unit defines");
  if (definition.getKind() == UnitKind::local)
    return op->emitOpError("cannot work on a local unit, which has no "
                           "collective");
  if ((definition.getKind() == UnitKind::small) != wantSmall)
    return op->emitOpError("cannot work on a ")
           << stringifyUnitKind(definition.getKind())
           << " unit: small units are all-reduced, others reduce-scattered "
              "and all-gathered";
  return success();
}

LogicalResult AllReduceOp::verify() {
  return verifyCollectiveUnit(*this, getUnit(), /*wantSmall=*/true);
}

LogicalResult ReduceScatterOp::verify() {
  return verifyCollectiveUnit(*this, getUnit(), /*wantSmall=*/false);
}

LogicalResult AllGatherOp::verify() {
  return verifyCollectiveUnit(*this, getUnit(), /*wantSmall=*/false);
}

/// Checks that the schedule runs `unit` completely, in order: its reduction,
/// the wait on it, its partials (when the optimizer has globals, before
/// `finish`, the globals' finish), its update, and (unless small) its
/// gather.
static LogicalResult verifyUnitProgram(UnitOp unit, Operation *finish) {
  Operation *reduction = nullptr, *partials = nullptr, *compute = nullptr,
            *gather = nullptr;
  for (Operation *user : unit->getUsers()) {
    Operation *&slot = isa<AllReduceOp, ReduceScatterOp>(user) ? reduction
                       : isa<PartialsOp>(user)                 ? partials
                       : isa<ComputeOp>(user)                  ? compute
                                                               : gather;
    if (slot)
      return unit.emitOpError("is used by two ")
             << user->getName() << " ops; a step runs each unit once";
    slot = user;
  }
  if (!compute)
    return unit.emitOpError("is never computed");
  if (finish) {
    if (!partials)
      return unit.emitOpError("adds nothing to the globals' partials; every "
                              "unit needs an optgen.partials");
    if (!partials->isBeforeInBlock(finish))
      return partials->emitOpError("comes after the globals are finished");
    if (!finish->isBeforeInBlock(compute))
      return compute->emitOpError("updates the unit before the globals it "
                                  "reads are finished");
  }
  if (unit.getKind() == UnitKind::local)
    return success();
  if (!reduction)
    return unit.emitOpError("is never reduced");
  bool small = unit.getKind() == UnitKind::small;
  if (!small && !gather)
    return unit.emitOpError("is never all-gathered");
  Value token = reduction->getResult(0);
  if (!token.hasOneUse())
    return success(); // reported with the token
  Operation *wait = *token.user_begin();
  if (!wait->isBeforeInBlock(compute))
    return compute->emitOpError("updates the unit before the wait on its "
                                "reduction");
  if (partials && !wait->isBeforeInBlock(partials))
    return partials->emitOpError("reads the unit's gradients before the wait "
                                 "on its reduction");
  if (gather && !compute->isBeforeInBlock(gather))
    return gather->emitOpError("gathers the unit before it is computed");
  return success();
}

/// Checks the globals' part of the program and gives its finish: with
/// globals, one finish, after the gather of the partials (in a step of
/// more than local units, after every unit's partials) and the wait on it;
/// without globals, none of it.
static LogicalResult verifyGlobalsProgram(ScheduleOp schedule,
                                          FinishGlobalsOp &finish) {
  auto optimizer = schedule->getParentOfType<OptimizerOp>();
  bool hasGlobals = !optimizer.getBlock().getOps<GlobalOp>().empty();
  GatherPartialsOp gather;
  Operation *lastPartials = nullptr;
  bool distributed = false;
  for (Operation &op : schedule.getBlock()) {
    if (auto unit = dyn_cast<UnitOp>(op))
      distributed |= unit.getKind() != UnitKind::local;
    if (!isa<PartialsOp, GatherPartialsOp, FinishGlobalsOp>(op))
      continue;
    if (!hasGlobals)
      return op.emitOpError("works on the globals, but the optimizer has "
                            "none");
    if (isa<PartialsOp>(op)) {
      lastPartials = &op;
      continue;
    }
    bool isGather = isa<GatherPartialsOp>(op);
    if ((isGather && gather) || (!isGather && finish))
      return op.emitOpError("is the second of its kind; a step gathers and "
                            "finishes the globals once");
    if (isGather)
      gather = cast<GatherPartialsOp>(op);
    else
      finish = cast<FinishGlobalsOp>(op);
  }
  if (!hasGlobals)
    return success();
  if (!finish)
    return schedule.emitOpError("never finishes the optimizer's globals "
                                "(optgen.finish_globals)");
  if (!distributed) {
    if (gather)
      return gather.emitOpError("gathers partials in a step of local units, "
                                "where each rank's are its own");
    return success();
  }
  if (!gather)
    return schedule.emitOpError("never gathers the globals' partials over "
                                "the ranks (optgen.gather_partials)");
  if (lastPartials && !lastPartials->isBeforeInBlock(gather))
    return lastPartials->emitOpError("comes after the partials are gathered");
  Value token = gather.getToken();
  if (token.hasOneUse() && !token.user_begin()->isBeforeInBlock(finish))
    return finish.emitOpError("finishes the globals before the wait on the "
                              "partials' gather");
  return success();
}

LogicalResult ScheduleOp::verifyRegions() {
  if (getWorldSize() < 1)
    return emitOpError("needs at least one rank");
  if (getGroupSize() &&
      (*getGroupSize() < 1 || getWorldSize() % *getGroupSize() != 0))
    return emitOpError("shards within groups of ")
           << *getGroupSize() << " ranks, which do not divide "
           << getWorldSize() << " ranks";
  llvm::StringMap<UnitOp> unitOf;
  for (Operation &op : getBlock()) {
    // Every collective is waited for exactly once.
    if (op.getNumResults() == 1 && isa<TokenType>(op.getResult(0).getType())) {
      Value token = op.getResult(0);
      if (!token.hasOneUse() || !isa<WaitOp>(*token.user_begin()))
        return op.emitOpError("must be waited for exactly once");
    }
    auto unit = dyn_cast<UnitOp>(op);
    if (!unit)
      continue;
    for (StringRef param : unit.getParams().getAsValueRange<StringAttr>()) {
      auto [previous, added] = unitOf.try_emplace(param, unit);
      if (!added)
        return unit.emitOpError("packs '")
                   .append(param, "', which another unit packs too")
                   .attachNote(previous->second.getLoc())
               << "that unit";
    }
  }
  FinishGlobalsOp finish;
  if (failed(verifyGlobalsProgram(*this, finish)))
    return failure();
  for (UnitOp unit : getBlock().getOps<UnitOp>())
    if (failed(verifyUnitProgram(unit, finish)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// The space of a kernel's or launch's body of elementwise ops and
/// reductions: the first reduction's input, or the first tensor computed.
static SymbolicTensorType spaceOfBody(Block &body) {
  for (Operation &op : body) {
    if (auto reduce = dyn_cast<ReduceOp>(op))
      return cast<SymbolicTensorType>(reduce.getInput().getType());
    if (op.getNumResults() == 1)
      if (auto tensor = dyn_cast<SymbolicTensorType>(op.getResult(0).getType()))
        return tensor;
  }
  return {};
}

bool KernelOp::isSplitIntoLaunches() {
  return isa<LaunchOp>(getBody().front().front());
}

SymbolicTensorType KernelOp::getIterationSpace() {
  if (!isSplitIntoLaunches())
    return spaceOfBody(getBody().front());
  for (LaunchOp launch : getBody().front().getOps<LaunchOp>()) {
    Block &body = launch.getBody().front();
    if (SymbolicTensorType space = spaceOfBody(body))
      return space;
    // A store computes nothing: its space is the tensor it copies.
    if (launch.getKind() == LaunchKind::store)
      return dyn_cast<SymbolicTensorType>(
          body.getTerminator()->getOperand(0).getType());
  }
  return {};
}

/// A kernel in launch form: launches only, whose results it yields.
static LogicalResult verifyLaunchForm(KernelOp kernel) {
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
  for (Operation &op : kernel.getBody().front())
    if (!isa<LaunchOp, YieldOp>(op))
      return op.emitOpError("is not a launch: a kernel split into launches "
                            "holds launches only");
  if (yield.getValues().getTypes() != kernel.getResultTypes())
    return kernel.emitOpError("yields ")
           << yield.getValues().size()
           << " values that are not its results' types";
  for (Value value : yield.getValues())
    if (!value.getDefiningOp<LaunchOp>())
      return kernel.emitOpError("yields a value no launch of it computes");
  return success();
}

LogicalResult KernelOp::verify() {
  SymbolicTensorType space = getIterationSpace();
  if (!space)
    return emitOpError("computes no tensor");
  if (isSplitIntoLaunches())
    return verifyLaunchForm(*this);
  for (Operation &op : getBody().front()) {
    if (isa<YieldOp>(op))
      continue;
    Type shape;
    if (auto reduce = dyn_cast<ReduceOp>(op))
      shape = reduce.getInput().getType();
    else if (op.hasTrait<ElementwiseMath>())
      shape = op.getResult(0).getType();
    else
      return op.emitOpError("cannot be part of a kernel: only elementwise ops "
                            "and reductions fuse");
    if (!areShapesCompatible(shape, space.withElementType(
                                        getElementTypeOrSelf(shape))))
      return op.emitOpError("works on ")
             << describeType(shape) << ", outside the kernel's space "
             << describeType(space);
  }
  // The printers compute each yielded value into the result in its place,
  // and each reduction into a result.
  auto yield = cast<YieldOp>(getBody().front().getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().size()
           << " values that are not its results' types";
  for (ReduceOp reduce : getBody().front().getOps<ReduceOp>())
    if (!llvm::is_contained(yield.getValues(), reduce.getResult()))
      return reduce.emitOpError("is not a result of its kernel: a kernel "
                                "yields each of its reductions");
  return success();
}

//===----------------------------------------------------------------------===//
// LaunchOp
//===----------------------------------------------------------------------===//

bool optgen::reducesToColumns(int64_t axis, int64_t rank) {
  return rank == 2 && (axis == 0 || axis == -2);
}

/// What each kind of launch may yield: `value`, the yield's operand.
static LogicalResult verifyLaunchResult(LaunchOp launch, Value value) {
  auto reduce = value.getDefiningOp<ReduceOp>();
  Operation *def = value.getDefiningOp();
  bool inBody = def && def->getParentOp() == launch.getOperation();
  switch (launch.getKind()) {
  case LaunchKind::space:
    if (reduce && reduce.getAxis())
      return launch.emitOpError("yields a reduction along an axis: a space "
                                "launch yields tensors and full reductions");
    if (!reduce && !isa<SymbolicTensorType>(value.getType()))
      return launch.emitOpError("yields a scalar that is not a reduction");
    return success();
  case LaunchKind::rows:
  case LaunchKind::cols:
  case LaunchKind::lines: {
    if (!inBody || !reduce || !reduce.getAxis())
      return launch.emitOpError("yields other than a reduction along an "
                                "axis of its body");
    if (launch.getKind() == LaunchKind::lines) {
      if (reduce.getAxis() != launch.getAxis())
        return launch.emitOpError("yields a reduction along another axis "
                                  "than the launch's");
      return success();
    }
    std::optional<int64_t> axis = getConstantAxis(reduce.getAxis());
    if (!axis)
      return launch.emitOpError("yields a reduction along an axis known only "
                                "at run time: that is a `lines` launch");
    int64_t rank =
        cast<SymbolicTensorType>(reduce.getInput().getType()).getRank();
    if (reducesToColumns(*axis, rank) != (launch.getKind() == LaunchKind::cols))
      return launch.emitOpError("yields a reduction to one value per ")
             << (reducesToColumns(*axis, rank) ? "column" : "row")
             << ", which is a `"
             << (reducesToColumns(*axis, rank) ? "cols" : "rows")
             << "` launch's";
    return success();
  }
  case LaunchKind::finish: {
    auto space = value.getDefiningOp<LaunchOp>();
    if (!space || space->getParentOp() != launch->getParentOp() ||
        space.getKind() != LaunchKind::space)
      return launch.emitOpError("finishes a value that is not a result of "
                                "its kernel's space launch");
    Value partial = space.getBody().front().getTerminator()->getOperand(
        cast<OpResult>(value).getResultNumber());
    auto full = partial.getDefiningOp<ReduceOp>();
    if (!full || full.getAxis())
      return launch.emitOpError("finishes a value that is not a full "
                                "reduction");
    return success();
  }
  case LaunchKind::store:
    if (def && launch->getParentOp()->isAncestor(def))
      return launch.emitOpError("stores a value of its own kernel: a store "
                                "copies a tensor computed before it");
    if (!isa<SymbolicTensorType>(value.getType()))
      return launch.emitOpError("stores a scalar");
    return success();
  }
  llvm_unreachable("every launch kind is handled");
}

/// The memory of the tensors `launch` reads from before its kernel.
static llvm::SmallSetVector<Attribute, 4> memoryRead(LaunchOp launch) {
  llvm::SmallSetVector<Attribute, 4> read;
  Operation *kernel = launch->getParentOp();
  launch.walk([&](Operation *op) {
    for (Value operand : op->getOperands()) {
      if (!isa<SymbolicTensorType>(operand.getType()) ||
          kernel->isAncestor(operand.getParentRegion()->getParentOp()))
        continue;
      if (BufferAttr buffer = getBuffer(operand))
        read.insert(buffer);
    }
  });
  return read;
}

/// The grid a launch of each kind runs.
static GridKind gridOf(LaunchKind kind) {
  switch (kind) {
  case LaunchKind::space:
  case LaunchKind::store:
    return GridKind::elements;
  case LaunchKind::rows:
    return GridKind::rows;
  case LaunchKind::cols:
    return GridKind::column_blocks;
  case LaunchKind::lines:
    return GridKind::lines;
  case LaunchKind::finish:
    return GridKind::members;
  }
  llvm_unreachable("every launch kind is handled");
}

/// `launch`'s shape fits its kind, and a space launch's blocks fit the
/// partial-sums slots its full reductions write one value per block to.
static LogicalResult verifyLaunchShape(LaunchOp launch, ArrayAttr buffers) {
  LaunchShapeAttr shape = launch.getShapeAttr();
  if (!shape)
    return success();
  if (shape.getGrid() != gridOf(launch.getKind()))
    return launch.emitOpError("runs a grid of ")
           << stringifyGridKind(shape.getGrid()) << ": a "
           << stringifyLaunchKind(launch.getKind()) << " launch runs one of "
           << stringifyGridKind(gridOf(launch.getKind()));
  auto rule = launch->getParentOfType<RuleOp>();
  auto workspace =
      rule ? rule->getAttrOfType<ArrayAttr>(kWorkspaceAttr) : ArrayAttr();
  if (launch.getKind() != LaunchKind::space || !buffers || !workspace)
    return success();
  Operation *yield = launch.getBody().front().getTerminator();
  for (auto [value, buffer] : llvm::zip(yield->getOperands(), buffers)) {
    auto reduce = value.getDefiningOp<ReduceOp>();
    auto slot = dyn_cast<BufferAttr>(buffer);
    if (!reduce || reduce.getAxis() || !slot ||
        slot.getIndex() >= static_cast<int64_t>(workspace.size()))
      continue;
    auto dims = cast<SlotAttr>(workspace[slot.getIndex()]).getShape().getDims();
    auto held = dims.size() == 1 ? dyn_cast<IntegerAttr>(dims[0]) : nullptr;
    if (!held || held.getInt() < shape.getMaxBlocks())
      return launch.emitOpError("runs up to ")
             << shape.getMaxBlocks()
             << " blocks, each leaving a partial sum, where the slot of "
                "its full reduction holds "
             << (held ? std::to_string(held.getInt()) : "other than a count");
  }
  return success();
}

LogicalResult LaunchOp::verify() {
  bool alongHostAxis = getKind() == LaunchKind::lines;
  if (alongHostAxis != static_cast<bool>(getAxis()))
    return emitOpError(alongHostAxis
                           ? "reduces along an axis it does not name"
                           : "names an axis: only a `lines` launch has one");
  Block &body = getBody().front();
  if ((getKind() == LaunchKind::finish || getKind() == LaunchKind::store) &&
      !isa<YieldOp>(body.front()))
    return emitOpError("computes: a ")
           << stringifyLaunchKind(getKind())
           << " launch yields what it moves and computes nothing";
  for (Operation &op : body)
    if (!isa<YieldOp, ReduceOp>(op) && !op.hasTrait<ElementwiseMath>())
      return op.emitOpError("cannot be part of a launch: only elementwise ops "
                            "and reductions run in one");
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().size()
           << " values that are not its results' types";
  if (getKind() == LaunchKind::store && yield.getValues().size() != 1)
    return emitOpError("stores ")
           << yield.getValues().size() << " tensors: a store copies one";
  for (Value value : yield.getValues())
    if (failed(verifyLaunchResult(*this, value)))
      return failure();

  auto buffers = (*this)->getAttrOfType<ArrayAttr>(kBuffersAttr);
  if (buffers && buffers.size() != getNumResults())
    return emitOpError("has ") << buffers.size() << " buffers for "
                               << getNumResults() << " results";
  if (failed(verifyLaunchShape(*this, buffers)))
    return failure();

  // Every launch of a kernel reads the memory before the kernel as it was:
  // none may come after a launch that writes it.
  llvm::SmallSetVector<Attribute, 4> read = memoryRead(*this);
  for (Operation *earlier = (*this)->getPrevNode(); earlier;
       earlier = earlier->getPrevNode()) {
    auto written = earlier->getAttrOfType<ArrayAttr>(kBuffersAttr);
    if (!written)
      continue;
    for (Attribute buffer : written)
      if (isa<BufferAttr>(buffer) && read.contains(buffer)) {
        InFlightDiagnostic diag =
            emitOpError("reads ")
            << buffer
            << " after an earlier launch of its kernel writes it: it would "
               "read the new values, where the kernel reads the old";
        diag.attachNote(earlier->getLoc()) << "the launch that writes it";
        return diag;
      }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// GemmOp
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::verify() {
  auto a = cast<SymbolicTensorType>(getA().getType());
  auto b = cast<SymbolicTensorType>(getB().getType());
  auto result = cast<SymbolicTensorType>(getResult().getType());
  if (!a.isRanked() || a.getRank() != 2 || !b.isRanked() || b.getRank() != 2 ||
      !result.isRanked() || result.getRank() != 2)
    return emitOpError("multiplies matrices into a matrix");
  auto sameDim = [](Attribute x, Attribute y) {
    return x == y || isa<UnitAttr>(x) || isa<UnitAttr>(y);
  };
  // op(a) is rows x inner, op(b) inner x cols.
  Attribute rows = a.getDims()[getTransposeA() ? 1 : 0];
  Attribute innerA = a.getDims()[getTransposeA() ? 0 : 1];
  Attribute innerB = b.getDims()[getTransposeB() ? 1 : 0];
  Attribute cols = b.getDims()[getTransposeB() ? 0 : 1];
  if (!sameDim(innerA, innerB))
    return emitOpError("multiplies ")
           << describeType(a) << (getTransposeA() ? " transposed" : "")
           << " by " << describeType(b) << (getTransposeB() ? " transposed" : "")
           << ": the inner dimensions differ";
  if (!sameDim(rows, result.getDims()[0]) || !sameDim(cols, result.getDims()[1]))
    return emitOpError("result ")
           << describeType(result) << " is not the product's shape";
  if (static_cast<bool>(getC()) != static_cast<bool>(getBeta()))
    return emitOpError("an accumulated 'c' comes with its 'beta', and only "
                       "then");
  for (Value scale : {getAlpha(), getBeta()})
    if (scale && !isa<FloatType>(scale.getType()))
      return emitOpError("scales by floats, not ") << scale.getType();
  if (Value c = getC()) {
    auto type = cast<SymbolicTensorType>(c.getType());
    if (!type.isRanked() || type.getDims() != result.getDims() ||
        type.getElementType() != result.getElementType())
      return emitOpError("accumulates ")
             << describeType(type) << " into a result of "
             << describeType(result) << ": they must be the same";
  }
  if (getSymmetric() &&
      (getA() != getB() || getTransposeA() == getTransposeB()))
    return emitOpError("is symmetric only as op(a) @ op(a)^T: the same "
                       "operand, exactly one side transposed");
  return success();
}

void optgen::forEachHostDecision(RuleOp rule,
                                 function_ref<void(Value)> decision) {
  auto openAxis = [&](Value axis) {
    if (axis && !matchPattern(axis, m_Constant()))
      decision(axis);
  };
  rule.walk([&](Operation *op) {
    if (auto loop = dyn_cast<ForTableOp>(op))
      decision(loop.getCount());
    else if (auto branch = dyn_cast<IfOp>(op))
      decision(branch.getCondition());
    else if (auto reduce = dyn_cast<ReduceOp>(op))
      openAxis(reduce.getAxis());
    else if (auto state = dyn_cast<StateOp>(op))
      openAxis(state.getAxis());
    else if (auto gemm = dyn_cast<GemmOp>(op)) {
      if (gemm.getAlpha())
        decision(gemm.getAlpha());
      if (gemm.getBeta())
        decision(gemm.getBeta());
    }
  });
}

BufferAttr optgen::getBuffer(Value value) {
  MLIRContext *context = value.getContext();
  if (auto state = value.getDefiningOp<StateOp>()) {
    auto rule = state->getParentOfType<RuleOp>();
    SmallVector<StateOp> states = getRuleStates(rule);
    return BufferAttr::get(context, BufferKind::state,
                           llvm::find(states, state) - states.begin());
  }
  if (auto result = dyn_cast<OpResult>(value)) {
    auto buffers = result.getOwner()->getAttrOfType<ArrayAttr>(kBuffersAttr);
    if (!buffers || isa<ReduceOp>(result.getOwner()))
      return {};
    return dyn_cast<BufferAttr>(buffers[result.getResultNumber()]);
  }
  auto arg = cast<BlockArgument>(value);
  Operation *owner = arg.getOwner()->getParentOp();
  if (isa<RuleOp>(owner))
    return BufferAttr::get(context,
                           arg.getArgNumber() == 0 ? BufferKind::param
                                                   : BufferKind::grad,
                           0);
  if (auto loop = dyn_cast<ForTableOp>(owner)) {
    // Loop-carried values live where the loop's results do.
    unsigned index = arg.getArgNumber() - loop.getRowLength();
    return getBuffer(loop.getResult(index));
  }
  return {};
}

Operation *optgen::findUnbufferedTensor(RuleOp rule) {
  Operation *found = nullptr;
  rule.walk([&](Operation *op) {
    // Fused ops live in their kernel's loop, not in memory.
    if (isa<KernelOp, LaunchOp>(op->getParentOp()))
      return WalkResult::skip();
    for (Value result : op->getResults())
      if (isa<SymbolicTensorType>(result.getType()) && !getBuffer(result)) {
        found = op;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return found;
}

std::string optgen::mathFingerprint(OptimizerOp optimizer) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (Operation &op : optimizer.getBlock()) {
    if (!isa<RuleOp, GlobalOp>(op))
      continue;
    // A copy, so that the defaults can go without changing the optimizer.
    OwningOpRef<Operation *> copy(op.clone());
    copy->walk([](HyperOp hyper) { hyper.removeDefaultValueAttr(); });
    copy->print(os, OpPrintingFlags().useLocalScope());
    os << "\n";
  }
  return llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true, 16);
}
