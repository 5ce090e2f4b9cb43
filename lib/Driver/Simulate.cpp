//===- Simulate.cpp - A distributed step's timeline, predicted ------------===//

#include "optgen/Driver/Simulate.h"

#include "optgen/Driver/Explain.h"
#include "optgen/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;
using namespace mlir;
using namespace optgen;
using runtime::CollectiveKind;
using runtime::SimStep;
using runtime::Work;

//===----------------------------------------------------------------------===//
// The work of an update, from the IR
//===----------------------------------------------------------------------===//

namespace {

/// Counts the work of one rule on one parameter's shape.
class WorkCounter {
public:
  WorkCounter(GroupOp group, int64_t paramElements)
      : group(group), paramElements(paramElements) {}

  LogicalResult count(Region &region, double times, Work &work) {
    for (Block &block : region)
      for (Operation &op : block)
        if (failed(countOp(op, times, work)))
          return failure();
    return success();
  }

private:
  GroupOp group;
  int64_t paramElements;

  /// Elements of a value of `type`: a tensor whose size the IR does not
  /// give is taken as the parameter's size; a scalar is one element.
  double elements(Type type) const {
    auto tensor = dyn_cast<SymbolicTensorType>(type);
    if (!tensor)
      return 1;
    if (tensor.getAnyRank())
      return static_cast<double>(paramElements);
    double n = 1;
    for (Attribute dim : tensor.getDims()) {
      auto size = dyn_cast<IntegerAttr>(dim);
      if (!size)
        return static_cast<double>(paramElements);
      n *= static_cast<double>(size.getInt());
    }
    return n;
  }

  static double elementBytes(Type type) {
    if (auto tensor = dyn_cast<SymbolicTensorType>(type))
      type = tensor.getElementType();
    unsigned bits = type.getIntOrFloatBitWidth();
    return bits <= 8 ? 1.0 : bits / 8.0;
  }

  double bytes(Value value) const {
    return elements(value.getType()) * elementBytes(value.getType());
  }

  static bool isTensor(Value value) {
    return isa<SymbolicTensorType>(value.getType());
  }

  /// Dimension `i` of a matrix type (1 where unknown).
  static double dim(Type type, unsigned i) {
    auto tensor = dyn_cast<SymbolicTensorType>(type);
    if (!tensor || tensor.getAnyRank() || tensor.getRank() <= i)
      return 1;
    auto size = dyn_cast<IntegerAttr>(tensor.getDims()[i]);
    return size ? static_cast<double>(size.getInt()) : 1;
  }

  static bool sixteenBit(Type type) {
    if (auto tensor = dyn_cast<SymbolicTensorType>(type))
      type = tensor.getElementType();
    return type.getIntOrFloatBitWidth() <= 16;
  }

  /// A product of [m, k] and [k, n] with inputs like `input`.
  static void product(double m, double n, double k, Type input,
                      bool symmetric, double times, Work &work) {
    double flops = 2 * m * n * k * times;
    bool half = sixteenBit(input);
    (symmetric ? (half ? work.symmetricFlops16 : work.symmetricFlops32)
               : (half ? work.flops16 : work.flops32)) += flops;
    work.launches += times;
  }

  /// The integer `value` holds, where the IR fixes it: a constant, or a
  /// hyperparameter the group sets or defaults.
  std::optional<int64_t> integer(Value value) {
    Operation *def = value.getDefiningOp();
    Attribute attr;
    if (auto constant = dyn_cast_or_null<ConstantOp>(def)) {
      attr = constant.getValue();
    } else if (auto hyper = dyn_cast_or_null<HyperOp>(def)) {
      if (group)
        attr = group.getSettings().get(hyper.getName());
      if (!attr)
        attr = hyper.getDefaultValueAttr();
    }
    if (auto number = dyn_cast_or_null<IntegerAttr>(attr))
      return number.getInt();
    if (auto number = dyn_cast_or_null<FloatAttr>(attr))
      return static_cast<int64_t>(number.getValueAsDouble());
    return std::nullopt;
  }

