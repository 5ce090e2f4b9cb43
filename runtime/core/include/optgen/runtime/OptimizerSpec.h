//===- OptimizerSpec.h - An optimizer as tables -----------------*- C++ -*-===//
//
// Generated code describes its optimizer as tables: rules (their
// hyperparameters, states and step functions), groups (patterns, shape
// conditions and settings), and, when compiled for known parameters, those
// parameters and the compiled step. OptimizerFront.h does the rest.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_OPTIMIZERSPEC_H
#define OPTGEN_RUNTIME_OPTIMIZERSPEC_H

#include "optgen/runtime/Schedule.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace optgen::runtime {

class Executor;
/// A rule's step on a device, for several parameters at once, and the
/// globals' launches: defined by the device's component (cuda:
/// optgen/runtime/DeviceCall.h).
struct DeviceCall;
struct DeviceGlobals;

/// One parameter's step, as a generated rule function receives it. The
/// parameter is seen as rows x cols: a matrix as itself, a vector or a
/// parameter of any rank as one row.
struct RuleCall {
  float *param;
  const float *grad;
  float *const *states;     ///< per state, its storage
  const int64_t *stateRows; ///< per state
  const int64_t *stateCols; ///< per state
  int64_t rows, cols;
  const int64_t *shape; ///< the parameter's own shape
  int rank;
  const double *hypers; ///< the group's values, laid out by HyperSpec::offset
  int64_t step;         ///< 1 at the first step
  /// RuleSpec::workspaceElements(shape, rank) floats of scratch for this
  /// call alone, allocated once at finalize() (null when the rule needs
  /// none). Its contents are undefined at every call.
  float *workspace;
  /// The step's globals (OptimizerSpec::globals, in the order of its
  /// names), finished before any update; null when the spec has none.
  const float *globals = nullptr;
};

/// The rows x cols a rule sees a parameter of `shape` as (RuleCall,
/// DeviceCall): a matrix as itself, a parameter of any other rank as one
/// row of its elements.
inline std::pair<int64_t, int64_t>
asRowsCols(const std::vector<int64_t> &shape) {
  if (shape.size() == 2)
    return {shape[0], shape[1]};
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  return {1, numel};
}

struct HyperSpec {
  const char *name;
  int size;   ///< 1, or the number of values of a tuple
  /// Where its values start in RuleCall::hypers (optgen-assign-hyper-offsets
  /// decides it; generated step functions read it there).
  int offset;
  bool isInt; ///< an int (or a tuple of ints) rather than floats
  bool hasDefault;
  std::vector<double> defaults;
  /// An int the rule counts with (a table slice's bound, as `ns_steps` in
  /// `polar_express[0 : ns_steps]`): setHyper() refuses a negative value.
  bool nonNegative = false;
};

struct RuleSpec {
  const char *name;
  int rank; ///< -1 any, 1 vectors, 2 matrices
  std::vector<HyperSpec> hypers;
  std::vector<const char *> states;
  /// The rows x cols of each state for a parameter of `shape`.
  void (*stateShapes)(const int64_t *shape, int rank, int64_t *rows,
                      int64_t *cols);
  /// The step on the host (generated CPU code), or null.
  void (*step)(const RuleCall &call);
  /// Purely elementwise (no reduction, no shape query): any part of a
  /// parameter can be stepped on its own, so ZeRO-2 splits it by element.
  bool elementwise = false;
  /// The f32 elements of scratch one call for a parameter (or part) of
  /// `shape` needs, or null for none: the executor allocates them once, at
  /// finalize(), per call that may run at once, and never inside a step.
  int64_t (*workspaceElements)(const int64_t *shape, int rank) = nullptr;
  /// The step on a device (generated CUDA code, which leaves `step` null),
  /// or null: launches the rule for every parameter of the call at once.
  void (*launch)(const DeviceCall &call) = nullptr;
};

struct GroupSpec {
  const char *name;
  int rule;
  std::vector<const char *> patterns;
  /// The group's `where` condition on a parameter's shape, or null.
  bool (*where)(const int64_t *shape, int rank);
  std::vector<std::pair<const char *, std::vector<double>>> settings;
};

/// A parameter the optimizer was compiled for (`optgen compile --shapes`):
/// its group is fixed in the generated code, and so is the rule it runs,
/// the group's rule specialised to its shape (-1: the group's rule).
struct PlannedParam {
  const char *name;
  std::vector<int64_t> shape;
  int group;
  int rule;
};

