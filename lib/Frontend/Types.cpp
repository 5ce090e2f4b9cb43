//===- Types.cpp - The types a spec writes, and conversions ---------------===//
//
// dtype and hyperparameter annotations, a default's type, and the
// conversions an operand or an assignment needs. What an op's result type
// is, the dialect's type rules say (TypeRules.cpp, through inferType).
//
//===----------------------------------------------------------------------===//

#include "MLIRGenImpl.h"

namespace optgen::mlirgen {

FailureOr<Type> MLIRGenImpl::resolveDType(const TypeAnnotation &type) {
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

FailureOr<Type> MLIRGenImpl::resolveHyperType(const TypeAnnotation &type) {
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

FailureOr<Type> MLIRGenImpl::hyperTypeOf(const ConstValue &value, SMRange at) {
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

FailureOr<Attribute> MLIRGenImpl::hyperAttr(const ConstValue &value, Type type,
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
    return Attribute(
        builder.getI64IntegerAttr(static_cast<int64_t>(value.number)));
  }
  return Attribute(builder.getF32FloatAttr(static_cast<float>(value.number)));
}

Value MLIRGenImpl::requireTensor(Value value, const Expr &expr,
                                 StringRef callee) {
  if (value && !isa<SymbolicTensorType>(value.getType())) {
    error(expr.getRange()) << "'" << callee << "' needs a tensor, but got "
                           << describeType(value.getType());
    return {};
  }
  return value;
}

Value MLIRGenImpl::convertDType(Value value, Type elementType, SMLoc at) {
  Type target = elementType;
  if (auto tensor = dyn_cast<SymbolicTensorType>(value.getType()))
    target = tensor.withElementType(elementType);
  if (target == value.getType())
    return value;
  return builder.create<CastOp>(loc(at), target, value);
}

} // namespace optgen::mlirgen