  LogicalResult countOp(Operation &op, double times, Work &work) {
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      Type a = gemm.getA().getType();
      double m = dim(gemm.getResult().getType(), 0);
      double n = dim(gemm.getResult().getType(), 1);
      double k = dim(a, gemm.getTransposeA() ? 0 : 1);
      product(m, n, k, a, gemm.getSymmetric(), times, work);
      return success();
    }
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      Type a = matmul.getLhs().getType();
      product(dim(a, 0), dim(matmul.getRhs().getType(), 1), dim(a, 1), a,
              false, times, work);
      return success();
    }
    if (auto kernel = dyn_cast<KernelOp>(op)) {
      // What it reads from outside, once each, and what it gives.
      SmallPtrSet<Value, 8> read;
      double traffic = 0;
      kernel.getBody().walk([&](Operation *inner) {
        for (Value operand : inner->getOperands())
          if (isTensor(operand) &&
              !kernel->isAncestor(operand.getParentRegion()->getParentOp()) &&
              read.insert(operand).second)
            traffic += bytes(operand);
      });
      for (Value result : kernel.getResults())
        if (isTensor(result))
          traffic += bytes(result);
      work.bytes += traffic * times;
      work.launches += times;
      return success();
    }
    if (auto loop = dyn_cast<ForTableOp>(op)) {
      int64_t rows =
          cast<ShapedType>(loop.getTable().getType()).getDimSize(0);
      int64_t trips = integer(loop.getCount()).value_or(rows);
      trips = std::clamp<int64_t>(trips, 0, rows);
      return count(loop.getBody(), times * static_cast<double>(trips), work);
    }
    if (auto choice = dyn_cast<IfOp>(op)) {
      std::optional<int64_t> condition = integer(choice.getCondition());
      if (condition)
        return count(*condition ? choice.getThenRegion()
                                : choice.getElseRegion(),
                     times, work);
      // Not decided by shapes: the costlier branch, figure by figure.
      Work then, other;
      if (failed(count(choice.getThenRegion(), times, then)) ||
          failed(count(choice.getElseRegion(), times, other)))
        return failure();
      work.flops16 += std::max(then.flops16, other.flops16);
      work.flops32 += std::max(then.flops32, other.flops32);
      work.symmetricFlops16 +=
          std::max(then.symmetricFlops16, other.symmetricFlops16);
      work.symmetricFlops32 +=
          std::max(then.symmetricFlops32, other.symmetricFlops32);
      work.bytes += std::max(then.bytes, other.bytes);
      work.launches += std::max(then.launches, other.launches);
      return success();
    }
    if (isa<StateOp, HyperOp, ConstantOp, UpdateOp, YieldOp>(op))
      return success();
    // Unfused elementwise math on tensors (a stage before the kernels): a
    // pass over its operands and result each.
    if (op.getNumResults() == 1 && isTensor(op.getResult(0))) {
      double traffic = bytes(op.getResult(0));
      for (Value operand : op.getOperands())
        if (isTensor(operand))
          traffic += bytes(operand);
      work.bytes += traffic * times;
      work.launches += times;
    }
    return success();
  }
};

} // namespace

FailureOr<Work> optgen::updateWork(RuleOp rule, GroupOp group,
                                   ArrayRef<int64_t> shape) {
  Work work;
  WorkCounter counter(group, ShapedType::getNumElements(shape));
  if (failed(counter.count(rule.getBody(), 1, work)))
    return failure();
  return work;
}

//===----------------------------------------------------------------------===//
// The schemes as step programs
//===----------------------------------------------------------------------===//

