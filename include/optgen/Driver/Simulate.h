//===- Simulate.h - A distributed step's timeline, predicted ----*- C++ -*-===//
//
// `optgen explain --simulate`: one step per rank on a model machine
// (runtime/CostModel.h), from the compiled schedule and the work of each
// update counted from the IR (updateWork: flops of its products, the Polar
// Express iterations included, bytes of its elementwise kernels, its
// launches); and, beside it, the same model applied to nanochat's own
// distributed scheme (DistMuonAdamW) on the same parameters and rules.
// updateWork is the one place the work is counted, for both.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DRIVER_SIMULATE_H
#define OPTGEN_DRIVER_SIMULATE_H

#include "dialect/OptgenDialect.h"
#include "optgen/runtime/CostModel.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace optgen {

/// The work of updating a whole parameter of `shape` with `rule` (a rule
/// of the optimizer, in any stage; counted best after optgen-fuse-kernels)
/// under `group`'s settings (which give, for instance, a table loop's trip
/// count). Failure after a diagnostic.
mlir::FailureOr<runtime::Work> updateWork(RuleOp rule, GroupOp group,
                                          llvm::ArrayRef<int64_t> shape);

/// One scheme of distributing the step, simulated.
struct SimulatedScheme {
  std::string name;
  /// Why the scheme cannot run this step (then nothing else is set).
  std::string unavailable;
  int collectives = 0;
  /// Elements the collectives carry beyond the parameters' (padding), and
  /// the parameters' elements.
  int64_t paddingElements = 0, paramElements = 0;
  runtime::SimResult result;
  /// What it computes, unit by unit (in the program's order of units):
  /// its kind, first member and members, and the compute of the busiest
  /// rank's part and the mean over ranks.
  struct Unit {
    std::string kind, first;
    size_t members = 0;
    double maxSeconds = 0, meanSeconds = 0;
  };
  std::vector<Unit> units;
};

/// The step `schedule` describes, on `machine`.
mlir::FailureOr<SimulatedScheme> simulateSchedule(ScheduleOp schedule,
                                                  const runtime::Machine &machine);

/// nanochat's DistMuonAdamW on the parameters of `schedule`'s optimizer and
/// its world size, on `machine`: a parameter under the distribution's
/// small_numel all-reduced alone and updated everywhere; any other
/// parameter of an elementwise rule reduce-scattered alone along dim 0
/// (which must divide by the ranks), each rank updating its rows; the
/// matrices of each bucket (one shape) stacked, padded to ceil(K/N) * N
/// and split in chunks of ceil(K/N), rank r updating matrices
/// [r C, (r + 1) C) that exist. Reductions launched in that order, then per
/// parameter or bucket its wait, update and all-gather.
mlir::FailureOr<SimulatedScheme>
simulateNanochatScheme(ScheduleOp schedule, const runtime::Machine &machine);

/// A shard group size and the step the model predicts with it.
struct ShardGroupChoice {
  int64_t groupSize = 0;
  double stepSeconds = 0;
};

/// Plans `optimizer`'s step on `worldSize` ranks (replacing its schedule)
/// with each shard group size that divides the world, simulates each on
/// `machine`, and keeps the plan of the fastest (the largest group among
/// equals: the least state per rank). The optimizer's rules must be
/// lowered to kernels (their work is counted). Returns every candidate,
/// the chosen one first; failure after a diagnostic.
mlir::FailureOr<llvm::SmallVector<ShardGroupChoice>>
chooseShardGroup(OptimizerOp optimizer, int64_t worldSize,
                 const runtime::Machine &machine);

/// The two side by side: a summary, then per rank.
void printSimulation(const runtime::Machine &machine,
                     const SimulatedScheme &optgen,
                     const SimulatedScheme &nanochat, llvm::raw_ostream &os);

/// The same as a JSON object (no newline).
void writeSimulationJson(const runtime::Machine &machine,
                         const SimulatedScheme &optgen,
                         const SimulatedScheme &nanochat,
                         llvm::raw_ostream &os);

} // namespace optgen

#endif // OPTGEN_DRIVER_SIMULATE_H
