//===- Executor.h - What runs a step ----------------------------*- C++ -*-===//
//
// An executor owns the memory of a step on one device (optimizer state,
// packed collective buffers, staging, workspace), allocated once when the
// optimizer is finalized, and runs the step's schedule (Schedule.h) through
// five primitives, which an interpreter of the schedule's program
// (runProgram) and generated straight-line code call alike:
//
//   Token t = x.launchReduceScatter(u);  // pack unit u's gradients, launch
//   x.wait(t);                           // the reduction is visible
//   x.compute(u);                        // step this rank's part of unit u
//   Token g = x.launchAllGather(u);      // share the updated parameters
//   x.wait(g);                           // every rank holds every update
//
// A spec with globals (OptimizerSpec::globals) adds their phase between
// the reductions and the first compute:
//
//   x.accumulatePartials(u);             // after u's reduction: its part
//   Token p = x.launchPartialsGather();  // every unit's in: share them
//   x.wait(p);
//   x.finishGlobals();                   // combined in rank order; every
//                                        // compute reads the globals
//
// Every rank calls the same primitives in the same order. The host executor
// (the cpu component's HostExecutor.h) is one; a CUDA executor is its peer.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_EXECUTOR_H
#define OPTGEN_RUNTIME_EXECUTOR_H

#include "optgen/runtime/Communicator.h"
#include "optgen/runtime/OptimizerSpec.h"
#include "optgen/runtime/Schedule.h"
#include "optgen/runtime/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace optgen::runtime {

/// A collective in flight, given by a launch and taken by wait().
struct Token {
  int slot = -1;
};

/// A registered parameter as its executor sees it.
struct ExecutorParam {
  TensorView param, grad; ///< the caller's memory
  const RuleSpec *rule;
  /// The group's hyperparameters and the parameter's step count, owned by
  /// the optimizer, read at every compute.
  const double *hypers;
  const int64_t *steps;
  /// The rows x cols of each state this rank holds ([1, 0]: none).
  std::vector<int64_t> stateRows, stateCols;
};

/// What an executor is prepared with: a schedule, this rank, and the
/// parameters (parallel to schedule->params). Everything pointed to outlives
/// the executor's use of it.
struct ExecutorSetup {
  const StepSchedule *schedule;
  int rank;
  std::vector<ExecutorParam> params;
  Communicator *communicator;
  /// NonFinitePolicy::Skip: a step in which any rank's gradient holds a NaN
  /// or an infinity computes and gathers nothing (lastStepSkipped()).
  bool skipNonFinite = false;
  /// With shard groups (schedule->groupSize): the rank's group, where
  /// reduce-scatters and all-gathers run, and the ranks of its position in
  /// every group, where a reduce-scatter's part is averaged. Null without.
  Communicator *groupCommunicator = nullptr;
  Communicator *crossCommunicator = nullptr;
  /// The spec's globals; null or empty when it has none (prepare() is then
  /// not asked for them).
  const GlobalsSpec *globals = nullptr;
};

class Executor {
public:
  virtual ~Executor();

  /// Allocates everything a step needs; called once, by finalize(). Throws
  /// Error naming the parameter it cannot step (memory on another device).
  virtual void prepare(const ExecutorSetup &setup) = 0;

  /// Whether it runs schedules with shard groups (hybrid sharding).
  virtual bool runsShardGroups() const { return false; }

  /// Around every step's primitives. endStep() throws Error when the step
  /// left a unit incomplete (a collective not waited for, a unit not
  /// computed).
  virtual void beginStep() = 0;
  virtual void endStep() = 0;

  /// The step's primitives. Each throws Error when called out of order
  /// (computing a unit before its reduction was waited for, launching a
  /// collective the unit's kind does not have, twice in a step, ...).
  /// A Small unit's gradients, packed and averaged over the ranks.
  virtual Token launchAllReduce(int unit) = 0;
  /// A Flat or Owned unit's gradients, packed; each rank gets its part.
  virtual Token launchReduceScatter(int unit) = 0;
  /// A computed Flat or Owned unit's updated parts, to every rank.
  virtual Token launchAllGather(int unit) = 0;
  /// The collective's result is visible to what follows (Request::wait());
  /// an all-gather's, in the parameters.
  virtual void wait(Token token) = 0;
  /// Steps this rank's part of the unit's parameters.
  virtual void compute(int unit) = 0;