namespace {

/// What the simulation needs of each parameter: its shape, rule and group,
/// and the work of its whole update (counted once per rule and group).
struct ParamInfo {
  SmallVector<int64_t> shape;
  int64_t numel = 0;
  RuleOp rule;
  GroupOp group;
  Work work;
};

class ParamTable {
public:
  /// Every parameter of `optimizer` that a bucket holds, with its bucket's
  /// rule.
  LogicalResult build(OptimizerOp optimizer) {
    llvm::StringMap<ParamOp> params;
    for (ParamOp param : optimizer.getBlock().getOps<ParamOp>())
      params[param.getName()] = param;
    for (BucketOp bucket : optimizer.getBlock().getOps<BucketOp>()) {
      auto group = SymbolTable::lookupNearestSymbolFrom<GroupOp>(
          optimizer, bucket.getGroupAttr());
      FlatSymbolRefAttr ruleRef =
          bucket.getRuleAttr() ? bucket.getRuleAttr() : group.getRuleAttr();
      auto rule = SymbolTable::lookupNearestSymbolFrom<RuleOp>(optimizer,
                                                               ruleRef);
      SmallVector<std::string> members;
      for (StringRef name : bucket.getParams().getAsValueRange<StringAttr>()) {
        ParamOp param = params.lookup(name);
        if (!param)
          return bucket.emitError("bucket of '") << name
                                                 << "', which is no parameter";
        ParamInfo info;
        info.shape.assign(param.getShape().begin(), param.getShape().end());
        info.numel = ShapedType::getNumElements(param.getShape());
        info.rule = rule;
        info.group = group;
        FailureOr<Work> work = workOf(rule, group, info.shape);
        if (failed(work))
          return failure();
        info.work = *work;
        infos[name] = std::move(info);
        members.push_back(name.str());
      }
      buckets.push_back({rule, std::move(members)});
    }
    return success();
  }

  const ParamInfo *lookup(StringRef name) const {
    auto it = infos.find(name);
    return it == infos.end() ? nullptr : &it->second;
  }

  /// Buckets in order: their rule and members.
  struct BucketInfo {
    RuleOp rule;
    SmallVector<std::string> members;
  };
  SmallVector<BucketInfo> buckets;

private:
  llvm::StringMap<ParamInfo> infos;
  llvm::DenseMap<std::pair<Operation *, Operation *>, Work> cache;

  FailureOr<Work> workOf(RuleOp rule, GroupOp group, ArrayRef<int64_t> shape) {
    // A rule specialised to a shape has one work per group; a generic one
    // (a schedule that was not specialised) is counted per shape.
    bool specialised = rule->hasAttr(kSpecializesAttr);
    auto key = std::make_pair(rule.getOperation(), group.getOperation());
    if (specialised)
      if (auto it = cache.find(key); it != cache.end())
        return it->second;
    FailureOr<Work> work = updateWork(rule, group, shape);
    if (succeeded(work) && specialised)
      cache[key] = *work;
    return work;
  }
};

/// Seconds of a rank's part: each member's work scaled to its part, each
/// distinct rule's launches once (a call covers every member of a rule).
class PartCost {
public:
  void add(const ParamInfo &param, int64_t elements) {
    if (elements <= 0)
      return;
    Work part = param.work.scaled(static_cast<double>(elements) /
                                  static_cast<double>(param.numel));
    part.launches = 0;
    work += part;
    RuleOp rule = param.rule;
    if (rules.insert(rule.getOperation()).second)
      work.launches += param.work.launches;
  }
  double seconds(const runtime::Machine &machine) const {
    return runtime::computeSeconds(machine, work);
  }

private:
  Work work;
  SmallPtrSet<Operation *, 4> rules;
};

/// The summary of a unit whose parts take `seconds` per rank.
SimulatedScheme::Unit unitSummary(StringRef kind, StringRef first,
                                  size_t members,
                                  const std::vector<double> &seconds) {
  SimulatedScheme::Unit unit{kind.str(), first.str(), members, 0, 0};
  for (double s : seconds) {
    unit.maxSeconds = std::max(unit.maxSeconds, s);
    unit.meanSeconds += s / static_cast<double>(seconds.size());
  }
  return unit;
}

int64_t payloadBytes(Operation *collective) {
  auto payload = collective->getAttrOfType<TypeAttr>("payload");
  return payload ? payload.getValue().getIntOrFloatBitWidth() / 8 : 4;
}

std::vector<int> allRanks(int world) {
  std::vector<int> ranks(world);
  for (int r = 0; r < world; ++r)
    ranks[r] = r;
  return ranks;
}

} // namespace

