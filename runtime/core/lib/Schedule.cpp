//===- Schedule.cpp - A step as data --------------------------------------===//

#include "optgen/runtime/Schedule.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Sharding.h"

#include <algorithm>

namespace optgen::runtime {

const char *unitKindName(UnitKind kind) {
  switch (kind) {
  case UnitKind::Local:
    return "local";
  case UnitKind::Small:
    return "small";
  case UnitKind::Flat:
    return "flat";
  case UnitKind::Owned:
    return "owned";
  }
  return "invalid";
}

static int64_t numelOf(const ScheduleParam &param) {
  std::optional<int64_t> numel = checkedNumel(param.shape);
  if (!numel)
    throw Error("parameter '" + param.name + "' has an invalid shape " +
                formatShape(param.shape));
  return *numel;
}

/// The rule all of `members` run, or -1.
static int commonRule(const std::vector<ScheduleParam> &params,
                      const std::vector<size_t> &members) {
  if (members.empty())
    return -1;
  int rule = params[members[0]].rule;
  for (size_t p : members)
    if (params[p].rule != rule)
      return -1;
  return rule;
}

/// BF16 when every member's gradient is, else F32.
static DType payloadOf(const std::vector<ScheduleParam> &params,
                       const std::vector<size_t> &members) {
  for (size_t p : members)
    if (params[p].dtype != DType::BF16)
      return DType::F32;
  return members.empty() ? DType::F32 : DType::BF16;
}

static UnitKind kindOf(ShardUnit::Kind kind) {
  switch (kind) {
  case ShardUnit::Kind::Small:
    return UnitKind::Small;
  case ShardUnit::Kind::Flat:
    return UnitKind::Flat;
  case ShardUnit::Kind::Owned:
    return UnitKind::Owned;
  }
  return UnitKind::Local;
}

int shardGroupOf(const StepSchedule &schedule) {
  return schedule.groupSize > 0 ? schedule.groupSize : schedule.worldSize;
}

StepSchedule buildStepSchedule(std::vector<ScheduleParam> params,
                               std::vector<Bucket> buckets,
                               Distribution distribution, int worldSize,
                               int64_t smallNumel, int64_t shardGroup,
                               bool globals) {
  if (worldSize < 1)
    throw Error("a world of " + std::to_string(worldSize) + " ranks");
  StepSchedule schedule;
  schedule.worldSize = worldSize;
  schedule.params = std::move(params);
  schedule.buckets = std::move(buckets);
  const std::vector<ScheduleParam> &all = schedule.params;
  std::vector<ScheduleOp> &program = schedule.program;

  if (distribution == Distribution::None || worldSize == 1) {
    for (const Bucket &bucket : schedule.buckets)
      schedule.units.push_back({UnitKind::Local,
                                commonRule(all, bucket.params),
                                bucket.params,
                                {},
                                {},
                                payloadOf(all, bucket.params),
                                {}});
    int units = static_cast<int>(schedule.units.size());
    if (globals) {
      // Each rank's own gradients: its globals are its own.
      for (int u = 0; u < units; ++u)
        program.push_back({ScheduleOp::Kind::Partials, u, -1});
      program.push_back({ScheduleOp::Kind::FinishGlobals, -1, -1});
    }
    for (int u = 0; u < units; ++u)
      program.push_back({ScheduleOp::Kind::Compute, u, -1});
    deriveRanges(schedule);
    return schedule;
  }

  Plan plan{{}, schedule.buckets};
  std::vector<ShardParam> shardParams;
  for (const ScheduleParam &param : all) {
    plan.groupOf.push_back(param.group);
    shardParams.push_back({param.shape, param.elementwise});
  }
  ShardPlan shards =
      planShards(plan, shardParams, worldSize, smallNumel, shardGroup);
  if (shards.groupSize < worldSize)
    schedule.groupSize = shards.groupSize;
  for (ShardUnit &shard : shards.units)
    schedule.units.push_back({kindOf(shard.kind),
                              commonRule(all, shard.params),
                              shard.params,
                              std::move(shard.owner),
                              std::move(shard.counts),
                              payloadOf(all, shard.params),
                              {}});

  // Every reduction first, so that all of them are in flight while the
  // first units compute; each unit's all-gather as soon as it is computed.
  int units = static_cast<int>(schedule.units.size());
  std::vector<int> reduction(units), gather(units, -1);
  int &tokens = schedule.tokenCount;
  for (int u = 0; u < units; ++u) {
    bool small = schedule.units[u].kind == UnitKind::Small;
    reduction[u] = tokens++;
    program.push_back(
        {small ? ScheduleOp::Kind::AllReduce : ScheduleOp::Kind::ReduceScatter,
         u, reduction[u]});
  }
  if (globals) {
    // The globals wait for every reduction; every update waits for them.
    for (int u = 0; u < units; ++u) {
      program.push_back({ScheduleOp::Kind::Wait, -1, reduction[u]});
      program.push_back({ScheduleOp::Kind::Partials, u, -1});
    }
    int gathered = tokens++;
    program.push_back({ScheduleOp::Kind::GatherPartials, -1, gathered});
    program.push_back({ScheduleOp::Kind::Wait, -1, gathered});
    program.push_back({ScheduleOp::Kind::FinishGlobals, -1, -1});
  }
  for (int u = 0; u < units; ++u) {
    if (!globals)
      program.push_back({ScheduleOp::Kind::Wait, -1, reduction[u]});
    program.push_back({ScheduleOp::Kind::Compute, u, -1});
    if (schedule.units[u].kind != UnitKind::Small) {
      gather[u] = tokens++;
      program.push_back({ScheduleOp::Kind::AllGather, u, gather[u]});
    }
  }
  for (int u = 0; u < units; ++u)
    if (gather[u] >= 0)
      program.push_back({ScheduleOp::Kind::Wait, -1, gather[u]});
  deriveRanges(schedule);
  return schedule;
}

void deriveRanges(StepSchedule &schedule) {
  int ranks = schedule.worldSize;
  if (ranks < 1)
    throw Error("a schedule for " + std::to_string(ranks) + " ranks");
  // Counts and owners are for the positions of a shard group.
  int world = shardGroupOf(schedule);
  if (world < 1 || ranks % world != 0)
    throw Error("a schedule for " + std::to_string(ranks) +
                " ranks in shard groups of " + std::to_string(world));
  const std::vector<ScheduleParam> &params = schedule.params;
  std::vector<int> unitOf(params.size(), -1);
  for (size_t u = 0; u < schedule.units.size(); ++u) {
    StepUnit &unit = schedule.units[u];
    std::string where = "unit " + std::to_string(u) + " (" +
                        unitKindName(unit.kind) + ") of the schedule";
    auto fail = [&](const std::string &what) {
      throw Error(where + ": " + what);
    };
    size_t members = unit.params.size();
    std::vector<int64_t> numels;
    int64_t total = 0;
    for (size_t p : unit.params) {
      if (p >= params.size())
        fail("names parameter " + std::to_string(p) + " of " +
             std::to_string(params.size()));
      if (unitOf[p] >= 0)
        fail("parameter '" + params[p].name + "' is in unit " +
             std::to_string(unitOf[p]) + " too");
      unitOf[p] = static_cast<int>(u);
      if (unit.rule >= 0 && params[p].rule != unit.rule)
        fail("parameter '" + params[p].name + "' runs rule " +
             std::to_string(params[p].rule) + ", not the unit's " +
             std::to_string(unit.rule));
      if (unit.kind == UnitKind::Flat && !params[p].elementwise)
        fail("parameter '" + params[p].name +
             "' is split by element, but its rule is not elementwise");
      numels.push_back(numelOf(params[p]));
      total += numels.back();
    }
    if (unit.payload != DType::F32 && unit.payload != DType::BF16)
      fail("its collectives carry " + std::string(dtypeName(unit.payload)) +
           ", not F32 or BF16");
    bool split = unit.kind == UnitKind::Flat || unit.kind == UnitKind::Owned;
    size_t countsWanted = split ? static_cast<size_t>(world)
                          : unit.kind == UnitKind::Small ? 1
                                                         : 0;
    if (unit.counts.size() != countsWanted)
      fail("it has " + std::to_string(unit.counts.size()) + " counts, not " +
           std::to_string(countsWanted));
    if (unit.kind == UnitKind::Small && unit.counts[0] != total)
      fail("its count is " + std::to_string(unit.counts[0]) +
           ", but its members have " + std::to_string(total) + " elements");
    if (!(unit.kind == UnitKind::Owned ? unit.owners.size() == members
                                       : unit.owners.empty()))
      fail("it has " + std::to_string(unit.owners.size()) + " owners for " +
           std::to_string(members) + " members");
    int64_t counted = 0;
    for (int64_t c : unit.counts) {
      if (c < 0)
        fail("a count is negative");
      counted += c;
    }
    if (unit.kind == UnitKind::Flat && counted < total)
      fail("its parts hold " + std::to_string(counted) + " elements of " +
           std::to_string(total));
    if (unit.kind == UnitKind::Owned) {
      std::vector<int64_t> owned(world, 0);
      for (size_t k = 0; k < members; ++k) {
        int owner = unit.owners[k];
        if (owner < 0 || owner >= world)
          fail("parameter '" + params[unit.params[k]].name +
               "' is owned by rank " + std::to_string(owner) + " of " +
               std::to_string(world));
        if (k > 0 && owner < unit.owners[k - 1])
          fail("its members are not packed by owner");
        owned[owner] += numels[k];
      }
      for (int r = 0; r < world; ++r)
        if (owned[r] != unit.counts[r])
          fail("rank " + std::to_string(r) + "'s part is " +
               std::to_string(unit.counts[r]) + " elements, but it owns " +
               std::to_string(owned[r]));
    }

    unit.ranges.assign(world, std::vector<ElementRange>(members));
    for (int r = 0; r < world; ++r) {
      int64_t mine = 0; // where rank r's part starts in the packed order
      for (int q = 0; q < r && unit.kind == UnitKind::Flat; ++q)
        mine += unit.counts[q];
      int64_t at = 0;
      for (size_t k = 0; k < members; ++k) {
        ElementRange &range = unit.ranges[r][k];
        switch (unit.kind) {
        case UnitKind::Local:
        case UnitKind::Small:
          range = {0, numels[k]};
          break;
        case UnitKind::Owned:
          range = {0, unit.owners[k] == r ? numels[k] : 0};
          break;
        case UnitKind::Flat: {
          int64_t first = std::max(at, mine);
          int64_t last = std::min(at + numels[k], mine + unit.counts[r]);
          range = {std::max<int64_t>(first - at, 0),
                   std::max<int64_t>(last - first, 0)};
          break;
        }
        }
        at += numels[k];
      }
    }
    // Every group alike.
    for (int r = world; r < ranks; ++r)
      unit.ranges.push_back(unit.ranges[r % world]);
  }
  for (size_t p = 0; p < params.size(); ++p)
    if (unitOf[p] < 0)
      throw Error("parameter '" + params[p].name +
                  "' is in no unit of the schedule");
}

Traffic collectiveTraffic(const StepUnit &unit, ScheduleOp::Kind collective,
                          int rank) {
  int64_t size = static_cast<int64_t>(dtypeSize(unit.payload));
  int64_t total = 0;
  for (int64_t c : unit.counts)
    total += c;
  // An all-reduce gives and gets the packed tensors; a reduce-scatter gives
  // them all and gets its part; an all-gather gives the part and gets all.
  switch (collective) {
  case ScheduleOp::Kind::AllReduce:
    return {size * total, size * total};
  case ScheduleOp::Kind::ReduceScatter:
    return {size * total, size * unit.counts.at(rank)};
  case ScheduleOp::Kind::AllGather:
    return {size * unit.counts.at(rank), size * total};
  default:
    return {};
  }
}

Traffic partialsTraffic(int64_t partials, int group) {
  if (group <= 1)
    return {};
  int64_t bytes = partials * static_cast<int64_t>(sizeof(double));
  return {bytes, bytes * group};
}

Traffic collectiveTraffic(const StepSchedule &schedule, int index,
                          ScheduleOp::Kind collective, int rank) {
  const StepUnit &unit = schedule.units.at(index);
  int group = shardGroupOf(schedule);
  if (group == schedule.worldSize || unit.kind == UnitKind::Small)
    return collectiveTraffic(unit, collective, rank % group);
  Traffic traffic;
  if (group > 1)
    traffic = collectiveTraffic(unit, collective, rank % group);
  if (collective == ScheduleOp::Kind::ReduceScatter) {
    int64_t part = static_cast<int64_t>(dtypeSize(unit.payload)) *
                   unit.counts.at(rank % group);
    traffic.sent += part;
    traffic.received += part;
  }
  return traffic;
}

} // namespace optgen::runtime
