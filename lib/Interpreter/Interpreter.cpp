//===- Interpreter.cpp - The fp64 reference interpreter of optgen ---------===//
//
// A tree-walking evaluator over one rule's block: an environment maps each
// SSA value to its concrete value, and each op family has one function that
// computes its result from its operands'. See Interpreter.h for the
// semantics.
//
//===----------------------------------------------------------------------===//

#include "optgen/Interpreter/Interpreter.h"

#include "dialect/OptgenDialect.h"
#include "optgen/runtime/Float16.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>
#include <limits>

using mlir::Attribute;
using mlir::Block;
using mlir::failure;
using mlir::FailureOr;
using mlir::LogicalResult;
using mlir::Operation;
using mlir::success;
using mlir::Type;

namespace optgen::interp {

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Value Value::scalar(double x, Type type) {
  Value v;
  v.kind = Kind::Scalar;
  v.type = type;
  v.data = {x};
  return v;
}

Value Value::tensor(std::vector<int64_t> shape, std::vector<double> data,
                    Type elementType) {
  Value v;
  v.kind = Kind::Tensor;
  v.type = elementType;
  v.shape = std::move(shape);
  v.data = std::move(data);
  return v;
}

Value Value::zeros(std::vector<int64_t> shape, Type elementType) {
  int64_t n = numElements(shape);
  return tensor(std::move(shape), std::vector<double>(n, 0.0), elementType);
}

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

double roundToType(double x, Type type) {
  if (!type)
    return x;
  if (type.isBF16())
    return runtime::roundToBF16(static_cast<float>(x));
  if (type.isF16())
    return runtime::roundToF16(static_cast<float>(x));
  if (type.isInteger(1))
    return x != 0 ? 1.0 : 0.0;
  return x; // f32 and f64 stay in double; i64 values are already integers
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::interleave(
      shape, [&](int64_t d) { text += std::to_string(d); },
      [&] { text += ", "; });
  return text + "]";
}

static std::string describeValue(const Value &v) {
  switch (v.kind) {
  case Value::Kind::Scalar:
    return "a scalar";
  case Value::Kind::Tuple:
    return "a tuple";
  case Value::Kind::Tensor:
    return "a tensor of shape " + formatShape(v.shape);
  }
  return "a value";
}

//===----------------------------------------------------------------------===//
// Helpers of the op families
//===----------------------------------------------------------------------===//

/// Numpy broadcasting of `shapes` (right-aligned; a size of 1 stretches).
static std::optional<std::vector<int64_t>>
broadcastShapes(llvm::ArrayRef<std::vector<int64_t>> shapes) {
  size_t rank = 0;
  for (const auto &s : shapes)
    rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto &s : shapes) {
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[offset + i];
      if (s[i] == 1 || s[i] == o)
        continue;
      if (o != 1)
        return std::nullopt;
      o = s[i];
    }
  }
  return out;
}

/// Strides of `shape` (rank `rank`, right-aligned) into a broadcast of
/// rank `rank`: 0 where the operand has size 1 or no dimension.
static std::vector<int64_t> broadcastStrides(llvm::ArrayRef<int64_t> shape,
                                             llvm::ArrayRef<int64_t> out) {
  std::vector<int64_t> strides(out.size(), 0);
  size_t offset = out.size() - shape.size();
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[offset + i] = (shape[i] == 1 && out[offset + i] != 1) ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

/// A running reduction of one kind, in double.
class Accumulator {
public:
  explicit Accumulator(ReduceKind kind) : kind(kind) {
    if (kind == ReduceKind::max)
      acc = -std::numeric_limits<double>::infinity();
  }
  void add(double x) {
    switch (kind) {
    case ReduceKind::sum:
    case ReduceKind::mean:
      acc += x;
      break;
    case ReduceKind::norm:
      acc += x * x;
      break;
    case ReduceKind::max:
      if (std::isnan(x) || x > acc) // NaN, once seen, stays
        acc = x;
      break;
    }
  }
  double result(int64_t count) const {
    switch (kind) {
    case ReduceKind::mean:
      return acc / static_cast<double>(count);
    case ReduceKind::norm:
      return std::sqrt(acc);
    default:
      return acc;
    }
  }

private:
  ReduceKind kind;
  double acc = 0;
};

static double applyCmp(CmpPredicate predicate, double a, double b) {
  switch (predicate) {
  case CmpPredicate::lt:
    return a < b;
  case CmpPredicate::le:
    return a <= b;
  case CmpPredicate::gt:
    return a > b;
  case CmpPredicate::ge:
    return a >= b;
  case CmpPredicate::eq:
    return a == b;
  case CmpPredicate::ne:
    return a != b;
  }
  return 0;
}

/// min and max that propagate NaN, as torch.minimum/maximum do.
static double nanMin(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::nan("") : std::min(a, b);
}
static double nanMax(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b);
}

static double sign(double x) {
  if (std::isnan(x))
    return x;
  return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
}

/// Python's `%` (torch.remainder): the remainder takes the divisor's sign.
/// fmod is exact, for ints (below 2^53) and floats alike. An int modulo 0
/// is `a`; a float modulo 0 is NaN (fmod's).
static double remainder(double a, double b, bool ints) {
  if (ints && b == 0)
    return a;
  double mod = std::fmod(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0)))
    mod += b;
  return mod;
}

/// Python's `//` (torch.floor_divide). Ints: exact, 0 for a divisor of 0.
/// Floats: as torch computes them, `a / 0` for a divisor of 0.
static double floorDivide(double a, double b, bool ints) {
  if (b == 0)
    return ints ? 0 : a / b;
  if (ints) // a - (a mod b) is a multiple of b: the quotient is exact
    return (a - remainder(a, b, true)) / b;
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0)))
    div -= 1;
  if (div == 0)
    return std::copysign(0.0, a / b);
  double floored = std::floor(div);
  return div - floored > 0.5 ? floored + 1 : floored;
}

