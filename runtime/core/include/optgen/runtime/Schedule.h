//===- Schedule.h - A step as data ------------------------------*- C++ -*-===//
//
// One description of an optimizer step, for every rank at once: the units
// of work (a bucket stepped where it is, or the parameters one collective
// carries), and the program, the ordered operations every rank runs:
// launch a unit's all-reduce, reduce-scatter or all-gather with a token,
// wait for a token, compute a unit. An executor (Executor.h) runs it, from
// this data (runProgram) or from generated straight-line code that calls
// the same primitives in the same order.
//
// buildStepSchedule makes it from the one planner (planStep's buckets) and
// the one sharding planner (planShards):
//
// - not distributed, or one rank: one Local unit per bucket, computed in
//   bucket order; no collectives.
// - ZeRO-2 on N ranks: planShards' units (Small, Flat, Owned), in three
//   phases: every reduction launched; then per unit its wait, its compute
//   and (Flat, Owned) the launch of its all-gather; then every all-gather's
//   wait.
//
// With globals (OptimizerSpec::globals) every update waits for them: each
// unit's partials come first (after its reduction's wait), then, on N
// ranks, the partials' all-gather and its wait, then the finish, and only
// then the computes (and all-gathers) of every unit.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_SCHEDULE_H
#define OPTGEN_RUNTIME_SCHEDULE_H

#include "optgen/runtime/Planner.h"
#include "optgen/runtime/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace optgen::runtime {

enum class Distribution { None, Zero2 };

/// A parameter as the schedule sees it.
struct ScheduleParam {
  std::string name;
  std::vector<int64_t> shape;
  size_t group; ///< index into the optimizer's groups
  int rule;     ///< index into the optimizer's rules: the rule it runs
  /// The rule is elementwise: any part of the parameter steps on its own.
  bool elementwise = false;
  /// Its gradient's dtype: a unit's collectives carry BF16 when all of its
  /// parameters' gradients are BF16, else F32.
  DType dtype = DType::F32;
};

enum class UnitKind {
  /// Every rank steps every member whole from its own gradient: no
  /// collectives (a bucket, when not distributed or on one rank).
  Local,
  /// The members' gradients, packed, are all-reduced (averaged); every
  /// rank then steps every member whole.
  Small,
  /// The members' gradients, packed and padded, are reduce-scattered in
  /// equal parts; each rank steps the elements of its part; the parts are
  /// all-gathered. Elementwise rules only.
  Flat,
  /// Packed by owner; reduce-scattered so that each rank's part is the
  /// members it owns, which it steps whole; the parts are all-gathered.
  Owned,
};

/// "local", "small", "flat", "owned".
const char *unitKindName(UnitKind kind);

/// Elements [begin, begin + length) of a parameter.
struct ElementRange {
  int64_t begin = 0, length = 0;
};

struct StepUnit {
  UnitKind kind = UnitKind::Local;
  /// The rule every member runs, or -1 when they differ (a Small or Flat
  /// unit packs several groups).
  int rule = -1;
  /// The members (indices into StepSchedule::params), in packed order.
  std::vector<size_t> params;
  /// Owned: per member, the rank that steps it; ranks ascending, so that
  /// each rank's members are one contiguous part. Empty otherwise.
  std::vector<int> owners;
  /// Flat and Owned: per rank, the elements of its part (the
  /// reduce-scatter's result and the all-gather's contribution); Flat
  /// parts are equal, their sum the members' elements padded to a multiple
  /// of the ranks. Small: one count, the members' elements. Local: empty.
  std::vector<int64_t> counts;
  /// What the unit's collectives carry: F32 or BF16.
  DType payload = DType::F32;
  /// [rank][member]: the elements of the member that rank steps (length 0:
  /// none), relative to the member's first element. Derived from the
  /// fields above by deriveRanges().
  std::vector<std::vector<ElementRange>> ranges = {};
};

struct ScheduleOp {
  enum class Kind {
    AllReduce,
    ReduceScatter,
    AllGather,
    Wait,
    Compute,
    /// The globals' phase (Executor.h): a unit's partials, the partials'
    /// all-gather (a token, no unit), their finish (neither).
    Partials,
    GatherPartials,
    FinishGlobals,
  };
  Kind kind;
  int unit;  ///< the unit (-1 for Wait, GatherPartials and FinishGlobals)
  int token; ///< the token a collective gives or a Wait takes (else -1)
};

/// A step for `worldSize` ranks.
struct StepSchedule {
  int worldSize = 1;
  /// Hybrid sharding: the ranks form groups of `groupSize` consecutive
  /// ranks, each sharing the units out alike (counts and owners name the
  /// positions of a group; rank r takes position r % groupSize); a
  /// reduce-scatter averages within the group, then its part across the
  /// groups; an all-gather stays in the group. 0: one group of every rank.
  int groupSize = 0;
  std::vector<ScheduleParam> params;
  /// Same-shape parameters of a group (planStep's buckets).
  std::vector<Bucket> buckets;
  std::vector<StepUnit> units;
  /// What every rank runs; empty when compiled code is the program
  /// (OptimizerSpec::compiledSchedule).
  std::vector<ScheduleOp> program;
  /// The tokens the program's collectives give: 0 .. tokenCount - 1.
  int tokenCount = 0;
};

/// The schedule of a step over `params` grouped into `buckets`: Local units
/// when `distribution` is None or `worldSize` is 1, else planShards' units
/// for ZeRO-2 (`smallNumel` the size under which a tensor is all-reduced,
/// `shardGroup` the spec's shard_group, 0 when it has none); with
/// `globals`, the globals' phase before every update.
StepSchedule buildStepSchedule(std::vector<ScheduleParam> params,
                               std::vector<Bucket> buckets,
                               Distribution distribution, int worldSize,
                               int64_t smallNumel, int64_t shardGroup = 0,
                               bool globals = false);

/// The ranks of a shard group of `schedule`: groupSize, or every rank.
int shardGroupOf(const StepSchedule &schedule);

/// Fills each unit's `ranges` from its kind, members, owners and counts,
/// after checking that they fit together on `schedule.worldSize` ranks
/// (counts that cover the members, owners in range and ascending, a common
/// rule that the members run) and that every parameter is in exactly one
/// unit. Throws Error naming the unit or parameter at fault: a schedule
/// written by generated code is checked before it runs.
void deriveRanges(StepSchedule &schedule);

/// Bytes a rank gives to and gets from one collective of `unit` (AllReduce,
/// ReduceScatter or AllGather), as `optgen explain` counts them.
struct Traffic {
  int64_t sent = 0, received = 0;
};
Traffic collectiveTraffic(const StepUnit &unit, ScheduleOp::Kind collective,
                          int rank);
/// The same in a schedule that may have shard groups: a reduce-scatter also
/// gives and gets the rank's part across the groups, and within a group of
/// one rank a reduce-scatter or all-gather is a copy.
Traffic collectiveTraffic(const StepSchedule &schedule, int unit,
                          ScheduleOp::Kind collective, int rank);
/// The partials' all-gather of `partials` doubles a rank, within shard
/// groups of `group` ranks: each rank gives its own and gets every rank's
/// of its group (nothing within a group of one).
Traffic partialsTraffic(int64_t partials, int group);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_SCHEDULE_H
