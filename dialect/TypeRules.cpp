//===- TypeRules.cpp - Shapes and dtypes of optgen values -----------------===//

#include "dialect/OptgenDialect.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace optgen {

Type getElementTypeOrSelf(Type type) {
  if (auto tensor = dyn_cast<SymbolicTensorType>(type))
    return tensor.getElementType();
  return type;
}

static std::string describeDim(Attribute dim) {
  if (auto size = dyn_cast<IntegerAttr>(dim))
    return std::to_string(size.getInt());
  if (auto name = dyn_cast<StringAttr>(dim))
    return name.str();
  return "?";
}

static std::string describeShape(SymbolicTensorType tensor) {
  if (tensor.getAnyRank())
    return "*";
  std::string text = "[";
  llvm::interleave(
      tensor.getDims(), [&](Attribute dim) { text += describeDim(dim); },
      [&] { text += ", "; });
  return text + "]";
}

std::string describeType(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto tensor = dyn_cast<SymbolicTensorType>(type))
    os << describeShape(tensor) << ' ' << tensor.getElementType();
  else
    os << type;
  return text;
}

namespace {
enum class Category { Bool = 0, Int = 1, Float = 2 };
} // namespace

static Category categoryOf(Type element) {
  if (element.isInteger(1))
    return Category::Bool;
  if (isa<IntegerType>(element))
    return Category::Int;
  return Category::Float;
}

/// bf16 with f16 has no common 16-bit type: both become f32. f64 is the
/// type of float literals, which are weak: they take the other's type.
static Type widenFloat(Type a, Type b) {
  if (a == b || b.isF64())
    return a;
  if (a.isF64())
    return b;
  return Float32Type::get(a.getContext());
}

/// The promoted element type: the widest category wins; within it, tensor
/// operands decide and scalars only count when no tensor of that category is
/// present (PyTorch's rule: `bf16_tensor * 0.5` stays bf16).
static Type promote(TypeRange operands) {
  Category best = Category::Bool;
  for (Type t : operands)
    best = std::max(best, categoryOf(getElementTypeOrSelf(t)));
  Type result;
  bool fromTensor = false;
  for (Type t : operands) {
    Type element = getElementTypeOrSelf(t);
    if (categoryOf(element) != best)
      continue;
    bool isTensor = isa<SymbolicTensorType>(t);
    if (isTensor && !fromTensor) {
      result = element;
      fromTensor = true;
      continue;
    }
    if (!isTensor && fromTensor)
      continue;
    result = result ? widenFloat(result, element) : element;
  }
  return result;
}

static bool isStaticOne(Attribute dim) {
  auto size = dyn_cast<IntegerAttr>(dim);
  return size && size.getInt() == 1;
}