/// A step compiled for known parameters (OptimizerSpec::plannedParams, whose
/// order the units' member indices follow) and a known number of ranks.
/// With one, finalize() plans nothing: it checks that the registered
/// parameters and the communicator's world size are the compiled ones, and
/// step() calls `step`, which runs the executor's primitives in the order
/// of the schedule. Generated code prints it as, for example:
///
///   void compiledStep(optgen::runtime::Executor &x) {
///     optgen::runtime::Token t0 = x.launchAllReduce(0);
///     optgen::runtime::Token t1 = x.launchReduceScatter(1);
///     x.wait(t0);
///     x.compute(0);
///     x.wait(t1);
///     x.compute(1);
///     optgen::runtime::Token t2 = x.launchAllGather(1);
///     x.wait(t2);
///   }
///   ...
///   spec.compiledSchedule = optgen::runtime::CompiledSchedule{2, {
///       {optgen::runtime::UnitKind::Small, -1, {0, 1}, {}, {24},
///        optgen::runtime::DType::F32},
///       {optgen::runtime::UnitKind::Owned, 1, {2, 3}, {0, 1}, {4096, 4096},
///        optgen::runtime::DType::F32}},
///     compiledStep};
struct CompiledSchedule {
  int worldSize = 1;
  /// The units (StepUnit::ranges left empty: the runtime derives them).
  std::vector<StepUnit> units;
  void (*step)(Executor &executor) = nullptr;
  /// Shard groups of this many ranks (StepSchedule::groupSize); 0: one.
  int groupSize = 0;
};

/// How a partial reduction of the globals combines (`sum_params`,
/// `max_params`).
enum class PartialKind { Sum, Max };

/// The spec's globals (`global NAME(p, g) = ...`): values of the whole step,
/// reduced across every parameter, that every rule reads (RuleCall::globals).
/// A step with globals runs in two phases: first every parameter's
/// contribution to each partial reduction (in a distributed step, the part
/// of the averaged gradient a rank holds, each element counted once),
/// combined in a fixed order (parameters in the step's order, then ranks in
/// rank order) and finished into the globals, the same bits on every rank;
/// then the updates.
struct GlobalsSpec {
  /// The globals, in the order RuleCall::globals holds them.
  std::vector<const char *> names;
  /// Per partial, how partials combine (Executor.h: combinePartials).
  std::vector<PartialKind> partials;
  /// The partials of `count` elements of one parameter, or of a part of it:
  /// the parameter's and the gradient's values in f32, into one double per
  /// partial.
  void (*contribution)(const float *param, const float *grad, int64_t count,
                       double *partials) = nullptr;
  /// Every global, from the partials of every parameter combined.
  void (*finish)(const double *partials, float *globals) = nullptr;
  /// On a device (generated CUDA code, which leaves the two above null):
  /// the partials of every member of a launch, each into its row of
  /// DeviceGlobals::memberPartials, with `deviceScratch` floats of scratch
  /// a member; and the finish, from DeviceGlobals::partials into
  /// DeviceGlobals::globals, both in device memory.
  void (*launchContribution)(const DeviceGlobals &call) = nullptr;
  void (*launchFinish)(const DeviceGlobals &call) = nullptr;
  int64_t deviceScratch = 0;
  bool empty() const { return names.empty(); }
};

/// What a step does when a gradient holds a NaN or an infinity.
enum class NonFinitePolicy {
  /// Nothing checks: the rule's math sees it (the default).
  Propagate,
  /// The step changes nothing (no parameter, no state, no step count) on
  /// any rank and is counted, as AMP's GradScaler skips a step.
  Skip,
};

struct OptimizerSpec {
  const char *name;
  std::vector<RuleSpec> rules;
  std::vector<GroupSpec> groups;
  Distribution distribution;
  int64_t smallNumel;
  /// The distribution's shard_group (0: none), for a step the runtime
  /// plans itself.
  int64_t shardGroup = 0;
  /// Empty unless compiled with --shapes: then exactly these parameters
  /// must be registered, and they keep these groups.
  std::vector<PlannedParam> plannedParams = {};
  /// Set when the step was compiled too (--shapes and --world-size).
  std::optional<CompiledSchedule> compiledSchedule = std::nullopt;
  /// The policy for non-finite gradients optimizers start with
  /// (OptimizerFront::setNonFinitePolicy changes it).
  NonFinitePolicy onNonFinite = NonFinitePolicy::Propagate;
  /// The globals (none by default).
  GlobalsSpec globals = {};
  /// A fingerprint of the math the rules compute, from the compiler: the
  /// rules, the globals and every constant the spec and its -D values put
  /// in them, but no hyperparameter's value and nothing of the groups. The
  /// ranks of a step and the checkpoints it loads must have the same. Empty
  /// for an optimizer written by hand, or generated from IR without one.
  const char *math = "";
};

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_OPTIMIZERSPEC_H