static bool isIntResult(Operation *op) {
  return optgen::getElementTypeOrSelf(op->getResult(0).getType())
      .isInteger(64);
}

//===----------------------------------------------------------------------===//
// The evaluator
//===----------------------------------------------------------------------===//

namespace {

using ElementFn = llvm::function_ref<double(llvm::ArrayRef<double>)>;

class Evaluator {
public:
  /// `hypers` and `globals` may be null where none can appear (a `where`,
  /// a global).
  Evaluator(const HyperMap *hypers, llvm::ArrayRef<Value> states, int64_t step,
            const GlobalMap *globals = nullptr)
      : hypers(hypers), states(states), step(step), globals(globals) {}

  FailureOr<RuleResult> runRule(RuleOp rule, const Value &param,
                                const Value &grad);
  FailureOr<bool> runWhere(GroupOp group, llvm::ArrayRef<int64_t> shape);
  FailureOr<double> runGlobal(GlobalOp global,
                              llvm::ArrayRef<GlobalInput> inputs);

private:
  // Blocks and bookkeeping.
  LogicalResult runBlock(Block &block, std::vector<Value> &terminatorValues);
  LogicalResult evalOp(Operation &op);
  const Value *lookup(Operation *user, mlir::Value v);
  LogicalResult define(Operation *op, unsigned index, Value value);
  LogicalResult bindParamShape(Operation *at, Type paramType,
                               llvm::ArrayRef<int64_t> shape);
  LogicalResult checkType(Operation *op, const Value &value, Type declared);
  FailureOr<int64_t> axisOperand(Operation *op, mlir::Value axis,
                                 size_t rank);

  // One function per op family.
  LogicalResult evalElementwise(Operation *op, ElementFn fn);
  LogicalResult evalCast(CastOp op);
  LogicalResult evalConstant(ConstantOp op);
  LogicalResult evalHyper(HyperOp op);
  LogicalResult evalTupleGet(TupleGetOp op);
  LogicalResult evalState(StateOp op);
  LogicalResult evalShapeQuery(Operation *op);
  LogicalResult evalReduce(ReduceOp op);
  LogicalResult evalMatmul(MatmulOp op);
  LogicalResult evalTranspose(TransposeOp op);
  LogicalResult evalGemm(GemmOp op);
  LogicalResult evalIf(IfOp op);
  LogicalResult evalForTable(ForTableOp op);
  LogicalResult evalKernel(KernelOp op);
  LogicalResult evalGlobalValue(GlobalValueOp op);
  LogicalResult runRegionAsResults(Operation *op, Block &block,
                                   llvm::StringRef what);

  FailureOr<Value> hyperFromCaller(HyperOp op, const HyperValue &given);
  FailureOr<Value> hyperFromAttr(HyperOp op, Attribute attr, Type type);

  const HyperMap *hypers;
  llvm::ArrayRef<Value> states;
  int64_t step;
  const GlobalMap *globals;
  llvm::DenseMap<mlir::Value, Value> env;
  llvm::StringMap<int64_t> namedDims;
  std::vector<int64_t> paramShape;
  llvm::DenseMap<Operation *, unsigned> stateIndex;
};

} // namespace

/// The value of `v`, or null after an error at `user`. The pointer stays
/// valid until the next definition (the environment may grow and move).
const Value *Evaluator::lookup(Operation *user, mlir::Value v) {
  auto it = env.find(v);
  if (it != env.end())
    return &it->second;
  user->emitError("interpreter: an operand has no value (it is defined by an "
                  "op that has not run)");
  return nullptr;
}

LogicalResult Evaluator::define(Operation *op, unsigned index, Value value) {
  if (failed(checkType(op, value, op->getResult(index).getType())))
    return failure();
  env[op->getResult(index)] = std::move(value);
  return success();
}

LogicalResult Evaluator::bindParamShape(Operation *at, Type paramType,
                                        llvm::ArrayRef<int64_t> shape) {
  paramShape.assign(shape.begin(), shape.end());
  auto tensor = llvm::dyn_cast<SymbolicTensorType>(paramType);
  if (!tensor || tensor.getAnyRank())
    return success();
  if (tensor.getRank() != static_cast<int64_t>(shape.size()))
    return at->emitError("the rule takes parameters of type ")
           << describeType(paramType) << ", not of shape "
           << formatShape(shape);
  for (auto [dim, size] : llvm::zip(tensor.getDims(), shape)) {
    if (auto fixed = llvm::dyn_cast<mlir::IntegerAttr>(dim)) {
      if (fixed.getInt() != size)
        return at->emitError("the rule takes parameters of type ")
               << describeType(paramType) << ", not of shape "
               << formatShape(shape);
    } else if (auto name = llvm::dyn_cast<mlir::StringAttr>(dim)) {
      auto [it, inserted] = namedDims.try_emplace(name.getValue(), size);
      if (!inserted && it->second != size)
        return at->emitError("the rule's parameter type ")
               << describeType(paramType) << " names '" << name.getValue()
               << "' twice, but shape " << formatShape(shape)
               << " gives it two sizes";
    }
  }
  return success();
}