FailureOr<SimulatedScheme>
optgen::simulateSchedule(ScheduleOp schedule,
                         const runtime::Machine &machine) {
  auto optimizer = schedule->getParentOfType<OptimizerOp>();
  ParamTable table;
  if (failed(table.build(optimizer)))
    return failure();
  SimulatedScheme scheme;
  scheme.name = "optgen";
  for (ParamOp param : optimizer.getBlock().getOps<ParamOp>())
    scheme.paramElements += ShapedType::getNumElements(param.getShape());

  int world = static_cast<int>(schedule.getWorldSize());
  SimStep step;
  step.worldSize = world;
  llvm::DenseMap<Operation *, int> unitIndex, collectiveIndex;
  for (UnitOp unit : schedule.getBlock().getOps<UnitOp>()) {
    SmallVector<const ParamInfo *> members;
    SmallVector<int64_t> numels;
    int64_t packed = 0;
    for (StringRef name : unit.getParams().getAsValueRange<StringAttr>()) {
      const ParamInfo *info = table.lookup(name);
      if (!info)
        return unit.emitError("unit of '")
               << name << "', which no bucket holds: --simulate needs the "
                          "optimizer's buckets";
      members.push_back(info);
      numels.push_back(info->numel);
      packed += info->numel;
    }
    if (unit.getKind() == UnitKind::flat || unit.getKind() == UnitKind::owned)
      scheme.paddingElements += unit.getPackedElements() - packed;
    // Per position of a shard group: each group's ranks do alike.
    int group = static_cast<int>(schedule.getShardGroupSize());
    std::vector<PartCost> parts(group);
    forEachPositionPart(unit, numels,
                        [&](int64_t position, size_t member, int64_t first,
                            int64_t last) {
                          parts[position].add(*members[member], last - first);
                        });
    std::vector<double> seconds(world);
    for (int r = 0; r < world; ++r)
      seconds[r] = parts[r % group].seconds(machine);
    unitIndex[unit] = static_cast<int>(step.compute.size());
    scheme.units.push_back(
        unitSummary(stringifyUnitKind(unit.getKind()),
                    cast<StringAttr>(unit.getParams()[0]).getValue(),
                    members.size(), seconds));
    step.compute.push_back(std::move(seconds));
  }

  // With shard groups of G < N ranks: a reduce-scatter within each group
  // and then, launched after it, an all-reduce of each part across the
  // groups (the ranks of one position), which its wait waits for; an
  // all-gather within each group; an all-reduce over every rank.
  int group = static_cast<int>(schedule.getShardGroupSize());
  auto groupsOf = [&](int64_t bytes) {
    std::vector<SimStep::Collective::Instance> instances;
    for (int first = 0; first < world && group > 1; first += group) {
      std::vector<int> ranks(group);
      for (int i = 0; i < group; ++i)
        ranks[i] = first + i;
      instances.push_back({std::move(ranks), bytes});
    }
    return instances;
  };
  for (Operation &op : schedule.getBlock()) {
    auto add = [&](CollectiveKind kind,
                   std::vector<SimStep::Collective::Instance> instances) {
      step.program.push_back({SimStep::Op::Launch,
                              static_cast<int>(step.collectives.size())});
      step.collectives.push_back({kind, std::move(instances)});
      collectiveIndex[&op] = static_cast<int>(step.collectives.size()) - 1;
      ++scheme.collectives;
    };
    auto launch = [&](CollectiveKind kind, Value unitValue) {
      auto unit = unitValue.getDefiningOp<UnitOp>();
      int64_t element = payloadBytes(&op);
      int64_t bytes = element * unit.getPackedElements();
      if (world == 1)
        return add(kind, {});
      if (kind == CollectiveKind::AllReduce)
        return add(kind, {{allRanks(world), bytes}});
      add(kind, groupsOf(bytes));
      if (kind != CollectiveKind::ReduceScatter || group == world)
        return;
      std::vector<SimStep::Collective::Instance> across;
      for (int position = 0; position < group; ++position) {
        std::vector<int> ranks;
        for (int r = position; r < world; r += group)
          ranks.push_back(r);
        across.push_back(
            {std::move(ranks), element * unit.getCounts()[position]});
      }
      add(CollectiveKind::AllReduce, std::move(across));
    };
    if (auto reduce = dyn_cast<AllReduceOp>(op))
      launch(CollectiveKind::AllReduce, reduce.getUnit());
    else if (auto scatter = dyn_cast<ReduceScatterOp>(op))
      launch(CollectiveKind::ReduceScatter, scatter.getUnit());
    else if (auto gather = dyn_cast<AllGatherOp>(op))
      launch(CollectiveKind::AllGather, gather.getUnit());
    else if (isa<GatherPartialsOp>(op))
      // Each rank's partials (a double each) within its group; the pass
      // over the gradients that makes them is not counted.
      add(CollectiveKind::AllGather,
          world == 1 ? std::vector<SimStep::Collective::Instance>()
                     : groupsOf(static_cast<int64_t>(
                           getGlobalPartials(schedule->getParentOfType<
                                             OptimizerOp>())
                               .size() *
                           sizeof(double) * group)));
    else if (auto wait = dyn_cast<WaitOp>(op))
      step.program.push_back(
          {SimStep::Op::Wait,
           collectiveIndex.lookup(wait.getToken().getDefiningOp())});
    else if (auto compute = dyn_cast<ComputeOp>(op))
      step.program.push_back(
          {SimStep::Op::Compute,
           unitIndex.lookup(compute.getUnit().getDefiningOp())});
  }
  scheme.result = runtime::simulateStep(step, machine);
  return scheme;
}

