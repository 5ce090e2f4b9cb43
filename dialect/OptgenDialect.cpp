//===- OptgenDialect.cpp - The optgen dialect -----------------------------===//

#include "dialect/OptgenDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace optgen;

#include "dialect/OptgenDialect.cpp.inc"
#include "dialect/OptgenEnums.cpp.inc"

void OptgenDialect::initialize() {
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "dialect/OptgenOps.cpp.inc"
      >();
}

Operation *OptgenDialect::materializeConstant(OpBuilder &builder,
                                              Attribute value, Type type,
                                              Location loc) {
  auto typed = dyn_cast<TypedAttr>(value);
  if (!typed || typed.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, typed);
}
