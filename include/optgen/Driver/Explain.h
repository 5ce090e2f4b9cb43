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

/// Elements [first, last) of member `member` of unit `unit` (in the
/// schedule's order), which a rank updates.
struct PartUpdate {
  unsigned unit;
  unsigned member;
  int64_t first, last;
};

/// What the ranks of one position in a shard group do in a step: every
/// group shards the step alike, so rank r does what position r % groupSize
/// does (without shard groups, each rank is a position of its own).
struct PositionLoad {
  /// Elements of optimizer state, in bytes (the runtime keeps f32 state).
  int64_t stateBytes = 0;
  /// The payloads it gives to and gets from the collectives.
  int64_t sentBytes = 0;
  int64_t receivedBytes = 0;
  /// Its parts of the units that share parameters out (flat, owned), in the
  /// schedule's order.
  std::vector<PartUpdate> updates;
};

/// A unit of the step, as explain prints it.
struct ExplainedUnit {
  UnitKind kind;
  std::vector<std::string> names;
  std::vector<int64_t> numels;
  /// Small and local units: every rank updates each member whole.
  bool everyRank() const {
    return kind == UnitKind::small || kind == UnitKind::local;
  }
};

/// A distributed step, as its schedule describes it. Its size grows with
/// the parameters and the ranks of a shard group, each once (not with
/// their product): at 10^6 ranks explain takes seconds.
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
  std::vector<ExplainedUnit> units;
  /// groupSize of them.
  std::vector<PositionLoad> positions;
  const PositionLoad &rank(int64_t r) const {
    return positions[static_cast<size_t>(r % groupSize)];
  }
};

/// The figures of `schedule` (verified, each rule's state of known size);
/// failure after a diagnostic.
mlir::FailureOr<StepExplanation> explainSchedule(ScheduleOp schedule);

/// Calls `each(position, member, first, last)` for the parts of `unit`'s
/// members (whose elements are `numels`, in the unit's order) that each
/// position of a shard group updates, elements [first, last) with last >
/// first: for a small or local unit every position and every member, for a
/// flat or owned one only the parts a position has (as many calls as
/// positions and members together). One reading of the counts and owners
/// for explain and the simulation.
void forEachPositionPart(
    UnitOp unit, llvm::ArrayRef<int64_t> numels,
    llvm::function_ref<void(int64_t position, size_t member, int64_t first,
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