FailureOr<SimulatedScheme>
optgen::simulateNanochatScheme(ScheduleOp schedule,
                               const runtime::Machine &machine) {
  auto optimizer = schedule->getParentOfType<OptimizerOp>();
  ParamTable table;
  if (failed(table.build(optimizer)))
    return failure();
  SimulatedScheme scheme;
  scheme.name = "nanochat";
  for (ParamOp param : optimizer.getBlock().getOps<ParamOp>())
    scheme.paramElements += ShapedType::getNumElements(param.getShape());
  int64_t smallNumel = 0;
  for (DistributeOp distribute : optimizer.getBlock().getOps<DistributeOp>())
    smallNumel = static_cast<int64_t>(distribute.getSmallNumel().value_or(0));
  int64_t elementBytes = 4;
  for (Operation &op : schedule.getBlock())
    if (isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op)) {
      elementBytes = payloadBytes(&op);
      break;
    }

  int world = static_cast<int>(schedule.getWorldSize());
  SimStep step;
  step.worldSize = world;
  std::vector<int> everyone = allRanks(world);
  // Per unit: its reduction and (-1 for a small one) its gather.
  struct Unit {
    int reduction, gather;
  };
  std::vector<Unit> units;
  auto collective = [&](CollectiveKind kind, int64_t elements) {
    SimStep::Collective c;
    c.kind = kind;
    if (world > 1)
      c.instances.push_back({everyone, elements * elementBytes});
    step.collectives.push_back(std::move(c));
    ++scheme.collectives;
    return static_cast<int>(step.collectives.size()) - 1;
  };
  auto addUnit = [&](std::vector<double> seconds, bool small,
                     int64_t elements, StringRef kind, StringRef first,
                     size_t members) {
    scheme.units.push_back(unitSummary(kind, first, members, seconds));
    step.compute.push_back(std::move(seconds));
    int reduction = collective(small ? CollectiveKind::AllReduce
                                     : CollectiveKind::ReduceScatter,
                               elements);
    int gather =
        small ? -1 : collective(CollectiveKind::AllGather, elements);
    units.push_back({reduction, gather});
  };

  for (const ParamTable::BucketInfo &bucket : table.buckets) {
    bool elementwise = isElementwiseRule(bucket.rule);
    SmallVector<const ParamInfo *> matrices;
    for (const std::string &name : bucket.members) {
      const ParamInfo &param = *table.lookup(name);
      if (param.numel < smallNumel) {
        PartCost whole;
        whole.add(param, param.numel);
        addUnit(std::vector<double>(world, whole.seconds(machine)), true,
                param.numel, "small", name, 1);
        continue;
      }
      if (!elementwise) {
        matrices.push_back(&param);
        continue;
      }
      // Its rows, split in equal parts.
      int64_t rows = param.shape.empty() ? 1 : param.shape[0];
      if (rows % world != 0) {
        scheme.unavailable = ("dim 0 of '" + name + "' (" + Twine(rows) +
                              ") does not divide by " + Twine(world) +
                              " ranks")
                                 .str();
        return scheme;
      }
      PartCost part;
      part.add(param, param.numel / world);
      addUnit(std::vector<double>(world, part.seconds(machine)), false,
              param.numel, "rows", name, 1);
    }
    if (matrices.empty())
      continue;
    // Chunks of C = ceil(K / N) matrices, the stack padded to C * N.
    int64_t k = static_cast<int64_t>(matrices.size());
    int64_t chunk = (k + world - 1) / world;
    int64_t numel = matrices[0]->numel;
    std::vector<double> seconds(world, 0);
    for (int r = 0; r < world; ++r) {
      PartCost part;
      for (int64_t i = r * chunk; i < std::min<int64_t>((r + 1) * chunk, k);
           ++i)
        part.add(*matrices[i], matrices[i]->numel);
      seconds[r] = part.seconds(machine);
    }
    scheme.paddingElements += (chunk * world - k) * numel;
    addUnit(std::move(seconds), false, chunk * world * numel, "chunks",
            bucket.members[0], matrices.size());
  }

  // Every reduction; per unit its wait, update and gather; every gather's
  // wait.
  for (const Unit &unit : units)
    step.program.push_back({SimStep::Op::Launch, unit.reduction});
  for (auto [u, unit] : llvm::enumerate(units)) {
    step.program.push_back({SimStep::Op::Wait, unit.reduction});
    step.program.push_back({SimStep::Op::Compute, static_cast<int>(u)});
    if (unit.gather >= 0)
      step.program.push_back({SimStep::Op::Launch, unit.gather});
  }
  for (const Unit &unit : units)
    if (unit.gather >= 0)
      step.program.push_back({SimStep::Op::Wait, unit.gather});
  scheme.result = runtime::simulateStep(step, machine);
  return scheme;
}

