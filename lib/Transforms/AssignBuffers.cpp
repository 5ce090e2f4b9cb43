//===- AssignBuffers.cpp - The memory of every tensor value of a rule -----===//
//
// One linear scan over a rule in program order (nested regions included):
// each value's live range ends at the last op of its own block that uses it,
// a use inside a nested region counting as a use by the whole region op, so
// a value read inside a loop stays live for the whole loop.
//
//===----------------------------------------------------------------------===//

#include "optgen/Transforms/Passes.h"

#include "dialect/TargetDescription.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <functional>

namespace optgen {
#define GEN_PASS_DEF_ASSIGNBUFFERS
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

bool isTensor(Value value) {
  return isa<SymbolicTensorType>(value.getType());
}

/// Whether `type` has only dimensions fixed up to the shape's symbols (no
/// `?`), so that equal types mean equal extents.
bool hasKnownDims(SymbolicTensorType type) {
  return llvm::none_of(type.getDims(),
                       [](Attribute d) { return isa<UnitAttr>(d); });
}

class Assigner {
public:
  Assigner(RuleOp rule, bool narrowStorage)
      : rule(rule), builder(rule.getContext()), narrowStorage(narrowStorage) {}

  LogicalResult run() {
    numberOps();
    home[rule.getParam()] = buffer(BufferKind::param, 0);
    home[rule.getGrad()] = buffer(BufferKind::grad, 0);
    for (auto [index, state] : llvm::enumerate(getRuleStates(rule)))
      if (isTensor(state))
        home[state] = buffer(BufferKind::state, index);
    if (failed(assignBlock(rule.getBlock())))
      return failure();
    SmallVector<Attribute> workspace(slots.begin(), slots.end());
    rule->setAttr(kWorkspaceAttr, builder.getArrayAttr(workspace));
    return success();
  }

private:
  RuleOp rule;
  Builder builder;
  /// bf16 and f16 tensors stored as their type (device targets).
  bool narrowStorage;
  llvm::DenseMap<Operation *, unsigned> position, lastPosition;
  llvm::DenseMap<Value, BufferAttr> home;
  /// Values an `if` yields, and the result buffer they are made in (no copy
  /// at the end of the branch), where their own op allocates.
  llvm::DenseMap<Value, BufferAttr> wanted;
  SmallVector<SlotAttr> slots;      ///< each slot's extent and storage
  SmallVector<unsigned> slotFreeAt; ///< a slot is free after this position
  unsigned now = 0;

  BufferAttr buffer(BufferKind kind, int64_t index) {
    return BufferAttr::get(rule.getContext(), kind, index);
  }

  /// Numbers ops in program order; lastPosition is the last number inside
  /// an op (itself when it has no regions).
  void numberOps() {
    unsigned counter = 0;
    std::function<void(Block &)> number = [&](Block &block) {
      for (Operation &op : block) {
        position[&op] = counter++;
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            number(inner);
        lastPosition[&op] = counter - 1;
      }
    };
    number(rule.getBlock());
  }

  /// The last position at which `value` is read, a read inside a region op
  /// counting as the whole region op's.
  unsigned lastUse(Value value) {
    Block *block = value.getParentBlock();
    unsigned last = isa<BlockArgument>(value)
                        ? 0
                        : position.lookup(value.getDefiningOp());
    for (Operation *user : value.getUsers())
      if (Operation *inBlock = block->findAncestorOpInBlock(*user))
        last = std::max(last, lastPosition.lookup(inBlock));
    return last;
  }

  /// Keeps workspace `slot` busy through position `until`.
  void hold(int64_t slot, unsigned until) {
    slotFreeAt[slot] = std::max(slotFreeAt[slot], until);
  }