/// Checks a computed value against the type its op declares: the kind, the
/// element type, and every size the type fixes (static, or named and bound
/// by the parameter's shape). A failure here means the compiler's types and
/// the values disagree (or a shape mismatch only run time can see).
LogicalResult Evaluator::checkType(Operation *op, const Value &value,
                                   Type declared) {
  auto mismatch = [&]() {
    return op->emitError("interpreter: computed ")
           << describeValue(value) << " for a result of type "
           << describeType(declared);
  };
  if (llvm::isa<mlir::TupleType>(declared)) {
    if (value.kind != Value::Kind::Tuple)
      return mismatch();
    return success();
  }
  auto tensor = llvm::dyn_cast<SymbolicTensorType>(declared);
  if (!tensor) {
    if (!value.isScalar())
      return mismatch();
    return success();
  }
  if (!value.isTensor() ||
      static_cast<int64_t>(value.data.size()) != numElements(value.shape))
    return mismatch();
  if (tensor.getAnyRank()) {
    if (value.shape != paramShape)
      return mismatch() << ", which is the parameter's shape "
                        << formatShape(paramShape);
    return success();
  }
  if (tensor.getRank() != static_cast<int64_t>(value.shape.size()))
    return mismatch();
  for (auto [dim, size] : llvm::zip(tensor.getDims(), value.shape)) {
    if (auto fixed = llvm::dyn_cast<mlir::IntegerAttr>(dim)) {
      if (fixed.getInt() != size)
        return mismatch();
    } else if (auto name = llvm::dyn_cast<mlir::StringAttr>(dim)) {
      auto [it, inserted] = namedDims.try_emplace(name.getValue(), size);
      if (!inserted && it->second != size)
        return mismatch() << ", where '" << name.getValue() << "' is "
                          << it->second;
    }
  }
  return success();
}

/// The value of an i64 axis operand, counted from 0 for a tensor of `rank`.
FailureOr<int64_t> Evaluator::axisOperand(Operation *op, mlir::Value axis,
                                          size_t rank) {
  const Value *v = lookup(op, axis);
  if (!v)
    return failure();
  int64_t a = static_cast<int64_t>(v->data.at(0));
  int64_t r = static_cast<int64_t>(rank);
  if (a < -r || a >= r)
    return op->emitError("axis ") << a << " is out of range for a tensor of "
                                  << "rank " << r;
  return a < 0 ? a + r : a;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// Broadcasts the operands, applies `fn` to each tuple of elements in double
/// and rounds to the result's element type.
LogicalResult Evaluator::evalElementwise(Operation *op, ElementFn fn) {
  std::vector<const Value *> ins;
  std::vector<std::vector<int64_t>> shapes;
  bool anyTensor = false;
  for (mlir::Value operand : op->getOperands()) {
    const Value *v = lookup(op, operand);
    if (!v)
      return failure();
    if (!v->isTensor() && !v->isScalar())
      return op->emitError("interpreter: an elementwise operand is ")
             << describeValue(*v);
    ins.push_back(v);
    shapes.push_back(v->shape);
    anyTensor |= v->isTensor();
  }
  std::optional<std::vector<int64_t>> shape = broadcastShapes(shapes);
  if (!shape) {
    auto diag = op->emitError("shapes ");
    llvm::interleave(
        ins, [&](const Value *v) { diag << formatShape(v->shape); },
        [&] { diag << " and "; });
    return diag << " do not broadcast";
  }

  Type element = optgen::getElementTypeOrSelf(op->getResult(0).getType());
  int64_t n = numElements(*shape);
  std::vector<std::vector<int64_t>> strides;
  for (const Value *v : ins)
    strides.push_back(broadcastStrides(v->shape, *shape));

  std::vector<double> out(n), args(ins.size());
  std::vector<int64_t> index(shape->size(), 0), offsets(ins.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < ins.size(); ++k)
      args[k] = ins[k]->data[offsets[k]];
    double x = roundToType(fn(args), element);
    if (element.isInteger(64) && (!std::isfinite(x) || x != std::trunc(x)))
      return op->emitError("integer '")
             << op->getName() << "' gives " << x << ", which is no integer";
    out[i] = x;
    // Advance the multi-index (row-major) and every operand's offset.
    for (size_t d = shape->size(); d-- > 0;) {
      for (size_t k = 0; k < ins.size(); ++k)
        offsets[k] += strides[k][d];
      if (++index[d] < (*shape)[d])
        break;
      for (size_t k = 0; k < ins.size(); ++k)
        offsets[k] -= strides[k][d] * (*shape)[d];
      index[d] = 0;
    }
  }
  Value result = anyTensor ? Value::tensor(*shape, std::move(out), element)
                           : Value::scalar(out.at(0), element);
  return define(op, 0, std::move(result));
}

/// Converts to the result's element type: floats round (bf16/f16), i64
/// truncates toward zero, i1 is `x != 0`. The shape stays.
LogicalResult Evaluator::evalCast(CastOp op) {
  const Value *in = lookup(op, op.getInput());
  if (!in)
    return failure();
  Type element = optgen::getElementTypeOrSelf(op.getType());
  Value result = *in;
  result.type = element;
  for (double &x : result.data) {
    if (element.isInteger(64)) {
      if (!std::isfinite(x))
        return op.emitError("cannot convert ") << x << " to an integer";
      x = std::trunc(x);
    } else {
      x = roundToType(x, element);
    }
  }
  return define(op, 0, std::move(result));
}

//===----------------------------------------------------------------------===//
// Constants, hyperparameters, state, step, shape queries
//===----------------------------------------------------------------------===//

LogicalResult Evaluator::evalConstant(ConstantOp op) {
  Attribute attr = op.getValue();
  Type type = op.getType();
  double x;
  if (auto f = llvm::dyn_cast<mlir::FloatAttr>(attr))
    x = f.getValueAsDouble();
  else if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(attr))
    x = type.isInteger(1) ? static_cast<double>(i.getValue().getZExtValue())
                          : static_cast<double>(i.getValue().getSExtValue());
  else
    return op.emitError("interpreter: unsupported constant ") << attr;
  return define(op, 0, Value::scalar(roundToType(x, type), type));
}

/// A member of a hyperparameter's value as a value of `type` (f32 or i64).
static FailureOr<double> hyperNumber(HyperOp op, double x, Type type) {
  if (type.isInteger(64) && x != std::trunc(x))
    return op.emitError("hyperparameter '")
           << op.getName() << "' takes an int, not " << x;
  return roundToType(x, type);
}