/// Shape of a broadcast, or failure. `tensor` is null when all are scalars.
static FailureOr<SymbolicTensorType> broadcastShapes(std::optional<Location> loc,
                                             StringRef opName,
                                             TypeRange operands,
                                             Type elementType) {
  SmallVector<SymbolicTensorType> tensors;
  for (Type t : operands)
    if (auto tensor = dyn_cast<SymbolicTensorType>(t))
      tensors.push_back(tensor);
  if (tensors.empty())
    return SymbolicTensorType();

  bool anyRank = false, ranked = false;
  for (SymbolicTensorType t : tensors)
    (t.getAnyRank() ? anyRank : ranked) = true;
  if (anyRank && ranked) {
    SymbolicTensorType a = *llvm::find_if(tensors, [](SymbolicTensorType t) { return t.getAnyRank(); });
    SymbolicTensorType b = *llvm::find_if(tensors, [](SymbolicTensorType t) { return t.isRanked(); });
    return emitOptionalError(
        loc, "'", opName, "' mixes a tensor shaped like a parameter of any rank (",
        describeShape(a), ") with one of shape ", describeShape(b),
        "; declare the rule's input as 'p: matrix' or 'p: vector'");
  }
  if (anyRank)
    return SymbolicTensorType::getUnranked(elementType);

  int64_t rank = 0;
  for (SymbolicTensorType t : tensors)
    rank = std::max(rank, t.getRank());
  SmallVector<Attribute> dims(rank);
  for (SymbolicTensorType t : tensors) {
    ArrayRef<Attribute> tdims = t.getDims();
    int64_t offset = rank - t.getRank();
    for (auto [i, dim] : llvm::enumerate(tdims)) {
      Attribute &out = dims[offset + i];
      if (!out || isStaticOne(out)) {
        out = dim;
        continue;
      }
      if (isStaticOne(dim) || dim == out)
        continue;
      if (isa<UnitAttr>(out)) { // `?` takes whatever is more specific
        out = dim;
        continue;
      }
      if (isa<UnitAttr>(dim))
        continue;
      std::string shapes;
      llvm::interleave(
          tensors, [&](SymbolicTensorType s) { shapes += describeShape(s); },
          [&] { shapes += " and "; });
      return emitOptionalError(loc, "shapes ", shapes, " do not broadcast in '",
                               opName, "': ", describeDim(out), " against ",
                               describeDim(dim));
    }
  }
  // Dimensions only scalars or rank-extension filled are 1.
  for (Attribute &dim : dims)
    if (!dim)
      dim = IntegerAttr::get(IntegerType::get(elementType.getContext(), 64), 1);
  return SymbolicTensorType::get(elementType.getContext(), dims, elementType, false);
}

FailureOr<Type> inferElementwiseType(std::optional<Location> loc,
                                     StringRef opName, TypeRange operands,
                                     ResultDType resultDType) {
  if (operands.empty())
    return emitOptionalError(loc, "'", opName, "' needs operands");
  MLIRContext *ctx = operands.front().getContext();
  Type element;
  switch (resultDType) {
  case ResultDType::Promoted:
  case ResultDType::Float: {
    element = promote(operands);
    if (categoryOf(element) == Category::Bool)
      element = IntegerType::get(ctx, 64);
    if (resultDType == ResultDType::Float && !isa<FloatType>(element))
      element = Float32Type::get(ctx);
    break;
  }
  case ResultDType::Bool:
    element = IntegerType::get(ctx, 1);
    break;
  case ResultDType::Logical:
    for (Type t : operands)
      if (!getElementTypeOrSelf(t).isInteger(1))
        return emitOptionalError(loc, "'", opName,
                                 "' needs conditions or masks, but got ",
                                 describeType(t));
    element = IntegerType::get(ctx, 1);
    break;
  }
  // A tensor of ints is not a thing optgen stores: arithmetic on masks and
  // ints gives floats when it becomes a tensor.
  FailureOr<SymbolicTensorType> shape = broadcastShapes(loc, opName, operands, element);
  if (failed(shape))
    return failure();
  if (!*shape)
    return element;
  if ((isa<IntegerType>(element) && !element.isInteger(1)) || element.isF64())
    return Type(shape->withElementType(Float32Type::get(ctx)));
  return Type(*shape);
}

FailureOr<Type> inferSelectType(std::optional<Location> loc, Type condition,
                                Type onTrue, Type onFalse) {
  if (!getElementTypeOrSelf(condition).isInteger(1))
    return emitOptionalError(loc, "the condition of 'select' must be a "
                                  "condition or mask, but got ",
                             describeType(condition));
  Type element = promote({onTrue, onFalse});
  FailureOr<SymbolicTensorType> shape =
      broadcastShapes(loc, "select", {condition, onTrue, onFalse}, element);
  if (failed(shape))
    return failure();
  if (!*shape)
    return element;
  if (!isa<FloatType>(element) || element.isF64())
    element = Float32Type::get(element.getContext());
  return Type(shape->withElementType(element));
}