FailureOr<SmallVector<ShardGroupChoice>>
optgen::chooseShardGroup(OptimizerOp optimizer, int64_t worldSize,
                         const runtime::Machine &machine) {
  auto planWith = [&](int64_t group) -> FailureOr<ScheduleOp> {
    PassManager pm(optimizer.getContext(), OptimizerOp::getOperationName());
    pm.addPass(createPlanShards({static_cast<int>(worldSize),
                                 static_cast<int>(group)}));
    pm.addPass(createScheduleCollectives());
    if (failed(pm.run(optimizer)))
      return failure();
    return *optimizer.getBlock().getOps<ScheduleOp>().begin();
  };
  SmallVector<ShardGroupChoice> choices;
  size_t best = 0;
  for (int64_t group = 1; group <= worldSize; ++group) {
    if (worldSize % group != 0)
      continue;
    FailureOr<ScheduleOp> schedule = planWith(group);
    if (failed(schedule))
      return failure();
    FailureOr<SimulatedScheme> simulated =
        simulateSchedule(*schedule, machine);
    if (failed(simulated))
      return failure();
    choices.push_back({group, simulated->result.stepSeconds});
    if (choices.back().stepSeconds <= choices[best].stepSeconds)
      best = choices.size() - 1;
  }
  std::rotate(choices.begin(), choices.begin() + best,
              choices.begin() + best + 1);
  if (failed(planWith(choices.front().groupSize)))
    return failure();
  return choices;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

static double ms(double seconds) { return 1e3 * seconds; }

static double paddingPercent(const SimulatedScheme &scheme) {
  return scheme.paramElements
             ? 100.0 * static_cast<double>(scheme.paddingElements) /
                   static_cast<double>(scheme.paramElements)
             : 0;
}

void optgen::printSimulation(const runtime::Machine &machine,
                             const SimulatedScheme &optgen,
                             const SimulatedScheme &nanochat,
                             raw_ostream &os) {
  os << "\nsimulated step on " << machine.name << " (" << machine.description
     << "):\n";
  os << format("  products %.4g TFLOP/s (16-bit inputs), %.4g TFLOP/s (f32); "
               "a symmetric one %.2f of a full one's time\n",
               machine.gemm16 / 1e12, machine.gemm32 / 1e12,
               machine.symmetricCost);
  os << format("  memory %.4g GB/s; %.3g us a launch\n", machine.memory / 1e9,
               machine.launchOverhead * 1e6);
  if (machine.ranksPerNode > 0)
    os << format("  ring collectives: %.4g GB/s and %.3g us a step within "
                 "nodes of %d ranks, %.4g GB/s and %.3g us between nodes\n",
                 machine.linkBandwidth / 1e9, machine.linkLatency * 1e6,
                 machine.ranksPerNode, machine.netBandwidth / 1e9,
                 machine.netLatency * 1e6);
  else
    os << format("  ring collectives: %.4g GB/s and %.3g us a step\n",
                 machine.linkBandwidth / 1e9, machine.linkLatency * 1e6);
  bool both = nanochat.unavailable.empty();
  if (!both)
    os << "  nanochat's scheme cannot run this step: " << nanochat.unavailable
       << "\n";
  os << "\n" << formatv("{0,-40} {1,22}", "", "optgen");
  if (both)
    os << formatv(" {0,22}", "nanochat's scheme");
  os << "\n";
  auto row = [&](const char *label, auto figure) {
    os << formatv("{0,-40} {1,22}", label, figure(optgen));
    if (both)
      os << formatv(" {0,22}", figure(nanochat));
    os << "\n";
  };
  auto text = [](const char *fmt, auto... values) {
    return std::string(formatv(fmt, values...));
  };
  row("step time (ms)", [&](const SimulatedScheme &s) {
    return text("{0:F3}", ms(s.result.stepSeconds));
  });
  row("collectives per step", [&](const SimulatedScheme &s) {
    return text("{0}", s.collectives);
  });
  row("padding (% of the parameters' elements)",
      [&](const SimulatedScheme &s) {
        return text("{0:F3}", paddingPercent(s));
      });
  row("compute, max / mean over ranks (ms)", [&](const SimulatedScheme &s) {
    return text("{0:F3} / {1:F3}", ms(s.result.maxCompute),
                ms(s.result.meanCompute));
  });
  row("load imbalance (compute, max / mean)", [&](const SimulatedScheme &s) {
    return text("{0:F3}", s.result.imbalance);
  });
  row("exposed communication, max / mean (ms)",
      [&](const SimulatedScheme &s) {
        return text("{0:F3} / {1:F3}", ms(s.result.maxExposed),
                    ms(s.result.meanExposed));
      });
  row("idle, max / mean (ms)", [&](const SimulatedScheme &s) {
    return text("{0:F3} / {1:F3}", ms(s.result.maxIdle),
                ms(s.result.meanIdle));
  });

  os << "\nrank  optgen: compute  exposed    idle";
  if (both)
    os << "  nanochat: compute  exposed    idle";
  os << "  (ms)\n";
  for (size_t r = 0; r < optgen.result.ranks.size(); ++r) {
    const runtime::RankTime &a = optgen.result.ranks[r];
    os << format("%4d  %15.3f%9.3f%8.3f", static_cast<int>(r), ms(a.compute),
                 ms(a.exposed), ms(a.idle));
    if (both && r < nanochat.result.ranks.size()) {
      const runtime::RankTime &b = nanochat.result.ranks[r];
      os << format("%19.3f%9.3f%8.3f", ms(b.compute), ms(b.exposed),
                   ms(b.idle));
    }
    os << "\n";
  }
  os << "\n(predicted by the cost model of docs/DISTRIBUTED.md, not "
        "measured; exposed: not computing while a collective of the rank "
        "runs; idle: neither)\n";
}

static void writeSchemeJson(const SimulatedScheme &scheme, raw_ostream &os) {
  os << "{";
  if (!scheme.unavailable.empty()) {
    os << "\"unavailable\": \"";
    printEscapedString(scheme.unavailable, os);
    os << "\"}";
    return;
  }
  const runtime::SimResult &r = scheme.result;
  os << format("\"step_ms\": %.6f, \"collectives\": %d, "
               "\"padding_elements\": %lld, \"param_elements\": %lld, "
               "\"padding_percent\": %.6f, \"imbalance\": %.6f, "
               "\"compute_ms_max\": %.6f, \"compute_ms_mean\": %.6f, "
               "\"exposed_ms_max\": %.6f, \"exposed_ms_mean\": %.6f, "
               "\"idle_ms_max\": %.6f, \"idle_ms_mean\": %.6f, ",
               ms(r.stepSeconds), scheme.collectives,
               static_cast<long long>(scheme.paddingElements),
               static_cast<long long>(scheme.paramElements),
               paddingPercent(scheme), r.imbalance, ms(r.maxCompute),
               ms(r.meanCompute), ms(r.maxExposed), ms(r.meanExposed),
               ms(r.maxIdle), ms(r.meanIdle));
  os << "\"units\": [";
  for (auto [i, unit] : llvm::enumerate(scheme.units)) {
    os << (i ? ", " : "") << "{\"kind\": \"" << unit.kind
       << "\", \"first\": \"";
    printEscapedString(unit.first, os);
    os << "\", \"members\": " << unit.members
       << format(", \"compute_ms_max\": %.6f, \"compute_ms_mean\": %.6f}",
                 ms(unit.maxSeconds), ms(unit.meanSeconds));
  }
  os << "], \"ranks\": [";
  for (auto [i, rank] : llvm::enumerate(r.ranks))
    os << (i ? ", " : "")
       << format("{\"compute_ms\": %.6f, \"exposed_ms\": %.6f, "
                 "\"idle_ms\": %.6f}",
                 ms(rank.compute), ms(rank.exposed), ms(rank.idle));
  os << "]}";
}

void optgen::writeSimulationJson(const runtime::Machine &machine,
                                 const SimulatedScheme &optgen,
                                 const SimulatedScheme &nanochat,
                                 raw_ostream &os) {
  os << "{\"machine\": {\"name\": \"" << machine.name << "\""
     << format(", \"gemm16_tflops\": %g, \"gemm32_tflops\": %g, "
               "\"symmetric_cost\": %g, \"memory_gbs\": %g, "
               "\"launch_us\": %g, \"link_gbs\": %g, \"link_latency_us\": %g, "
               "\"net_gbs\": %g, \"net_latency_us\": %g, "
               "\"ranks_per_node\": %d}",
               machine.gemm16 / 1e12, machine.gemm32 / 1e12,
               machine.symmetricCost, machine.memory / 1e9,
               machine.launchOverhead * 1e6, machine.linkBandwidth / 1e9,
               machine.linkLatency * 1e6, machine.netBandwidth / 1e9,
               machine.netLatency * 1e6, machine.ranksPerNode)
     << ", \"optgen\": ";
  writeSchemeJson(optgen, os);
  os << ", \"nanochat\": ";
  writeSchemeJson(nanochat, os);
  os << "}";
}
