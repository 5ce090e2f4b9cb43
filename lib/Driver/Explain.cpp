//===- Explain.cpp - What a distributed step does, per rank ---------------===//

#include "optgen/Driver/Explain.h"

#include "optgen/Transforms/Planning.h"
#include "optgen/runtime/Schedule.h"

#include "llvm/Support/Format.h"

using namespace llvm;
using namespace mlir;
using namespace optgen;

/// Elements of optimizer state a rank keeps for a parameter of `numel`
/// elements stepped by `rule`, when `part` of its elements are the rank's:
/// all of the states (the whole parameter), those of its part (states
/// shaped like the parameter shrink to the part), or none.
static FailureOr<int64_t> stateElements(RuleOp rule, int64_t numel,
                                        int64_t part) {
  int64_t total = 0;
  for (StateOp state : getRuleStates(rule)) {
    int64_t elements = 1;
    if (auto type = dyn_cast<SymbolicTensorType>(state.getType())) {
      if (type.getAnyRank())
        elements = numel;
      for (Attribute dim : type.getDims()) {
        auto size = dyn_cast<IntegerAttr>(dim);
        if (!size)
          return state.emitError("the size of this state is not known at "
                                 "compile time");
        elements *= size.getInt();
      }
    }
    if (part == 0)
      elements = 0;
    else if (part != numel && elements == numel)
      elements = part;
    total += elements;
  }
  return total;
}

void optgen::forEachRankPart(
    UnitOp unit, int64_t worldSize, ArrayRef<int64_t> numels,
    llvm::function_ref<void(int64_t, size_t, int64_t, int64_t)> each) {
  ArrayRef<int64_t> counts = unit.getCounts();
  // Counts and owners are by position in a shard group.
  int64_t group = cast<ScheduleOp>(unit->getParentOp()).getShardGroupSize();
  SmallVector<int64_t> start(group, 0);
  bool parted =
      unit.getKind() == UnitKind::flat || unit.getKind() == UnitKind::owned;
  for (int64_t r = 1; r < group && parted; ++r)
    start[r] = start[r - 1] + counts[r - 1];
  for (auto [k, at] : llvm::enumerate(unit.getOffsets())) {
    int64_t numel = numels[k];
    for (int64_t rank = 0; rank < worldSize; ++rank) {
      int64_t r = rank % group;
      int64_t first = 0, last = numel;
      switch (unit.getKind()) {
      case UnitKind::small:
      case UnitKind::local:
        break;
      case UnitKind::owned:
        if ((*unit.getOwners())[k] != static_cast<int32_t>(r))
          last = 0;
        break;
      case UnitKind::flat:
        first = std::clamp<int64_t>(start[r] - at, 0, numel);
        last = std::clamp<int64_t>(start[r] + counts[r] - at, first, numel);
        break;
      }
      each(rank, k, first, last);
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
  step.ranks.resize(step.worldSize);

  // What each rank updates, and the state it keeps for it.
  for (UnitOp unit : schedule.getBlock().getOps<UnitOp>()) {
    SmallVector<int64_t> numels;
    SmallVector<RuleOp> rules;
    for (auto [name, ruleRef] :
         llvm::zip(unit.getParams().getAsValueRange<StringAttr>(),
                   unit.getRules().getAsRange<FlatSymbolRefAttr>())) {
      numels.push_back(numelOf.lookup(name));
      rules.push_back(
          SymbolTable::lookupNearestSymbolFrom<RuleOp>(unit, ruleRef));
    }
    ArrayAttr names = unit.getParams();
    LogicalResult result = success();
    forEachRankPart(
        unit, step.worldSize, numels,
        [&](int64_t r, size_t k, int64_t first, int64_t last) {
          RankLoad &rank = step.ranks[r];
          StringRef name = cast<StringAttr>(names[k]).getValue();
          int64_t numel = numels[k];
          FailureOr<int64_t> elements =
              stateElements(rules[k], numel, last - first);
          if (failed(elements)) {
            result = failure();
            return;
          }
          rank.stateBytes += 4 * *elements;
          if (unit.getKind() == UnitKind::small)
            rank.updates.push_back((name + " (all)").str());
          else if (first == 0 && last == numel)
            rank.updates.push_back(name.str());
          else if (last > first)
            rank.updates.push_back(
                (name + "[" + Twine(first) + ":" + Twine(last) + "]").str());
        });
    if (failed(result))
      return failure();
  }

  // The collectives and their payloads: an all-reduce gives and gets the
  // packed buffer; a reduce-scatter gives it and gets the rank's part (and
  // with shard groups, the part's all-reduce across the groups gives and
  // gets the part); an all-gather gives the part and gets the buffer. A
  // rank alone skips them (they would be copies).
  bool groups = step.groupSize < step.worldSize;
  for (Operation &op : schedule.getBlock()) {
    auto count = [&](int &counter, Value unitValue, TypeAttr payload,
                     bool givesAll, bool getsAll) {
      ++counter;
      if (step.worldSize == 1)
        return;
      auto unit = unitValue.getDefiningOp<UnitOp>();
      int64_t bytes = payload.getValue().getIntOrFloatBitWidth() / 8;
      for (auto [r, rank] : llvm::enumerate(step.ranks)) {
        int64_t part = unit.getKind() == UnitKind::small
                           ? unit.getPackedElements()
                           : unit.getCounts()[r % step.groupSize];
        int64_t packed = unit.getPackedElements();
        // Within a group of one rank, a reduce-scatter or all-gather is a
        // copy.
        if (unit.getKind() == UnitKind::small || step.groupSize > 1) {
          rank.sentBytes += bytes * (givesAll ? packed : part);
          rank.receivedBytes += bytes * (getsAll ? packed : part);
        }
        if (groups && givesAll && !getsAll) {
          // The reduce-scatter's part, averaged across the groups.
          rank.sentBytes += bytes * part;
          rank.receivedBytes += bytes * part;
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
      for (RankLoad &rank : step.ranks) {
        rank.sentBytes += traffic.sent;
        rank.receivedBytes += traffic.received;
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
  for (auto [r, rank] : llvm::enumerate(step.ranks)) {
    os << format("%4d  %11lld  %10lld  %14lld  ", static_cast<int>(r),
                 static_cast<long long>(rank.stateBytes),
                 static_cast<long long>(rank.sentBytes),
                 static_cast<long long>(rank.receivedBytes));
    llvm::interleaveComma(rank.updates, os);
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
  for (auto [r, rank] : llvm::enumerate(step.ranks))
    os << (r ? ", " : "") << "{\"rank\": " << r
       << ", \"state_bytes\": " << rank.stateBytes
       << ", \"sent_bytes\": " << rank.sentBytes
       << ", \"received_bytes\": " << rank.receivedBytes << "}";
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
