//===- Explain.cpp - What a distributed step does, per rank ---------------===//

#include "optgen/Driver/Explain.h"

#include "optgen/Transforms/Planning.h"
#include "optgen/runtime/Schedule.h"

#include "llvm/Support/Format.h"

using namespace llvm;
using namespace mlir;
using namespace optgen;

namespace {

/// The optimizer state a rank keeps for a parameter of `numel` elements
/// stepped by its rule, by the part of its elements that is the rank's:
/// all of the states (the whole parameter), those of its part (states
/// shaped like the parameter shrink to the part), or none.
struct StateSize {
  /// States shaped like the parameter, and the elements of the others.
  int64_t shaped = 0, fixed = 0;
  int64_t numel = 0;
  int64_t elements(int64_t part) const {
    if (part == 0)
      return 0;
    return shaped * (part == numel ? numel : part) + fixed;
  }
};

FailureOr<StateSize> stateSize(RuleOp rule, int64_t numel) {
  StateSize size;
  size.numel = numel;
  for (StateOp state : getRuleStates(rule)) {
    int64_t elements = 1;
    if (auto type = dyn_cast<SymbolicTensorType>(state.getType())) {
      if (type.getAnyRank())
        elements = numel;
      for (Attribute dim : type.getDims()) {
        auto extent = dyn_cast<IntegerAttr>(dim);
        if (!extent)
          return state.emitError("the size of this state is not known at "
                                 "compile time");
        elements *= extent.getInt();
      }
    }
    if (elements == numel)
      ++size.shaped;
    else
      size.fixed += elements;
  }
  return size;
}

} // namespace

void optgen::forEachPositionPart(
    UnitOp unit, ArrayRef<int64_t> numels,
    llvm::function_ref<void(int64_t, size_t, int64_t, int64_t)> each) {
  // Counts and owners are by position in a shard group.
  ArrayRef<int64_t> counts = unit.getCounts();
  int64_t group = cast<ScheduleOp>(unit->getParentOp()).getShardGroupSize();
  ArrayRef<int64_t> offsets = unit.getOffsets();
  size_t members = numels.size();
  switch (unit.getKind()) {
  case UnitKind::small:
  case UnitKind::local:
    for (int64_t position = 0; position < group; ++position)
      for (size_t k = 0; k < members; ++k)
        if (numels[k] > 0)
          each(position, k, 0, numels[k]);
    break;
  case UnitKind::owned:
    for (size_t k = 0; k < members; ++k)
      if (numels[k] > 0)
        each((*unit.getOwners())[k], k, 0, numels[k]);
    break;
  case UnitKind::flat: {
    // Position r has the packed elements [start, end); the members lie in
    // order (the verifier checked the offsets), so one sweep meets each
    // member at the positions it overlaps.
    size_t k = 0;
    int64_t start = 0;
    for (int64_t position = 0; position < group; ++position) {
      int64_t end = start + counts[position];
      while (k < members && offsets[k] + numels[k] <= start)
        ++k;
      for (size_t j = k; j < members && offsets[j] < end; ++j) {
        int64_t first = std::clamp<int64_t>(start - offsets[j], 0, numels[j]);
        int64_t last = std::clamp<int64_t>(end - offsets[j], first, numels[j]);
        if (last > first)
          each(position, j, first, last);
      }
      start = end;
    }
    break;
  }
  }
}

