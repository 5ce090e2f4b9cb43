//===- Explain.h - What a distributed step does, per rank -------*- C++ -*-===//
//
// `optgen explain` reads a compiled `optgen.schedule` (it does not plan): per
// rank, what it updates (whole tensors, element ranges, owned matrices),
// the optimizer state it keeps, the bytes it gives to and gets from the
// collectives; and the step's collectives and the balance of its owned
// work. The figures are those the runtime measures when it runs the step.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DRIVER_EXPLAIN_H
#define OPTGEN_DRIVER_EXPLAIN_H

#include "dialect/OptgenDialect.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace optgen {

/// What one rank does in a step.
struct RankLoad {
  /// Elements of optimizer state, in bytes (the runtime keeps f32 state).
  int64_t stateBytes = 0;
  /// The payloads it gives to and gets from the collectives.
  int64_t sentBytes = 0;
  int64_t receivedBytes = 0;
  /// What it updates, in the schedule's order: `NAME (all)` for a small
  /// tensor every rank updates, `NAME` for a whole parameter,
  /// `NAME[first:last]` for a range of a parameter's elements.
  std::vector<std::string> updates;
};

/// A distributed step, as its schedule describes it.
struct StepExplanation {
  std::string optimizer;
  int64_t worldSize = 1;
  /// The ranks of a shard group (hybrid sharding): worldSize unless the
  /// schedule shards within smaller groups.
  int64_t groupSize = 1;
  /// The optimizer's parameters (optgen.param).
  size_t params = 0;
  int allReduces = 0, reduceScatters = 0, allGathers = 0;
  /// With shard groups: per reduce-scatter, the all-reduce of each part
  /// across the groups.
  int crossAllReduces = 0;
  /// With globals: the all-gather of each rank's partials (within the shard
  /// group), one per step, and the globals' names. Every update waits for
  /// it, and so for every reduction.
  int partialsGathers = 0;
  std::vector<std::string> globals;
  /// The most loaded rank's estimated cost of owned matrices over the mean.
  double imbalance = 1;
  std::vector<RankLoad> ranks;
};

/// The figures of `schedule` (verified, each rule's state of known size);
/// failure after a diagnostic.
mlir::FailureOr<StepExplanation> explainSchedule(ScheduleOp schedule);

/// Calls `each(rank, member, first, last)` for every rank of a schedule on
/// `worldSize` ranks and every member of `unit` (whose elements are
/// `numels`, in the unit's order): the rank updates elements [first, last)
/// of the member (none when last == first). One reading of the counts and
/// owners (by a rank's position in its shard group) for explain and the
/// simulation.
void forEachRankPart(
    UnitOp unit, int64_t worldSize, llvm::ArrayRef<int64_t> numels,
    llvm::function_ref<void(int64_t rank, size_t member, int64_t first,
                            int64_t last)>
        each);

/// The explanation as a table, one rank a line.
void printExplanation(const StepExplanation &step, llvm::raw_ostream &os);

/// The explanation's numbers as JSON: world_size, collectives_per_step,
/// imbalance, and per rank state_bytes, sent_bytes, received_bytes; then
/// `extra`'s members (a name and a JSON value each).
void writeExplanationJson(
    const StepExplanation &step, llvm::raw_ostream &os,
    llvm::ArrayRef<std::pair<std::string, std::string>> extra = {});

/// Without shapes: how `optimizer` shares each group's parameters out.
void printDistributionPolicy(OptimizerOp optimizer, llvm::raw_ostream &os);

} // namespace optgen

#endif // OPTGEN_DRIVER_EXPLAIN_H