  /// A free slot of `extent` storing `storage` (or a new one), busy
  /// through `until`.
  BufferAttr allocate(SymbolicTensorType extent, Type storage,
                      unsigned until) {
    auto type = SlotAttr::get(
        rule.getContext(), extent.withElementType(builder.getF32Type()),
        storage);
    for (auto [slot, slotType] : llvm::enumerate(slots))
      if (slotType == type && slotFreeAt[slot] < now) {
        slotFreeAt[slot] = std::max(now, until);
        return buffer(BufferKind::workspace, slot);
      }
    slots.push_back(type);
    slotFreeAt.push_back(std::max(now, until));
    return buffer(BufferKind::workspace, slots.size() - 1);
  }

  /// The type tensor `value` is stored as in the workspace: f32, or its
  /// own 16-bit type with narrow storage.
  Type storageOf(Value value) {
    Type element = getElementTypeOrSelf(value.getType());
    if (narrowStorage && (element.isBF16() || element.isF16()))
      return element;
    return builder.getF32Type();
  }

  /// The slot type of tensor `value`.
  SlotAttr slotOf(Value value) {
    auto type = cast<SymbolicTensorType>(value.getType());
    return SlotAttr::get(rule.getContext(),
                         type.withElementType(builder.getF32Type()),
                         storageOf(value));
  }

  /// The buffer an `if` reserved for `value`, if it wants it there and it
  /// fits exactly (a slot of its type, extents known).
  BufferAttr wantedBuffer(Value value) {
    BufferAttr want = wanted.lookup(value);
    if (!want || want.getKind() != BufferKind::workspace ||
        slots[want.getIndex()] != slotOf(value) ||
        !hasKnownDims(cast<SymbolicTensorType>(value.getType())))
      return {};
    hold(want.getIndex(), lastUse(value));
    return want;
  }

  /// A slot for tensor `value`, of its storage type: the one an `if`
  /// reserved for it, or a free one.
  BufferAttr allocate(Value value) {
    if (BufferAttr want = wantedBuffer(value))
      return want;
    auto type = cast<SymbolicTensorType>(value.getType());
    return allocate(type, storageOf(value), lastUse(value));
  }

  /// Whether `value` may live in `buffer`: any parameter or state (their
  /// memory converts), a workspace slot only of its storage type.
  bool storesAs(Value value, BufferAttr buffer) {
    return buffer.getKind() != BufferKind::workspace ||
           slots[buffer.getIndex()].getStorage() == storageOf(value);
  }

  /// `value` takes over `from`'s buffer.
  void share(Value value, BufferAttr from) {
    home[value] = from;
    if (from.getKind() == BufferKind::workspace)
      hold(from.getIndex(), lastUse(value));
  }

  bool isWorkspace(Value value) {
    BufferAttr b = home.lookup(value);
    return b && b.getKind() == BufferKind::workspace;
  }

  /// Whether the update stores `value` into `storage`'s buffer.
  bool isFinalValueOf(Value value, BufferAttr storage) {
    auto update = cast<UpdateOp>(rule.getBlock().getTerminator());
    if (storage.getKind() == BufferKind::param)
      return update.getParam() == value;
    if (storage.getKind() != BufferKind::state)
      return false;
    return update.getStates()[storage.getIndex()] == value &&
           value.getParentBlock() == &rule.getBlock();
  }

  /// Whether kernel result `result` may be written over input `input`.
  bool mayOverwrite(Value input, Value result, Operation *kernel) {
    BufferAttr from = home.lookup(input);
    auto inType = cast<SymbolicTensorType>(input.getType());
    auto outType = cast<SymbolicTensorType>(result.getType());
    if (!from || from.getKind() == BufferKind::grad ||
        inType.getAnyRank() != outType.getAnyRank() ||
        inType.getDims() != outType.getDims() || !hasKnownDims(outType) ||
        input.getParentBlock() != kernel->getBlock() ||
        lastUse(input) != lastPosition.lookup(kernel))
      return false;
    if (from.getKind() == BufferKind::workspace)
      return storesAs(result, from);
    return isFinalValueOf(result, from);
  }

  void setBuffers(Operation *op, ArrayRef<Attribute> buffers) {
    op->setAttr(kBuffersAttr, builder.getArrayAttr(buffers));
  }