FailureOr<StepExplanation> optgen::explainSchedule(ScheduleOp schedule) {
  auto optimizer = schedule->getParentOfType<OptimizerOp>();
  StepExplanation step;
  step.optimizer = optimizer.getSymName().str();
  step.worldSize = schedule.getWorldSize();
  step.groupSize = schedule.getShardGroupSize();
  llvm::StringMap<int64_t> numelOf;
  for (ParamOp param : optimizer.getBlock().getOps<ParamOp>())
    numelOf[param.getName()] = ShapedType::getNumElements(param.getShape());
  step.params = numelOf.size();
  step.imbalance = runtime::ownedImbalance(readShardPlan(schedule));
  step.positions.resize(step.groupSize);

  // What each position updates, and the state it keeps for it.
  llvm::DenseMap<Operation *, unsigned> unitIndex;
  for (UnitOp unit : schedule.getBlock().getOps<UnitOp>()) {
    unsigned index = static_cast<unsigned>(step.units.size());
    unitIndex[unit] = index;
    ExplainedUnit explained{unit.getKind(), {}, {}};
    SmallVector<StateSize> states;
    for (auto [name, ruleRef] :
         llvm::zip(unit.getParams().getAsValueRange<StringAttr>(),
                   unit.getRules().getAsRange<FlatSymbolRefAttr>())) {
      int64_t numel = numelOf.lookup(name);
      FailureOr<StateSize> size = stateSize(
          SymbolTable::lookupNearestSymbolFrom<RuleOp>(unit, ruleRef), numel);
      if (failed(size))
        return failure();
      states.push_back(*size);
      explained.names.push_back(name.str());
      explained.numels.push_back(numel);
    }
    if (explained.everyRank()) {
      int64_t elements = 0;
      for (const StateSize &size : states)
        elements += size.elements(size.numel);
      for (PositionLoad &position : step.positions)
        position.stateBytes += 4 * elements;
    } else {
      forEachPositionPart(
          unit, explained.numels,
          [&](int64_t r, size_t k, int64_t first, int64_t last) {
            PositionLoad &position = step.positions[r];
            position.stateBytes += 4 * states[k].elements(last - first);
            position.updates.push_back(
                {index, static_cast<unsigned>(k), first, last});
          });
    }
    step.units.push_back(std::move(explained));
  }

  // The collectives and their payloads: an all-reduce gives and gets the
  // packed buffer; a reduce-scatter gives it and gets the position's part
  // (and with shard groups, the part's all-reduce across the groups gives
  // and gets the part); an all-gather gives the part and gets the buffer.
  // A rank alone skips them (they would be copies).
  bool groups = step.groupSize < step.worldSize;
  for (Operation &op : schedule.getBlock()) {
    auto count = [&](int &counter, Value unitValue, TypeAttr payload,
                     bool givesAll, bool getsAll) {
      ++counter;
      if (step.worldSize == 1)
        return;
      auto unit = unitValue.getDefiningOp<UnitOp>();
      int64_t bytes = payload.getValue().getIntOrFloatBitWidth() / 8;
      int64_t packed = unit.getPackedElements();
      bool small = unit.getKind() == UnitKind::small;
      for (auto [r, position] : llvm::enumerate(step.positions)) {
        int64_t part = small ? packed : unit.getCounts()[r];
        // Within a group of one rank, a reduce-scatter or all-gather is a
        // copy.
        if (small || step.groupSize > 1) {
          position.sentBytes += bytes * (givesAll ? packed : part);
          position.receivedBytes += bytes * (getsAll ? packed : part);
        }
        if (groups && givesAll && !getsAll) {
          // The reduce-scatter's part, averaged across the groups.
          position.sentBytes += bytes * part;
          position.receivedBytes += bytes * part;
        }
      }
    };
    if (auto reduce = dyn_cast<AllReduceOp>(op))
      count(step.allReduces, reduce.getUnit(), reduce.getPayloadAttr(), true,
            true);
    else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
      count(step.reduceScatters, scatter.getUnit(), scatter.getPayloadAttr(),
            true, false);
      if (groups)
        ++step.crossAllReduces;
    }
    else if (auto gather = dyn_cast<AllGatherOp>(op))
      count(step.allGathers, gather.getUnit(), gather.getPayloadAttr(), false,
            true);
    else if (isa<GatherPartialsOp>(op)) {
      // One double a partial, within the group, as the executors count it.
      ++step.partialsGathers;
      runtime::Traffic traffic = runtime::partialsTraffic(
          static_cast<int64_t>(getGlobalPartials(optimizer).size()),
          static_cast<int>(step.groupSize));
      for (PositionLoad &position : step.positions) {
        position.sentBytes += traffic.sent;
        position.receivedBytes += traffic.received;
      }
    }
  }
  for (GlobalOp global : optimizer.getBlock().getOps<GlobalOp>())
    step.globals.push_back(global.getSymName().str());
  return step;
}

/// Every collective of a step.
static int collectivesOf(const StepExplanation &step) {
  return step.allReduces + step.reduceScatters + step.crossAllReduces +
         step.allGathers + step.partialsGathers;
}