FailureOr<Value> Evaluator::hyperFromCaller(HyperOp op,
                                            const HyperValue &given) {
  Type type = op.getType();
  if (auto tuple = llvm::dyn_cast<mlir::TupleType>(type)) {
    const auto *members = std::get_if<std::vector<double>>(&given);
    if (!members || members->size() != tuple.size())
      return op.emitError("hyperparameter '")
             << op.getName() << "' is a tuple of " << tuple.size()
             << " numbers";
    Value v;
    v.kind = Value::Kind::Tuple;
    v.type = type;
    for (auto [x, memberType] : llvm::zip(*members, tuple.getTypes())) {
      FailureOr<double> member = hyperNumber(op, x, memberType);
      if (failed(member))
        return failure();
      v.data.push_back(*member);
    }
    return v;
  }
  double x;
  if (const auto *d = std::get_if<double>(&given))
    x = *d;
  else if (const auto *i = std::get_if<int64_t>(&given))
    x = static_cast<double>(*i);
  else
    return op.emitError("hyperparameter '")
           << op.getName() << "' takes one number, not a tuple";
  FailureOr<double> number = hyperNumber(op, x, type);
  if (failed(number))
    return failure();
  return Value::scalar(*number, type);
}

FailureOr<Value> Evaluator::hyperFromAttr(HyperOp op, Attribute attr,
                                          Type type) {
  if (auto tuple = llvm::dyn_cast<mlir::TupleType>(type)) {
    auto array = llvm::dyn_cast<mlir::ArrayAttr>(attr);
    if (!array || array.size() != tuple.size())
      return op.emitError("interpreter: the default of '")
             << op.getName() << "' is not a tuple of " << tuple.size();
    Value v;
    v.kind = Value::Kind::Tuple;
    v.type = type;
    for (auto [member, memberType] : llvm::zip(array, tuple.getTypes())) {
      FailureOr<Value> m = hyperFromAttr(op, member, memberType);
      if (failed(m))
        return failure();
      v.data.push_back(m->data.at(0));
    }
    return v;
  }
  double x;
  if (auto f = llvm::dyn_cast<mlir::FloatAttr>(attr))
    x = f.getValueAsDouble();
  else if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(attr))
    x = static_cast<double>(i.getValue().getSExtValue());
  else
    return op.emitError("interpreter: unsupported default ") << attr;
  FailureOr<double> number = hyperNumber(op, x, type);
  if (failed(number))
    return failure();
  return Value::scalar(*number, type);
}

/// The caller's value, else the default; an error when there is neither.
LogicalResult Evaluator::evalHyper(HyperOp op) {
  FailureOr<Value> value = failure();
  const HyperValue *given = nullptr;
  if (hypers) {
    auto it = hypers->find(op.getName());
    if (it != hypers->end())
      given = &it->second;
  }
  if (given)
    value = hyperFromCaller(op, *given);
  else if (Attribute fallback = op.getDefaultValueAttr())
    value = hyperFromAttr(op, fallback, op.getType());
  else
    return op.emitError("hyperparameter '")
           << op.getName() << "' has no value: none is given and the rule "
           << "declares no default";
  if (failed(value))
    return failure();
  return define(op, 0, std::move(*value));
}

LogicalResult Evaluator::evalTupleGet(TupleGetOp op) {
  const Value *tuple = lookup(op, op.getTuple());
  if (!tuple)
    return failure();
  int64_t index = op.getIndex();
  if (tuple->kind != Value::Kind::Tuple || index < 0 ||
      index >= static_cast<int64_t>(tuple->data.size()))
    return op.emitError("interpreter: no member ")
           << index << " in " << describeValue(*tuple);
  return define(op, 0, Value::scalar(tuple->data[index], op.getType()));
}

/// The state's value at the start of the step: the caller's, or zeros of
/// the declared shape on the first step.
LogicalResult Evaluator::evalState(StateOp op) {
  Type element = optgen::getElementTypeOrSelf(op.getType());
  Value expected = Value::scalar(0.0, element);
  if (mlir::Value like = op.getLike()) {
    const Value *base = lookup(op, like);
    if (!base)
      return failure();
    std::vector<int64_t> shape = base->shape;
    if (mlir::Value axis = op.getAxis()) {
      FailureOr<int64_t> index = axisOperand(op, axis, shape.size());
      if (failed(index))
        return failure();
      shape[*index] = 1;
    }
    expected = Value::zeros(std::move(shape), element);
  }
  if (!states.empty()) {
    auto it = stateIndex.find(op);
    if (it == stateIndex.end() || it->second >= states.size())
      return op.emitError("state '") << op.getName() << "' is not given";
    const Value &given = states[it->second];
    if (given.kind != expected.kind || given.shape != expected.shape ||
        given.data.size() != expected.data.size())
      return op.emitError("state '")
             << op.getName() << "' is given as " << describeValue(given)
             << ", but it is " << describeValue(expected);
    expected.data = given.data;
    for (double &x : expected.data)
      x = roundToType(x, element);
  }
  return define(op, 0, std::move(expected));
}

/// dim, ndim and numel on concrete shapes.
LogicalResult Evaluator::evalShapeQuery(Operation *op) {
  const Value *in = lookup(op, op->getOperand(0));
  if (!in)
    return failure();
  if (!in->isTensor())
    return op->emitError("interpreter: a shape query of ")
           << describeValue(*in);
  Type i64 = op->getResult(0).getType();
  int64_t result;
  if (auto dim = llvm::dyn_cast<DimOp>(op)) {
    FailureOr<int64_t> axis = axisOperand(op, dim.getAxis(), in->shape.size());
    if (failed(axis))
      return failure();
    result = in->shape[*axis];
  } else if (llvm::isa<NDimOp>(op)) {
    result = static_cast<int64_t>(in->shape.size());
  } else {
    result = numElements(in->shape);
  }
  return define(op, 0, Value::scalar(static_cast<double>(result), i64));
}