  LogicalResult assignKernel(KernelOp kernel) {
    // Inputs in order of first use, as the kernel reads them.
    llvm::SetVector<Value> inputs;
    kernel.walk([&](Operation *op) {
      for (Value operand : op->getOperands())
        if (isTensor(operand) &&
            !kernel->isAncestor(operand.getParentBlock()->getParentOp()))
          inputs.insert(operand);
    });
    llvm::SmallPtrSet<Value, 4> claimed;
    SmallVector<Attribute> buffers;
    for (Value result : kernel.getResults()) {
      if (!isTensor(result)) {
        buffers.push_back(builder.getUnitAttr());
        continue;
      }
      // The memory the update (or an enclosing `if`) stores the result into
      // first (no copy at the end), then any dead temporary.
      BufferAttr chosen = wantedBuffer(result);
      if (chosen) {
        home[result] = chosen;
        buffers.push_back(chosen);
        continue;
      }
      for (bool storageFirst : {true, false}) {
        for (Value input : inputs) {
          bool storage = home.lookup(input) &&
                         home.lookup(input).getKind() != BufferKind::workspace;
          if (storage != storageFirst || claimed.contains(input) ||
              !mayOverwrite(input, result, kernel))
            continue;
          claimed.insert(input);
          chosen = home.lookup(input);
          share(result, chosen);
          break;
        }
        if (chosen)
          break;
      }
      if (!chosen)
        home[result] = chosen = allocate(result);
      buffers.push_back(chosen);
    }
    setBuffers(kernel, buffers);
    // Accumulators of reductions along an axis, for this kernel only.
    for (ReduceOp reduce : kernel.getBody().getOps<ReduceOp>()) {
      if (!reduce.getAxis())
        continue;
      if (!reduce.getAccumulator())
        return reduce.emitError("a reduction along an axis needs its "
                                "accumulator type; run "
                                "--optgen-set-accumulators first");
      auto type = cast<SymbolicTensorType>(reduce.getType());
      // Needed only while the kernel runs.
      BufferAttr scratch = allocate(type, *reduce.getAccumulator(), now);
      setBuffers(reduce, {scratch});
    }
    return success();
  }

  void assignGemm(GemmOp gemm) {
    Value c = gemm.getC();
    if (c && isWorkspace(c) && storesAs(gemm.getResult(), home.lookup(c)) &&
        c != gemm.getA() && c != gemm.getB() &&
        home.lookup(c) != home.lookup(gemm.getA()) &&
        home.lookup(c) != home.lookup(gemm.getB()) &&
        c.getParentBlock() == gemm->getBlock() &&
        lastUse(c) == position.lookup(gemm)) {
      share(gemm.getResult(), home.lookup(c));
    } else {
      home[gemm.getResult()] = allocate(gemm.getResult());
    }
    setBuffers(gemm, {home.lookup(gemm.getResult())});
  }

