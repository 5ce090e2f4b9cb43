//===- OptgenDialect.cpp - The optgen dialect -----------------------------===//

#include "dialect/OptgenDialect.h"
#include "dialect/TargetDescription.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace optgen;

#include "dialect/OptgenDialect.cpp.inc"
#include "dialect/OptgenEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialect/OptgenAttrs.cpp.inc"

void OptgenDialect::initialize() {
  registerTypes();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/OptgenAttrs.cpp.inc"
      >();
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

/// That `buffer` (entry `index` of `op`'s attribute `list`) names memory
/// its rule has: the parameter or the gradient (0), one of the rule's
/// states, or a slot of its 'optgen.workspace'. Printers index by it.
static LogicalResult verifyBufferIndex(Operation *op, BufferAttr buffer,
                                       size_t index, StringRef list) {
  auto rule = op->getParentOfType<RuleOp>();
  if (!rule)
    return op->emitOpError("has '")
           << list << "' outside a rule: buffers are a rule's memory";
  int64_t count = 1;
  std::string what = "the parameter and the gradient are one buffer each, "
                     "index 0";
  if (buffer.getKind() == BufferKind::state) {
    count = static_cast<int64_t>(getRuleStates(rule).size());
    what = "the rule has " + std::to_string(count) + " states";
  } else if (buffer.getKind() == BufferKind::workspace) {
    auto slots = rule->getAttrOfType<ArrayAttr>(kWorkspaceAttr);
    count = slots ? static_cast<int64_t>(slots.size()) : 0;
    what = "the rule's 'optgen.workspace' has " + std::to_string(count) +
           " slots";
  }
  if (buffer.getIndex() < 0 || buffer.getIndex() >= count)
    return op->emitOpError("'")
           << list << "' entry " << index << " is " << buffer << ", but "
           << what;
  return success();
}

/// The dialect's attributes on other ops: the memory plan of an executable
/// rule (optgen-assign-buffers), the module's target description.
LogicalResult OptgenDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kBuffersAttr) {
    auto buffers = dyn_cast<ArrayAttr>(attr.getValue());
    // A reduction's buffer is its accumulator's; every other op has one per
    // result (`unit` for a scalar, or a workspace slot where a device keeps
    // it: optgen-assign-device-scalars).
    size_t expected = isa<ReduceOp>(op) ? 1 : op->getNumResults();
    if (!buffers || buffers.size() != expected)
      return op->emitOpError("'optgen.buffers' needs one buffer per result");
    for (auto [index, buffer] : llvm::enumerate(buffers)) {
      bool scalar = !isa<ReduceOp>(op) &&
                    !isa<SymbolicTensorType>(op->getResult(index).getType());
      auto memory = dyn_cast<BufferAttr>(buffer);
      bool valid = scalar ? isa<UnitAttr>(buffer) ||
                                (memory &&
                                 memory.getKind() == BufferKind::workspace)
                          : bool(memory);
      if (!valid)
        return op->emitOpError("'optgen.buffers' entry ")
               << index << " must be "
               << (scalar ? "unit or a workspace #optgen.buffer"
                          : "a #optgen.buffer");
      if (memory &&
          failed(verifyBufferIndex(op, memory, index, kBuffersAttr)))
        return failure();
    }
    return success();
  }
  if (name == kNextBuffersAttr) {
    // A double-buffered loop: per carried value, unit or the workspace slot
    // each iteration makes the next value in, exchanged with the carried
    // value's own slot at the end of the iteration.
    auto loop = dyn_cast<ForTableOp>(op);
    auto next = dyn_cast<ArrayAttr>(attr.getValue());
    if (!loop || !next || next.size() != loop.getNumResults())
      return op->emitOpError("'optgen.next_buffers' is a table loop's list "
                             "of one entry per carried value");
    for (auto [index, entry] : llvm::enumerate(next)) {
      if (isa<UnitAttr>(entry))
        continue;
      auto buffer = dyn_cast<BufferAttr>(entry);
      BufferAttr own = getBuffer(loop.getResult(index));
      if (!buffer || buffer.getKind() != BufferKind::workspace || !own ||
          own.getKind() != BufferKind::workspace ||
          own.getIndex() == buffer.getIndex())
        return op->emitOpError("'optgen.next_buffers' entry ")
               << index
               << " must be unit or a workspace slot other than the carried "
                  "value's";
      if (failed(verifyBufferIndex(op, buffer, index, kNextBuffersAttr)))
        return failure();
    }
    return success();
  }
  if (name == kWorkspaceAttr) {
    auto slots = dyn_cast<ArrayAttr>(attr.getValue());
    if (!isa<RuleOp>(op) || !slots ||
        !llvm::all_of(slots, [](Attribute slot) { return isa<SlotAttr>(slot); }))
      return op->emitOpError("'optgen.workspace' is a rule's list of "
                             "#optgen.slot");
    return success();
  }
  if (name == kMathAttr) {
    if (!isa<OptimizerOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitOpError("'")
             << kMathAttr << "' is an optimizer's fingerprint of its math, a "
             << "string";
    return success();
  }
  if (name == kTargetAttr) {
    if (!isa<ModuleOp>(op) || !isa<TargetAttr>(attr.getValue()))
      return op->emitOpError("'")
             << kTargetAttr << "' is a module's #optgen.target";
    return success();
  }
  if (name == kOnHostAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("'") << kOnHostAttr << "' is a unit attribute";
    if (!op->getParentOfType<RuleOp>() || op->getParentOfType<KernelOp>() ||
        op->getNumResults() != 1 ||
        isa<SymbolicTensorType>(op->getResult(0).getType()))
      return op->emitOpError("'")
             << kOnHostAttr
             << "' marks a scalar of a rule outside its kernels";
    // What the host computes it computes from: a scalar of the device
    // would have to come back first.
    for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
      Operation *def = operand.getDefiningOp();
      if (def && !isa<SymbolicTensorType>(operand.getType()) &&
          !def->hasAttr(kOnHostAttr))
        return op->emitOpError("is computed on the host from a value that "
                               "is not: operand #")
               << index << ", of '" << def->getName() << "'";
    }
    return success();
  }
  if (name == kSpecializesAttr) {
    if (!isa<RuleOp>(op) || !isa<FlatSymbolRefAttr>(attr.getValue()))
      return op->emitOpError("'optgen.specializes' names the rule a rule "
                             "copies");
    return success();
  }
  return op->emitOpError("unknown optgen attribute '") << name << "'";
}