//===----------------------------------------------------------------------===//
// Reductions and linear algebra
//===----------------------------------------------------------------------===//

LogicalResult Evaluator::evalReduce(ReduceOp op) {
  const Value *in = lookup(op, op.getInput());
  if (!in)
    return failure();
  if (!in->isTensor())
    return op.emitError("interpreter: reducing ") << describeValue(*in);
  Type element = optgen::getElementTypeOrSelf(op.getType());
  ReduceKind kind = op.getKind();

  if (!op.getAxis()) {
    Accumulator acc(kind);
    for (double x : in->data)
      acc.add(x);
    return define(op, 0,
                  Value::scalar(roundToType(acc.result(in->numel()), element),
                                element));
  }

  FailureOr<int64_t> axis = axisOperand(op, op.getAxis(), in->shape.size());
  if (failed(axis))
    return failure();
  llvm::ArrayRef<int64_t> shape = in->shape;
  int64_t outer = numElements(shape.take_front(*axis));
  int64_t n = shape[*axis];
  int64_t inner = numElements(shape.drop_front(*axis + 1));
  std::vector<int64_t> outShape = in->shape;
  outShape[*axis] = 1;
  std::vector<double> out(outer * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      Accumulator acc(kind);
      for (int64_t k = 0; k < n; ++k)
        acc.add(in->data[(o * n + k) * inner + i]);
      out[o * inner + i] = roundToType(acc.result(n), element);
    }
  return define(op, 0, Value::tensor(std::move(outShape), std::move(out),
                                     element));
}

/// alpha * op(a) @ op(b) + beta * c (no c: none), op transposing when
/// asked, summed in fp64 and rounded once to `element`: the semantics of
/// optgen.matmul and optgen.gemm alike. The shapes are checked by callers.
static Value product(const Value &a, bool transposeA, const Value &b,
                     bool transposeB, double alpha, const Value *c,
                     double beta, Type element) {
  auto at = [](const Value &m, bool transposed, int64_t i, int64_t j) {
    return transposed ? m.data[j * m.shape[1] + i] : m.data[i * m.shape[1] + j];
  };
  int64_t rows = a.shape[transposeA ? 1 : 0], inner = a.shape[transposeA ? 0 : 1];
  int64_t cols = b.shape[transposeB ? 0 : 1];
  std::vector<double> out(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < inner; ++k)
        acc += at(a, transposeA, i, k) * at(b, transposeB, k, j);
      double sum = alpha * acc + (c ? beta * c->data[i * cols + j] : 0.0);
      out[i * cols + j] = roundToType(sum, element);
    }
  return Value::tensor({rows, cols}, std::move(out), element);
}

LogicalResult Evaluator::evalMatmul(MatmulOp op) {
  const Value *a = lookup(op, op.getLhs()), *b = lookup(op, op.getRhs());
  if (!a || !b)
    return failure();
  if (!a->isTensor() || !b->isTensor() || a->shape.size() != 2 ||
      b->shape.size() != 2 || a->shape[1] != b->shape[0])
    return op.emitError("matrix product of ")
           << describeValue(*a) << " and " << describeValue(*b);
  Type element = optgen::getElementTypeOrSelf(op.getType());
  return define(op, 0, product(*a, false, *b, false, 1.0, nullptr, 0.0, element));
}

LogicalResult Evaluator::evalGemm(GemmOp op) {
  const Value *a = lookup(op, op.getA()), *b = lookup(op, op.getB());
  if (!a || !b)
    return failure();
  if (!a->isTensor() || !b->isTensor() || a->shape.size() != 2 ||
      b->shape.size() != 2)
    return op.emitError("matrix product of ")
           << describeValue(*a) << " and " << describeValue(*b);
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  // op(a) is rows x inner; op(b) is inner x cols.
  int64_t rows = a->shape[ta ? 1 : 0], inner = a->shape[ta ? 0 : 1];
  int64_t cols = b->shape[tb ? 0 : 1];
  if (b->shape[tb ? 1 : 0] != inner)
    return op.emitError("matrix product of ")
           << describeValue(*a) << (ta ? " transposed" : "") << " and "
           << describeValue(*b) << (tb ? " transposed" : "");
  double alpha = 1, beta = 0;
  const Value *c = nullptr;
  if (op.getAlpha()) {
    const Value *scale = lookup(op, op.getAlpha());
    if (!scale)
      return failure();
    alpha = scale->data[0];
  }
  if (op.getC()) {
    const Value *scale = lookup(op, op.getBeta());
    c = lookup(op, op.getC());
    if (!scale || !c)
      return failure();
    if (!c->isTensor() || c->shape != std::vector<int64_t>{rows, cols})
      return op.emitError("accumulates ") << describeValue(*c);
    beta = scale->data[0];
  }
  Type element = optgen::getElementTypeOrSelf(op.getType());
  return define(op, 0, product(*a, ta, *b, tb, alpha, c, beta, element));
}