  LogicalResult assignLoop(ForTableOp loop) {
    Block &body = loop.getBody().front();
    unsigned width = loop.getRowLength();
    SmallVector<Attribute> buffers;
    for (auto [init, arg, result] :
         llvm::zip(loop.getInits(), body.getArguments().drop_front(width),
                   loop.getResults())) {
      if (!isTensor(result)) {
        buffers.push_back(builder.getUnitAttr());
        continue;
      }
      BufferAttr carried;
      if (isWorkspace(init) && storesAs(result, home.lookup(init)) &&
          init.getParentBlock() == loop->getBlock() &&
          lastUse(init) == lastPosition.lookup(loop))
        carried = home.lookup(init);
      else
        carried = allocate(result);
      share(result, carried);
      home[arg] = carried;
      hold(carried.getIndex(), lastPosition.lookup(loop));
      buffers.push_back(carried);
    }
    setBuffers(loop, buffers);
    if (failed(assignBlock(body)))
      return failure();
    // Double buffering: a next value made in the body in another slot of
    // the carried value's type is exchanged with it at the end of each
    // iteration instead of copied. Only that value is live in either slot
    // there (the carried value is dead, and a value live across the loop
    // holds a slot of its own), so exchanging the two names is exact.
    auto yield = cast<YieldOp>(body.getTerminator());
    SmallVector<Attribute> next;
    bool any = false;
    for (auto [value, carried] : llvm::zip(yield.getValues(), buffers)) {
      auto slot = dyn_cast<BufferAttr>(carried);
      BufferAttr made = isTensor(value) ? home.lookup(value) : BufferAttr();
      if (!slot || !made || made.getKind() != BufferKind::workspace ||
          made == slot || isa<BlockArgument>(value) ||
          value.getParentBlock() != &body ||
          slots[made.getIndex()] != slots[slot.getIndex()] ||
          !hasKnownDims(cast<SymbolicTensorType>(value.getType()))) {
        next.push_back(builder.getUnitAttr());
        continue;
      }
      next.push_back(made);
      any = true;
    }
    if (any)
      loop->setAttr(kNextBuffersAttr, builder.getArrayAttr(next));
    return success();
  }

  LogicalResult assignIf(IfOp ifOp) {
    SmallVector<Attribute> buffers;
    for (Value result : ifOp.getResults()) {
      if (!isTensor(result)) {
        buffers.push_back(builder.getUnitAttr());
        continue;
      }
      home[result] = allocate(result);
      // Each branch writes the result: busy through both.
      hold(home[result].getIndex(), lastPosition.lookup(ifOp));
      buffers.push_back(home[result]);
      // A value a branch makes and yields is made in the result's buffer
      // where it can be (no copy at the end of the branch).
      for (Region *region : {&ifOp.getThenRegion(), &ifOp.getElseRegion()}) {
        Block &block = region->front();
        Value yielded = cast<YieldOp>(block.getTerminator())
                            .getValues()[cast<OpResult>(result)
                                             .getResultNumber()];
        if (!isa<BlockArgument>(yielded) && yielded.getParentBlock() == &block)
          wanted.try_emplace(yielded, home[result]);
      }
    }
    setBuffers(ifOp, buffers);
    for (Region *region : {&ifOp.getThenRegion(), &ifOp.getElseRegion()})
      if (failed(assignBlock(region->front())))
        return failure();
    return success();
  }

  LogicalResult assignBlock(Block &block) {
    for (Operation &op : block) {
      now = position.lookup(&op);
      LogicalResult result =
          llvm::TypeSwitch<Operation *, LogicalResult>(&op)
              .Case([&](KernelOp kernel) { return assignKernel(kernel); })
              .Case([&](GemmOp gemm) {
                assignGemm(gemm);
                return success();
              })
              .Case([&](TransposeOp transpose) {
                home[transpose] = allocate(transpose.getResult());
                setBuffers(transpose, {home[transpose]});
                return success();
              })
              .Case([&](ForTableOp loop) { return assignLoop(loop); })
              .Case([&](IfOp ifOp) { return assignIf(ifOp); })
              .Default([&](Operation *other) -> LogicalResult {
                if (isa<StateOp>(other) ||
                    llvm::none_of(other->getResults(), isTensor))
                  return success();
                return other->emitError("optgen-assign-buffers: a tensor "
                                        "made outside a kernel, gemm, "
                                        "transpose, if or loop; run "
                                        "--optgen-fuse-kernels first");
              });
      if (failed(result))
        return failure();
    }
    return success();
  }
};

struct AssignBuffersPass : optgen::impl::AssignBuffersBase<AssignBuffersPass> {
  using AssignBuffersBase::AssignBuffersBase;

  void runOnOperation() override {
    FailureOr<TargetAttr> target =
        requireTarget(getOperation(), "optgen-assign-buffers");
    if (failed(target) ||
        failed(Assigner(getOperation(), target->hasNarrowStorage()).run()))
      signalPassFailure();
  }
};

} // namespace