void optgen::printExplanation(const StepExplanation &step, raw_ostream &os) {
  os << "optimizer " << step.optimizer << " on " << step.worldSize << " rank"
     << (step.worldSize == 1 ? "" : "s") << ": " << step.params
     << " parameters\n";
  if (step.groupSize < step.worldSize)
    os << "shard groups: " << step.worldSize / step.groupSize
       << " groups of " << step.groupSize
       << " consecutive ranks, each sharding the step alike; a rank takes "
          "the part of its position in its group\n";
  os << "collectives per step: " << collectivesOf(step) << " ("
     << step.allReduces << " all-reduce, " << step.reduceScatters
     << " reduce-scatter, ";
  if (step.groupSize < step.worldSize)
    os << step.crossAllReduces << " all-reduce across groups, ";
  os << step.allGathers << " all-gather";
  if (step.partialsGathers)
    os << ", " << step.partialsGathers << " all-gather of the globals' "
       << "partials";
  os << ")\n";
  if (!step.globals.empty()) {
    os << "globals: ";
    llvm::interleaveComma(step.globals, os);
    os << " (every update waits for them, and so for every reduction)\n";
  }
  os << "load imbalance of owned matrices (max/mean of estimated cost): "
     << format("%.3f", step.imbalance) << "\n\n";
  os << "rank  state bytes   sent/step   received/step  updates\n";
  for (int64_t r = 0; r < step.worldSize; ++r) {
    const PositionLoad &load = step.rank(r);
    os << format("%4lld  %11lld  %10lld  %14lld  ", static_cast<long long>(r),
                 static_cast<long long>(load.stateBytes),
                 static_cast<long long>(load.sentBytes),
                 static_cast<long long>(load.receivedBytes));
    // The units in the schedule's order: those of every rank, then the
    // position's own parts of the others.
    bool first = true;
    auto separate = [&] {
      if (!first)
        os << ", ";
      first = false;
    };
    const PartUpdate *part = load.updates.data();
    const PartUpdate *end = part + load.updates.size();
    for (auto [u, unit] : llvm::enumerate(step.units)) {
      if (unit.everyRank()) {
        for (const std::string &name : unit.names) {
          separate();
          os << name << (unit.kind == UnitKind::small ? " (all)" : "");
        }
        continue;
      }
      for (; part != end && part->unit == u; ++part) {
        separate();
        os << unit.names[part->member];
        if (part->first != 0 || part->last != unit.numels[part->member])
          os << "[" << part->first << ":" << part->last << "]";
      }
    }
    os << "\n";
  }
  os << "\n(bytes: the payloads each rank gives to and gets from the "
        "collectives)\n";
}

void optgen::writeExplanationJson(
    const StepExplanation &step, raw_ostream &os,
    ArrayRef<std::pair<std::string, std::string>> extra) {
  os << "{\"world_size\": " << step.worldSize;
  if (step.groupSize < step.worldSize)
    os << ", \"group_size\": " << step.groupSize;
  os << ", \"collectives_per_step\": " << collectivesOf(step)
     << ", \"imbalance\": " << format("%.6f", step.imbalance)
     << ", \"ranks\": [";
  for (int64_t r = 0; r < step.worldSize; ++r) {
    const PositionLoad &load = step.rank(r);
    os << (r ? ", " : "") << "{\"rank\": " << r
       << ", \"state_bytes\": " << load.stateBytes
       << ", \"sent_bytes\": " << load.sentBytes
       << ", \"received_bytes\": " << load.receivedBytes << "}";
  }
  os << "]";
  for (const auto &[name, value] : extra)
    os << ", \"" << name << "\": " << value;
  os << "}\n";
}

void optgen::printDistributionPolicy(OptimizerOp optimizer, raw_ostream &os) {
  DistributeOp distribute;
  for (DistributeOp d : optimizer.getBlock().getOps<DistributeOp>())
    distribute = d;
  bool zero2 =
      distribute && distribute.getStrategy() == DistributeStrategy::zero2;
  os << "optimizer " << optimizer.getSymName() << ": distribute "
     << (zero2 ? "zero2" : "none");
  if (zero2) {
    os << " (small_numel " << distribute.getSmallNumel().value_or(0);
    if (distribute.getShardGroup())
      os << ", shard_group " << *distribute.getShardGroup();
    os << ")";
  }
  os << "\n";
  if (!zero2) {
    os << "every rank runs the whole step on its own gradients\n";
    return;
  }
  os << "tensors under small_numel elements: gradients all-reduced in one "
        "packed collective, updated on every rank\n";
  for (GroupOp group : optimizer.getBlock().getOps<GroupOp>()) {
    auto rule = SymbolTable::lookupNearestSymbolFrom<RuleOp>(
        group, group.getRuleAttr());
    os << "group " << group.getSymName() << " (rule " << rule.getSymName()
       << "): "
       << (isElementwiseRule(rule)
               ? "packed with the other elementwise rules' parameters, split "
                 "by element over the ranks"
               : "each parameter owned whole by one rank (longest job "
                 "first), one reduce-scatter and all-gather per shape")
       << "\n";
  }
  os << "(give --shapes FILE.safetensors and --world-size N for the plan per "
        "rank)\n";
}