LogicalResult Evaluator::evalTranspose(TransposeOp op) {
  const Value *in = lookup(op, op.getInput());
  if (!in)
    return failure();
  if (!in->isTensor() || in->shape.size() != 2)
    return op.emitError("transpose of ") << describeValue(*in);
  int64_t rows = in->shape[0], cols = in->shape[1];
  std::vector<double> out(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[j * rows + i] = in->data[i * cols + j];
  return define(op, 0, Value::tensor({cols, rows}, std::move(out), in->type));
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

LogicalResult Evaluator::evalIf(IfOp op) {
  const Value *condition = lookup(op, op.getCondition());
  if (!condition)
    return failure();
  mlir::Region &region = condition->data.at(0) != 0 ? op.getThenRegion()
                                                    : op.getElseRegion();
  return runRegionAsResults(op, region.front(), "branch");
}

LogicalResult Evaluator::evalForTable(ForTableOp op) {
  const Value *count = lookup(op, op.getCount());
  if (!count)
    return failure();
  auto tableType = llvm::cast<mlir::ShapedType>(op.getTable().getType());
  int64_t rows = tableType.getDimSize(0), rowLength = tableType.getDimSize(1);
  int64_t iterations =
      std::clamp<int64_t>(static_cast<int64_t>(count->data.at(0)), 0, rows);
  llvm::SmallVector<double> table =
      llvm::to_vector(op.getTable().getValues<double>());

  std::vector<Value> carried;
  for (mlir::Value init : op.getInits()) {
    const Value *v = lookup(op, init);
    if (!v)
      return failure();
    carried.push_back(*v);
  }
  Block &body = op.getBody().front();
  Type f32 = mlir::Float32Type::get(op.getContext());
  for (int64_t row = 0; row < iterations; ++row) {
    for (int64_t k = 0; k < rowLength; ++k) {
      // Generated code holds the coefficients as f32.
      double coefficient = static_cast<float>(table[row * rowLength + k]);
      env[body.getArgument(k)] = Value::scalar(coefficient, f32);
    }
    for (auto [k, v] : llvm::enumerate(carried))
      env[body.getArgument(rowLength + k)] = std::move(v);
    std::vector<Value> next;
    if (failed(runBlock(body, next)))
      return failure();
    if (next.size() != carried.size())
      return op.emitError("interpreter: the body yields ")
             << next.size() << " values for " << carried.size()
             << " loop-carried values";
    carried = std::move(next);
  }
  for (auto [i, v] : llvm::enumerate(carried))
    if (failed(define(op, i, std::move(v))))
      return failure();
  return success();
}

/// A fused kernel computes what its body's ops compute one by one: run them
/// (they read values from above) and give what the body yields.
LogicalResult Evaluator::evalKernel(KernelOp op) {
  return runRegionAsResults(op, op.getBody().front(), "kernel");
}

LogicalResult Evaluator::evalGlobalValue(GlobalValueOp op) {
  if (globals) {
    auto it = globals->find(op.getGlobal());
    if (it != globals->end())
      return define(op, 0, Value::scalar(it->second, op.getType()));
  }
  return op.emitError("interpreter: no value is given for global '")
         << op.getGlobal() << "'";
}

/// Runs `block` and defines `op`'s results as what it yields.
LogicalResult Evaluator::runRegionAsResults(Operation *op, Block &block,
                                            llvm::StringRef what) {
  std::vector<Value> results;
  if (failed(runBlock(block, results)))
    return failure();
  if (results.size() != op->getNumResults())
    return op->emitError("interpreter: the ")
           << what << " yields " << results.size() << " values for "
           << op->getNumResults() << " results";
  for (auto [i, v] : llvm::enumerate(results))
    if (failed(define(op, i, std::move(v))))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

LogicalResult Evaluator::evalOp(Operation &op) {
  using Args = llvm::ArrayRef<double>;
  auto unary = [&](Operation *o, double (*fn)(double)) {
    return evalElementwise(o, [fn](Args x) { return fn(x[0]); });
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      // Elementwise arithmetic and logic.
      .Case([&](AddOp o) {
        return evalElementwise(o, [](Args x) { return x[0] + x[1]; });
      })
      .Case([&](SubOp o) {
        return evalElementwise(o, [](Args x) { return x[0] - x[1]; });
      })
      .Case([&](MulOp o) {
        return evalElementwise(o, [](Args x) { return x[0] * x[1]; });
      })
      .Case([&](DivOp o) {
        return evalElementwise(o, [](Args x) { return x[0] / x[1]; });
      })
      .Case([&](PowOp o) {
        return evalElementwise(o,
                               [](Args x) { return std::pow(x[0], x[1]); });
      })
      .Case([&](ModOp o) {
        bool ints = isIntResult(o);
        return evalElementwise(
            o, [ints](Args x) { return remainder(x[0], x[1], ints); });
      })
      .Case([&](FloorDivOp o) {
        bool ints = isIntResult(o);
        return evalElementwise(
            o, [ints](Args x) { return floorDivide(x[0], x[1], ints); });
      })
      .Case([&](MinOp o) {
        return evalElementwise(o, [](Args x) { return nanMin(x[0], x[1]); });
      })
      .Case([&](MaxOp o) {
        return evalElementwise(o, [](Args x) { return nanMax(x[0], x[1]); });
      })
      .Case([&](AndOp o) {
        return evalElementwise(
            o, [](Args x) { return double(x[0] != 0 && x[1] != 0); });
      })
      .Case([&](OrOp o) {
        return evalElementwise(
            o, [](Args x) { return double(x[0] != 0 || x[1] != 0); });
      })
      .Case([&](CmpOp o) {
        CmpPredicate predicate = o.getPredicate();
        return evalElementwise(
            o, [&](Args x) { return applyCmp(predicate, x[0], x[1]); });
      })
      .Case([&](NegOp o) { return unary(o, [](double x) { return -x; }); })
      .Case([&](NotOp o) {
        return unary(o, [](double x) { return double(x == 0); });
      })
      .Case([&](SqrtOp o) {
        return unary(o, [](double x) { return std::sqrt(x); });
      })
      .Case([&](RsqrtOp o) {
        return unary(o, [](double x) { return 1.0 / std::sqrt(x); });
      })
      .Case([&](AbsOp o) {
        return unary(o, [](double x) { return std::fabs(x); });
      })
      .Case([&](SignOp o) { return unary(o, sign); })
      .Case([&](FloorOp o) {
        return unary(o, [](double x) { return std::floor(x); });
      })
      .Case([&](ExpOp o) {
        return unary(o, [](double x) { return std::exp(x); });
      })
      .Case([&](LogOp o) {
        return unary(o, [](double x) { return std::log(x); });
      })
      .Case([&](LerpOp o) {
        return evalElementwise(
            o, [](Args x) { return x[0] + x[2] * (x[1] - x[0]); });
      })
      .Case([&](ClampOp o) {
        return evalElementwise(
            o, [](Args x) { return nanMin(nanMax(x[0], x[1]), x[2]); });
      })
      .Case([&](SelectOp o) {
        return evalElementwise(o,
                               [](Args x) { return x[0] != 0 ? x[1] : x[2]; });
      })
      .Case([&](CastOp o) { return evalCast(o); })
      // Values from outside the math.
      .Case([&](ConstantOp o) { return evalConstant(o); })
      .Case([&](HyperOp o) { return evalHyper(o); })
      .Case([&](TupleGetOp o) { return evalTupleGet(o); })
      .Case([&](StateOp o) { return evalState(o); })
      .Case([&](GlobalValueOp o) { return evalGlobalValue(o); })
      .Case([&](StepOp o) {
        return define(o, 0,
                      Value::scalar(static_cast<double>(step), o.getType()));
      })
      .Case<DimOp, NDimOp, NumelOp>(
          [&](Operation *o) { return evalShapeQuery(o); })
      // Reductions and linear algebra.
      .Case([&](ReduceOp o) { return evalReduce(o); })
      .Case([&](MatmulOp o) { return evalMatmul(o); })
      .Case([&](TransposeOp o) { return evalTranspose(o); })
      .Case([&](GemmOp o) { return evalGemm(o); })
      // Control flow.
      .Case([&](IfOp o) { return evalIf(o); })
      .Case([&](ForTableOp o) { return evalForTable(o); })
      .Case([&](KernelOp o) { return evalKernel(o); })
      .Default([&](Operation *o) {
        return o->emitError("the reference interpreter does not run '")
               << o->getName() << "'";
      });
}

/// Runs the ops of `block` in order; the terminator's (yield's or update's)
/// operand values go to `terminatorValues`.
LogicalResult Evaluator::runBlock(Block &block,
                                  std::vector<Value> &terminatorValues) {
  for (Operation &op : block) {
    if (llvm::isa<YieldOp, UpdateOp>(op)) {
      for (mlir::Value operand : op.getOperands()) {
        const Value *v = lookup(&op, operand);
        if (!v)
          return failure();
        terminatorValues.push_back(*v);
      }
      return success();
    }
    if (failed(evalOp(op)))
      return failure();
  }
  return block.getParentOp()->emitError(
      "interpreter: a block ends without 'optgen.yield' or 'optgen.update'");
}

FailureOr<RuleResult> Evaluator::runRule(RuleOp rule, const Value &param,
                                         const Value &grad) {
  Block &block = rule.getBlock();
  if (block.getNumArguments() != 2)
    return rule.emitError("interpreter: a rule takes two block arguments");
  if (!param.isTensor() || param.numel() != numElements(param.shape))
    return rule.emitError("the parameter is ")
           << describeValue(param) << " with " << param.numel()
           << " elements";
  if (!grad.isTensor() || grad.shape != param.shape ||
      grad.numel() != param.numel())
    return rule.emitError("the gradient is ")
           << describeValue(grad) << " with " << grad.numel()
           << " elements, but the parameter is " << describeValue(param);
  if (step < 1)
    return rule.emitError("the step count starts at 1, not ") << step;
  Type paramType = rule.getParam().getType();
  if (failed(bindParamShape(rule, paramType, param.shape)))
    return failure();

  llvm::SmallVector<StateOp> decls = getRuleStates(rule);
  if (!states.empty() && states.size() != decls.size())
    return rule.emitError("rule '")
           << rule.getSymName() << "' has " << decls.size()
           << " states, but " << states.size() << " are given";
  for (auto [i, decl] : llvm::enumerate(decls))
    stateIndex[decl] = i;

  Type element = optgen::getElementTypeOrSelf(paramType);
  env[rule.getParam()] = param;
  env[rule.getGrad()] = grad;
  env[rule.getParam()].type = element;
  env[rule.getGrad()].type = element;

  std::vector<Value> updated;
  if (failed(runBlock(block, updated)))
    return failure();
  auto update = llvm::cast<UpdateOp>(block.getTerminator());
  if (updated.size() != decls.size() + 1)
    return update.emitError("interpreter: 'optgen.update' gives ")
           << updated.size() - 1 << " states for " << decls.size();

  RuleResult result;
  result.param = std::move(updated[0]);
  if (!result.param.isTensor() || result.param.shape != param.shape)
    return update.emitError("the new parameter is ")
           << describeValue(result.param) << ", but the parameter is "
           << describeValue(param);
  for (double &x : result.param.data)
    x = roundToType(x, element);
  for (auto [decl, value] : llvm::zip(decls, llvm::drop_begin(updated))) {
    const Value &before = env[decl.getResult()];
    if (value.kind != before.kind || value.shape != before.shape)
      return update.emitError("gives state '")
             << decl.getName() << "' " << describeValue(value)
             << ", but it is " << describeValue(before);
    Value next = std::move(value);
    next.type = before.type;
    for (double &x : next.data)
      x = roundToType(x, next.type);
    result.states.push_back(std::move(next));
  }
  return result;
}

FailureOr<bool> Evaluator::runWhere(GroupOp group,
                                    llvm::ArrayRef<int64_t> shape) {
  if (group.getPredicate().empty())
    return true;
  Block &block = group.getPredicate().front();
  if (block.getNumArguments() != 1)
    return group.emitError("interpreter: 'where' takes one argument");
  Type paramType = block.getArgument(0).getType();
  if (failed(bindParamShape(group, paramType, shape)))
    return failure();
  env[block.getArgument(0)] = Value::zeros(
      std::vector<int64_t>(shape.begin(), shape.end()),
      optgen::getElementTypeOrSelf(paramType));
  std::vector<Value> yielded;
  if (failed(runBlock(block, yielded)))
    return failure();
  if (yielded.size() != 1 || !yielded[0].isScalar())
    return group.emitError("interpreter: 'where' must yield one condition");
  return yielded[0].data.at(0) != 0;
}

FailureOr<double> Evaluator::runGlobal(GlobalOp global,
                                       llvm::ArrayRef<GlobalInput> inputs) {
  FailureOr<llvm::DenseMap<Operation *, GlobalPart>> parts =
      classifyGlobalBody(global);
  if (failed(parts))
    return failure();
  Block &block = global.getBlock();
  auto partOf = [&](Operation &op) { return parts->lookup(&op); };
  // Constants once; then each parameter's math and every element of it
  // into the reductions, parameter after parameter; then the finish.
  for (Operation &op : block.without_terminator())
    if (partOf(op) == GlobalPart::Constant && failed(evalOp(op)))
      return failure();
  llvm::SmallVector<ReduceParamsOp> reductions =
      llvm::to_vector(block.getOps<ReduceParamsOp>());
  llvm::SmallVector<Accumulator> accumulators;
  for (ReduceParamsOp reduce : reductions)
    accumulators.emplace_back(reduce.getKind());
  Type f32 = mlir::Float32Type::get(global.getContext());
  for (const GlobalInput &input : inputs) {
    if (!input.param->isTensor() || input.grad->shape != input.param->shape)
      return global.emitError("interpreter: a parameter of ")
             << describeValue(*input.param) << " with a gradient of "
             << describeValue(*input.grad);
    paramShape = input.param->shape;
    env[block.getArgument(0)] = *input.param;
    env[block.getArgument(1)] = *input.grad;
    env[block.getArgument(0)].type = f32;
    env[block.getArgument(1)].type = f32;
    for (Operation &op : block.without_terminator())
      if (partOf(op) == GlobalPart::PerParameter && failed(evalOp(op)))
        return failure();
    for (auto [reduce, acc] : llvm::zip(reductions, accumulators)) {
      const Value *in = lookup(reduce, reduce.getInput());
      if (!in)
        return failure();
      for (double x : in->data)
        acc.add(x);
    }
  }
  for (auto [reduce, acc] : llvm::zip(reductions, accumulators))
    if (failed(define(reduce, 0,
                      Value::scalar(roundToType(acc.result(1), reduce.getType()),
                                    reduce.getType()))))
      return failure();
  for (Operation &op : block.without_terminator())
    if (partOf(op) == GlobalPart::Finish && !llvm::isa<ReduceParamsOp>(op) &&
        failed(evalOp(op)))
      return failure();
  const Value *value = lookup(block.getTerminator(), global.getResult());
  if (!value)
    return failure();
  return value->data.at(0);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

FailureOr<RuleResult> evaluateRule(RuleOp rule, const Value &param,
                                   const Value &grad,
                                   llvm::ArrayRef<Value> states, int64_t step,
                                   const HyperMap &hypers,
                                   const GlobalMap &globals) {
  Evaluator evaluator(&hypers, states, step, &globals);
  return evaluator.runRule(rule, param, grad);
}

FailureOr<GlobalMap> evaluateGlobals(OptimizerOp optimizer,
                                     llvm::ArrayRef<GlobalInput> inputs) {
  GlobalMap values;
  for (GlobalOp global : optimizer.getBlock().getOps<GlobalOp>()) {
    Evaluator evaluator(nullptr, {}, 1);
    FailureOr<double> value = evaluator.runGlobal(global, inputs);
    if (failed(value))
      return failure();
    values[global.getSymName()] = *value;
  }
  return values;
}

LogicalResult stepRule(RuleOp rule, ParamState &state,
                       llvm::ArrayRef<double> grad, const HyperMap &hypers,
                       const GlobalMap &globals) {
  Type element = optgen::getElementTypeOrSelf(rule.getParam().getType());
  Value param = Value::tensor(state.shape, state.param, element);
  Value gradient = Value::tensor(
      state.shape, std::vector<double>(grad.begin(), grad.end()), element);
  FailureOr<RuleResult> result = evaluateRule(rule, param, gradient,
                                              state.states, state.step + 1,
                                              hypers, globals);
  if (failed(result))
    return failure();
  ++state.step;
  state.param = std::move(result->param.data);
  state.states = std::move(result->states);
  return success();
}

FailureOr<bool> evaluateWhere(GroupOp group, llvm::ArrayRef<int64_t> shape) {
  Evaluator evaluator(nullptr, {}, 1);
  return evaluator.runWhere(group, shape);
}

HyperMap groupHypers(GroupOp group) {
  HyperMap result;
  for (mlir::NamedAttribute setting : group.getSettings()) {
    Attribute attr = setting.getValue();
    auto number = [](Attribute a) -> std::optional<double> {
      if (auto f = llvm::dyn_cast<mlir::FloatAttr>(a))
        return f.getValueAsDouble();
      if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(a))
        return static_cast<double>(i.getValue().getSExtValue());
      return std::nullopt;
    };
    if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(attr)) {
      result[setting.getName()] = HyperValue(i.getValue().getSExtValue());
    } else if (auto array = llvm::dyn_cast<mlir::ArrayAttr>(attr)) {
      std::vector<double> members;
      for (Attribute member : array)
        members.push_back(number(member).value_or(std::nan("")));
      result[setting.getName()] = HyperValue(std::move(members));
    } else if (std::optional<double> x = number(attr)) {
      result[setting.getName()] = HyperValue(*x);
    }
  }
  return result;
}

} // namespace optgen::interp