  /// Parameter `param`'s memory and its gradient's move to `data` and
  /// `grad` (the same shape, dtype and device as prepared; the front checks
  /// them), between steps: the next step reads and writes them there.
  /// Throws Error where the executor cannot (the default).
  virtual void rebind(size_t param, const TensorView &data,
                      const TensorView &grad);
  /// The globals' primitives (ExecutorSetup::globals), in this order, every
  /// unit's partials before the gather (on one rank, or with local units,
  /// none) and the finish before any compute. The default executor has no
  /// globals: each throws Error.
  /// Combines this rank's part of the unit (what compute() would update;
  /// a Small unit at the first rank of each shard group only, so that
  /// every element counts once) into the step's partials, from the
  /// gradients compute() would read.
  virtual void accumulatePartials(int unit);
  /// Launches the all-gather of every rank's partials within its shard
  /// group (every rank of the step without shard groups).
  virtual Token launchPartialsGather();
  /// Combines the gathered partials in rank order and computes the
  /// globals, which the computes that follow read.
  virtual void finishGlobals();
  /// Whether it runs steps with globals; prepare() is not asked to
  /// otherwise.
  virtual bool runsGlobals() const { return false; }
  /// The globals the last step finished, in GlobalsSpec::names order
  /// (host memory); empty before a step has.
  virtual std::vector<float> globalValues() const { return {}; }

  /// Copies this rank's part of state `state` of parameter `param` (the
  /// stateRows x stateCols it was prepared with) to or from host memory.
  virtual void readState(size_t param, size_t state, float *values) const = 0;
  virtual void writeState(size_t param, size_t state, const float *values) = 0;

  /// Whether it can skip steps with non-finite gradients
  /// (ExecutorSetup::skipNonFinite); prepare() is not asked to otherwise.
  virtual bool canSkipNonFinite() const { return false; }
  /// Whether the last step was skipped, every rank agreeing.
  virtual bool lastStepSkipped() const { return false; }

  /// Bytes of optimizer state held.
  virtual int64_t stateBytes() const = 0;
  /// Bytes this rank gave to and got from collectives in the last step.
  virtual int64_t bytesSent() const = 0;
  virtual int64_t bytesReceived() const = 0;
};

/// Where a unit is in a step; the primitives move it along, in this order
/// (a Local unit is only computed). Every executor's units go so.
enum class UnitPhase { Idle, Reducing, Reduced, Computed, Gathering, Done };

/// The phase a unit of `kind` ends a step in: Done after its all-gather
/// (Flat, Owned), else Computed.
UnitPhase finalPhase(UnitKind kind);

/// What a primitive that found unit `unit` ("unit 3 (flat)") in `phase`
/// throws: "unit 3 (flat): compute while its reduction is in flight".
std::string outOfOrder(const std::string &unit, const char *primitive,
                       UnitPhase phase);

/// What endStep() throws for a unit of `kind` left in `phase`: "the step
/// left unit 3 (flat) incomplete: its all-gather was not waited for".
std::string incompleteUnit(const std::string &unit, UnitKind kind,
                           UnitPhase phase);

/// The partials of a step before anything is combined into them: 0 for a
/// sum, -infinity for a max.
void resetPartials(const GlobalsSpec &globals, double *partials);
/// Combines `more` into `partials`, partial by partial: a sum adds, a max
/// keeps the larger (as the printed kernels' reductions do). The one
/// combination every executor uses, for parameters and ranks alike, in a
/// fixed order.
void combinePartials(const GlobalsSpec &globals, double *partials,
                     const double *more);

/// Runs `schedule.program` on `executor` (the caller brackets it with
/// beginStep() and endStep()).
void runProgram(const StepSchedule &schedule, Executor &executor);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_EXECUTOR_H
