//===- SplitLaunches.cpp - A device kernel as the launches that run it ----===//
//
// A device does not run a kernel as one loop: a reduction to one value per
// row wants a block per row, one per column a thread per column, a full
// reduction a grid of partial sums and a launch that combines them. Which
// launches a kernel becomes, what each computes and the order they run in
// are decided here, where the launch verifier checks them, so that the
// printer prints each launch and decides nothing. The order is the point:
// every launch recomputes its slice of the body from the kernel's inputs,
// so those that only reduce run before the one that may update an input in
// place (nanochat's Muon once computed its row norms from a momentum buffer
// already updated).
//
//===----------------------------------------------------------------------===//

#include "optgen/Transforms/Passes.h"

#include "dialect/TargetDescription.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace optgen {
#define GEN_PASS_DEF_SPLITLAUNCHES
#include "dialect/Passes.h.inc"
} // namespace optgen

using namespace mlir;
using namespace optgen;

namespace {

/// One launch to build: its kind, its axis (a `lines` launch's), and the
/// kernel results it computes (their indices among the kernel's yielded
/// values).
struct LaunchPlan {
  LaunchKind kind;
  Value axis;
  SmallVector<unsigned> results;
};

/// The launches of `kernel` in the order they run: row, column and
/// host-axis reductions, then the space, then the full reductions' finish.
FailureOr<SmallVector<LaunchPlan>> planLaunches(KernelOp kernel) {
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
  LaunchPlan rows{LaunchKind::rows, {}, {}}, cols{LaunchKind::cols, {}, {}};
  LaunchPlan space{LaunchKind::space, {}, {}},
      finish{LaunchKind::finish, {}, {}};
  SmallVector<LaunchPlan> lines;
  for (auto [index, value] : llvm::enumerate(yield.getValues())) {
    auto reduce = value.getDefiningOp<ReduceOp>();
    if (!reduce || reduce->getParentOp() != kernel.getOperation()) {
      if (!isa<SymbolicTensorType>(value.getType()))
        return kernel.emitOpError("yields a scalar that is not one of its "
                                  "reductions: no launch computes it");
      space.results.push_back(index);
      continue;
    }
    if (!reduce.getAxis()) {
      space.results.push_back(index);
      finish.results.push_back(index);
      continue;
    }
    APInt axis;
    if (!matchPattern(reduce.getAxis(), m_ConstantInt(&axis))) {
      auto same = llvm::find_if(lines, [&](const LaunchPlan &plan) {
        return plan.axis == reduce.getAxis();
      });
      if (same != lines.end()) {
        same->results.push_back(index);
        continue;
      }
      lines.push_back({LaunchKind::lines,
                       reduce.getAxis(),
                       {static_cast<unsigned>(index)}});
      continue;
    }
    int64_t rank =
        cast<SymbolicTensorType>(reduce.getInput().getType()).getRank();
    (reducesToColumns(axis.getSExtValue(), rank) ? cols : rows)
        .results.push_back(index);
  }
  SmallVector<LaunchPlan> plans;
  for (LaunchPlan *plan : {&rows, &cols})
    if (!plan->results.empty())
      plans.push_back(*plan);
  llvm::append_range(plans, lines);
  // A kernel that yields nothing still runs its space once.
  if (!space.results.empty() || plans.empty())
    plans.push_back(space);
  if (!finish.results.empty())
    plans.push_back(finish);
  return plans;
}

/// The ops of `body` that `sinks` are computed from, in the body's order.
SmallVector<Operation *> bodySlice(Block &body, ArrayRef<Value> sinks) {
  llvm::SmallPtrSet<Operation *, 16> needed;
  SmallVector<Value> worklist(sinks.begin(), sinks.end());
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !needed.insert(def).second)
      continue;
    llvm::append_range(worklist, def->getOperands());
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : body)
    if (needed.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

/// `kernel`'s body rewritten as its launches.
LogicalResult splitKernel(KernelOp kernel) {
  auto buffers = kernel->getAttrOfType<ArrayAttr>(kBuffersAttr);
  if (!buffers)
    return kernel.emitOpError("has no buffers: run --optgen-assign-buffers "
                              "before --optgen-split-launches");
  FailureOr<SmallVector<LaunchPlan>> plans = planLaunches(kernel);
  if (failed(plans))
    return failure();
  Block &body = kernel.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  SmallVector<Value> yielded(yield.getValues());
  MLIRContext *context = kernel.getContext();

  OpBuilder builder(context);
  builder.setInsertionPoint(yield);
  SmallVector<Value> results(yielded.size());
  // The space launch's results, for its finish: kernel result -> partials.
  llvm::DenseMap<unsigned, Value> partials;
  for (const LaunchPlan &plan : *plans) {
    SmallVector<Value> sinks;
    SmallVector<Type> types;
    SmallVector<Attribute> memory;
    for (unsigned index : plan.results) {
      Value value = yielded[index];
      if (plan.kind == LaunchKind::finish) {
        sinks.push_back(partials.lookup(index));
        memory.push_back(buffers[index]);
      } else {
        sinks.push_back(value);
        auto reduce = value.getDefiningOp<ReduceOp>();
        // A full reduction leaves its space launch as partial sums.
        bool partial = plan.kind == LaunchKind::space && reduce &&
                       reduce->getParentOp() == kernel.getOperation();
        memory.push_back(partial ? reduce->getAttrOfType<ArrayAttr>(
                                       kBuffersAttr)[0]
                                 : buffers[index]);
      }
      types.push_back(value.getType());
    }
    auto launch = builder.create<LaunchOp>(kernel.getLoc(), types, plan.kind,
                                           plan.axis, LaunchShapeAttr());
    launch->setAttr(kBuffersAttr, ArrayAttr::get(context, memory));
    Block *launchBody = new Block();
    launch.getBody().push_back(launchBody);
    OpBuilder inner = OpBuilder::atBlockEnd(launchBody);
    IRMapping mapping;
    if (plan.kind != LaunchKind::finish)
      for (Operation *op : bodySlice(body, sinks))
        inner.clone(*op, mapping);
    SmallVector<Value> launchYield;
    for (Value sink : sinks)
      launchYield.push_back(mapping.lookupOrDefault(sink));
    inner.create<YieldOp>(kernel.getLoc(), launchYield);
    for (auto [index, result] : llvm::zip(plan.results, launch.getResults())) {
      results[index] = result;
      if (plan.kind == LaunchKind::space)
        partials[index] = result;
    }
  }
  // The kernel now yields its launches' results, and holds nothing else.
  auto launchesYield = builder.create<YieldOp>(yield.getLoc(), results);
  SmallVector<Operation *> old;
  for (Operation &op : body)
    if (!isa<LaunchOp>(op) && &op != launchesYield.getOperation())
      old.push_back(&op);
  for (Operation *op : llvm::reverse(old)) {
    op->dropAllUses();
    op->erase();
  }
  return success();
}

/// A kernel of one store launch copying `value` to `home`, before `update`.
Value storeAt(UpdateOp update, Value value, BufferAttr home) {
  MLIRContext *context = update.getContext();
  OpBuilder builder(update);
  ArrayAttr memory = ArrayAttr::get(context, {home});
  auto kernel = builder.create<KernelOp>(update.getLoc(), value.getType());
  kernel->setAttr(kBuffersAttr, memory);
  builder.setInsertionPointToEnd(&kernel.getBody().emplaceBlock());
  auto launch = builder.create<LaunchOp>(update.getLoc(), value.getType(),
                                         LaunchKind::store, Value(),
                                         LaunchShapeAttr());
  launch->setAttr(kBuffersAttr, memory);
  builder.create<YieldOp>(update.getLoc(), launch.getResults());
  OpBuilder::atBlockEnd(&launch.getBody().emplaceBlock())
      .create<YieldOp>(update.getLoc(), value);
  return kernel.getResult(0);
}

struct SplitLaunchesPass
    : optgen::impl::SplitLaunchesBase<SplitLaunchesPass> {
  using SplitLaunchesBase::SplitLaunchesBase;

  void runOnOperation() override {
    RuleOp rule = getOperation();
    FailureOr<TargetAttr> target =
        requireTarget(rule, "optgen-split-launches");
    if (failed(target))
      return signalPassFailure();
    // A host runs each kernel as the one loop it is.
    if (!target->isDevice())
      return;
    SmallVector<KernelOp> kernels;
    rule.walk([&](KernelOp kernel) {
      if (!kernel.isSplitIntoLaunches())
        kernels.push_back(kernel);
    });
    for (KernelOp kernel : kernels)
      if (failed(splitKernel(kernel)))
        return signalPassFailure();

    // What the update keeps elsewhere than it computed it is copied there.
    auto update = cast<UpdateOp>(rule.getBlock().getTerminator());
    MLIRContext *context = &getContext();
    auto keep = [&](OpOperand &operand, BufferAttr home) {
      // A scalar state is not a device's to keep (the printer says so).
      if (!isa<SymbolicTensorType>(operand.get().getType()))
        return true;
      BufferAttr buffer = getBuffer(operand.get());
      if (!buffer) {
        update.emitOpError("takes a tensor with no memory: run "
                           "--optgen-assign-buffers first");
        return false;
      }
      if (buffer != home)
        operand.set(storeAt(update, operand.get(), home));
      return true;
    };
    if (!keep(update->getOpOperand(0),
              BufferAttr::get(context, BufferKind::param, 0)))
      return signalPassFailure();
    for (unsigned i = 1; i < update->getNumOperands(); ++i)
      if (!keep(update->getOpOperand(i),
                BufferAttr::get(context, BufferKind::state, i - 1)))
        return signalPassFailure();
  }
};

} // namespace