FailureOr<int64_t> normalizeAxis(std::optional<Location> loc, StringRef opName,
                                 Type type, int64_t axis) {
  auto tensor = dyn_cast<SymbolicTensorType>(type);
  if (!tensor)
    return emitOptionalError(loc, "'", opName, "' along an axis needs a tensor, "
                             "but got ", describeType(type));
  if (tensor.getAnyRank())
    return emitOptionalError(
        loc, "'", opName, "' along an axis needs a tensor of known rank, but "
        "this one is shaped like a parameter of any rank; declare the rule's "
        "input as 'p: matrix' or 'p: vector'");
  int64_t rank = tensor.getRank();
  if (axis < -rank || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " is out of range for '",
                             opName, "' of a tensor of rank ", rank, " (",
                             describeShape(tensor), ")");
  return axis < 0 ? axis + rank : axis;
}

FailureOr<Type> inferReduceType(std::optional<Location> loc, StringRef opName,
                                Type input, bool hasAxis,
                                std::optional<int64_t> axis) {
  auto tensor = dyn_cast<SymbolicTensorType>(input);
  if (!tensor)
    return emitOptionalError(loc, "'", opName, "' needs a tensor, but got ",
                             describeType(input));
  Type element = tensor.getElementType();
  if (element.isInteger(1))
    return emitOptionalError(loc, "'", opName, "' cannot reduce a mask");
  if (!hasAxis)
    return element;
  if (axis) {
    FailureOr<int64_t> index = normalizeAxis(loc, opName, input, *axis);
    if (failed(index))
      return failure();
    SmallVector<Attribute> dims(tensor.getDims());
    dims[*index] = IntegerAttr::get(IntegerType::get(input.getContext(), 64), 1);
    return Type(SymbolicTensorType::get(input.getContext(), dims, element, false));
  }
  if (tensor.getAnyRank())
    return emitOptionalError(
        loc, "'", opName, "' along an axis needs a tensor of known rank; "
        "declare the rule's input as 'p: matrix' or 'p: vector'");
  // Any dimension could be the one reduced: all but the 1s become unknown.
  SmallVector<Attribute> dims;
  for (Attribute dim : tensor.getDims())
    dims.push_back(isStaticOne(dim) ? dim : UnitAttr::get(input.getContext()));
  return Type(SymbolicTensorType::get(input.getContext(), dims, element, false));
}

static LogicalResult requireMatrix(std::optional<Location> loc, StringRef what,
                                   Type type) {
  auto tensor = dyn_cast<SymbolicTensorType>(type);
  if (tensor && tensor.isRanked() && tensor.getRank() == 2)
    return success();
  if (tensor && tensor.getAnyRank())
    return emitOptionalError(loc, what, " needs a matrix, but got a tensor "
                             "shaped like a parameter of any rank; declare the "
                             "rule's input as 'p: matrix'");
  return emitOptionalError(loc, what, " needs a matrix, but got ",
                           describeType(type));
}

static bool dimsMayBeEqual(Attribute a, Attribute b) {
  return a == b || isa<UnitAttr>(a) || isa<UnitAttr>(b);
}

FailureOr<Type> inferMatmulType(std::optional<Location> loc, Type lhs,
                                Type rhs) {
  if (failed(requireMatrix(loc, "the left operand of '@'", lhs)) ||
      failed(requireMatrix(loc, "the right operand of '@'", rhs)))
    return failure();
  auto a = cast<SymbolicTensorType>(lhs), b = cast<SymbolicTensorType>(rhs);
  if (!dimsMayBeEqual(a.getDims()[1], b.getDims()[0]))
    return emitOptionalError(loc, "matrix product of incompatible shapes ",
                             describeShape(a), " @ ", describeShape(b), ": ",
                             describeDim(a.getDims()[1]), " columns against ",
                             describeDim(b.getDims()[0]), " rows");
  Type element = promote({lhs, rhs});
  return Type(SymbolicTensorType::get(lhs.getContext(),
                              {a.getDims()[0], b.getDims()[1]}, element, false));
}

FailureOr<Type> inferTransposeType(std::optional<Location> loc, Type input) {
  if (failed(requireMatrix(loc, "transpose", input)))
    return failure();
  auto t = cast<SymbolicTensorType>(input);
  return Type(SymbolicTensorType::get(input.getContext(),
                              {t.getDims()[1], t.getDims()[0]},
                              t.getElementType(), false));
}

bool areShapesCompatible(Type from, Type to) {
  auto a = dyn_cast<SymbolicTensorType>(from), b = dyn_cast<SymbolicTensorType>(to);
  if (!a || !b)
    return !a && !b;
  if (a.getAnyRank() || b.getAnyRank())
    return a.getAnyRank() == b.getAnyRank();
  if (a.getRank() != b.getRank())
    return false;
  for (auto [x, y] : llvm::zip(a.getDims(), b.getDims()))
    if (!dimsMayBeEqual(x, y))
      return false;
  return true;
}

LogicalResult
verifyHyperValue(llvm::function_ref<InFlightDiagnostic()> emitError,
                 StringRef name, Type type, Attribute value) {
  if (auto tuple = dyn_cast<TupleType>(type)) {
    auto array = dyn_cast<ArrayAttr>(value);
    if (!array || array.size() != tuple.size())
      return emitError() << "hyperparameter '" << name << "' is a tuple of "
                         << tuple.size() << " values";
    for (auto [elementType, element] : llvm::zip(tuple.getTypes(), array))
      if (failed(verifyHyperValue(emitError, name, elementType, element)))
        return failure();
    return success();
  }
  if (type.isF32() && (isa<FloatAttr>(value) || isa<IntegerAttr>(value)))
    return success();
  if (type.isInteger(64) && isa<IntegerAttr>(value))
    return success();
  return emitError() << "hyperparameter '" << name << "' takes "
                     << (type.isF32() ? "a float" : "an int") << ", not "
                     << value;
}

bool isKnownAtCompileTime(Value value, Value *culprit) {
  SmallVector<Value> worklist{value};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    Operation *def = v.getDefiningOp();
    bool known = def && !isa<SymbolicTensorType>(v.getType()) &&
                 (isa<ConstantOp, DimOp, NDimOp, NumelOp>(def) ||
                  def->hasTrait<ElementwiseMath>());
    if (!known) {
      if (culprit)
        *culprit = v;
      return false;
    }
    if (isa<DimOp, NDimOp, NumelOp>(def)) {
      if (auto dim = dyn_cast<DimOp>(def))
        worklist.push_back(dim.getAxis());
      continue;
    }
    if (seen.insert(def).second)
      llvm::append_range(worklist, def->getOperands());
  }
  return true;
}

std::string describeRuntimeValue(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Operation *owner = arg.getOwner()->getParentOp();
    if (isa<RuleOp>(owner))
      return arg.getArgNumber() == 0 ? "the parameter's values"
                                     : "the gradient";
    if (isa<ForTableOp>(owner))
      return "a value that changes from one loop iteration to the next";
    return "a block argument";
  }
  Operation *def = value.getDefiningOp();
  return llvm::TypeSwitch<Operation *, std::string>(def)
      .Case([](HyperOp op) {
        return ("hyperparameter '" + op.getName() + "'").str();
      })
      .Case([](StateOp op) { return ("state '" + op.getName() + "'").str(); })
      .Case([](StepOp) { return std::string("the step count"); })
      .Case([](GlobalValueOp op) {
        return ("global '" + op.getGlobal() + "'").str();
      })
      .Case([](TupleGetOp op) {
        return describeRuntimeValue(op.getTuple());
      })
      .Default([&](Operation *op) {
        auto isTensor = [](Type t) { return isa<SymbolicTensorType>(t); };
        if (isTensor(value.getType()) ||
            llvm::any_of(op->getOperandTypes(), isTensor))
          return std::string("tensor values");
        return "the result of '" + op->getName().getStringRef().str() + "'";
      });
}

} // namespace optgen
