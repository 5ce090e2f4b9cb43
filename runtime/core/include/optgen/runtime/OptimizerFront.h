//===- OptimizerFront.h - The device-agnostic optimizer ---------*- C++ -*-===//
//
// The optimizer generated code derives from, as one device-agnostic front
// and an executor that owns the step's memory and runs it (Executor.h). The
// front registers parameters, binds them to groups and builds the step's
// schedule at finalize() (the one planner and sharding planner, through
// buildStepSchedule; or the schedule compiled into the code, checked),
// keeps hyperparameters and step counts, and writes and reads checkpoints.
// The cpu component's Optimizer.h is this front on the host executor.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_OPTIMIZERFRONT_H
#define OPTGEN_RUNTIME_OPTIMIZERFRONT_H

#include "optgen/runtime/Communicator.h"
#include "optgen/runtime/Executor.h"
#include "optgen/runtime/OptimizerSpec.h"
#include "optgen/runtime/Planner.h"
#include "optgen/runtime/Schedule.h"
#include "optgen/runtime/Tensor.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace optgen::runtime {

class OptimizerFront {
public:
  /// An optimizer described by `spec` that steps on `executor`.
  OptimizerFront(OptimizerSpec spec, std::unique_ptr<Executor> executor);
  virtual ~OptimizerFront();
  OptimizerFront(const OptimizerFront &) = delete;
  OptimizerFront &operator=(const OptimizerFront &) = delete;

  /// Registers a parameter and its gradient (the same shape and dtype, F32
  /// or BF16, on a device the executor steps). Both stay the caller's memory
  /// and must not move while the optimizer lives; step() reads the gradient
  /// as it is then (the optimizer never zeroes it). The group is the first
  /// whose patterns and condition match the name and shape, chosen at
  /// finalize().
  void addParameter(const std::string &name, TensorView param, TensorView grad);
  /// Registers a parameter into the named group, whatever its name.
  void addParameter(const std::string &name, TensorView param, TensorView grad,
                    const std::string &group);

  /// Moves a registered parameter's memory and its gradient's (the same
  /// shape, dtype and device as registered), before finalize() or between
  /// steps: the next step reads and writes them there. For frameworks whose
  /// gradient may be a new tensor at every step (PyTorch's
  /// zero_grad(set_to_none=True)); nothing else changes (state, step
  /// counts, the plan).
  void rebind(const std::string &name, TensorView param, TensorView grad);

  /// Adds a group running the rule named `rule` with its defaults, which
  /// matches no name: parameters join it by the explicit addParameter. Used
  /// to replay cases that bind parameters themselves.
  void addGroup(const std::string &name, const std::string &rule);

  /// The ranks a `distribute zero2` optimizer shares its step with (the
  /// default: this process alone). Call before finalize().
  void setCommunicator(std::unique_ptr<Communicator> communicator);

  /// Builds the step's schedule (groups, buckets of same-shape matrices,
  /// the distributed step), or checks the compiled one against the
  /// registered parameters and the world size, and has the executor
  /// allocate the state and everything else a step needs. Errors name the
  /// parameter at fault (two whose memory overlaps, too). Under several ranks every rank calls it, and the
  /// ranks agree (Agreement.h) that they hold the same parameters in the
  /// same order, with the same shapes, dtypes and groups, the same spec and
  /// the same plan: otherwise, or when it failed on any rank, it throws
  /// AgreedError on every rank, naming the rank and the first difference.
  void finalize();

  /// One optimizer step with the gradients now in the registered memory.
  /// First, when memory was registered or moved since the last step, no
  /// parameter's memory may overlap another's or a gradient's (one tensor
  /// registered twice would be stepped twice). Under several ranks the
  /// ranks then agree (Agreement.h: 32 bytes a rank) that each holds the
  /// same hyperparameters, and that none failed that check: otherwise every
  /// rank throws AgreedError, naming the rank and the first difference,
  /// before anything changed. A step that fails on one rank later cannot be
  /// recovered (the others wait inside its collectives): the rank reports
  /// the error on stderr and ends every rank (Communicator::abort).
  void step();

  /// What a step does when a gradient holds a NaN or an infinity (the
  /// spec's OptimizerSpec::onNonFinite unless set; before finalize()).
  /// Skip needs an executor that can (the host's): a step in which any
  /// rank's gradient is non-finite then leaves every parameter, state and
  /// step count as it was, on every rank, and is counted.
  void setNonFinitePolicy(NonFinitePolicy policy);
  NonFinitePolicy nonFinitePolicy() const { return onNonFinite_; }
  /// Steps skipped for non-finite gradients, and whether the last one was.
  int64_t skippedSteps() const { return skipped_; }
  bool lastStepSkipped() const { return lastSkipped_; }

  /// Sets a hyperparameter of a group; takes effect at the next step.
  void setHyper(const std::string &group, const std::string &name,
                double value);
  void setHyper(const std::string &group, const std::string &name,
                const std::vector<double> &values);
  /// Throws the Error setHyper() would for these values, changing nothing
  /// (for callers that check a whole set before they apply any of it).
  void checkHyper(const std::string &group, const std::string &name,
                  const std::vector<double> &values) const;
  /// A float or int hyperparameter of a group.
  double hyper(const std::string &group, const std::string &name) const;
  /// A hyperparameter's values (a tuple's elements; one for the others).
  std::vector<double> hyperValues(const std::string &group,
                                  const std::string &name) const;

  /// The spec's globals (`global NAME(p, g) = ...`), in its order, and the
  /// value the last step gave the named one (in a distributed step, the
  /// same on every rank; a skipped step's too). Throws Error for a name
  /// that is not a global, or before a step.
  std::vector<std::string> globalNames() const;
  double globalValue(const std::string &name) const;

  /// Steps taken by the named parameter.
  int64_t stepCount(const std::string &param) const;
  /// Bytes of optimizer state held.
  int64_t stateBytes() const;
  /// Bytes this rank gave to and got from collectives in the last step (as
  /// optgen explain counts them).
  int64_t bytesSent() const;
  int64_t bytesReceived() const;
  /// The group a parameter was bound to (after finalize()).
  std::string groupOf(const std::string &param) const;
  /// The plan as a table: per bucket its group, rule, shape and parameters.
  std::string describePlan() const;
  const OptimizerSpec &spec() const { return spec_; }
  const Communicator &communicator() const { return *communicator_; }
  Communicator &communicator() { return *communicator_; }
  /// The step (after finalize()).
  const StepSchedule &schedule() const;

  // Checkpoints (OptimizerCheckpoint.cpp).
  /// Fingerprints of the spec's tables (rules, their hyperparameters and
  /// states, groups) and of the plan (each parameter's shape, group and
  /// rule, whatever the number of ranks), as checkpoints store them (after
  /// finalize()).
  std::string specFingerprint() const;
  std::string planFingerprint() const;

  /// Writes / reads every parameter's state (each state tensor shaped as
  /// its parameter when it has as many elements), step count and the
  /// groups' hyperparameters (safetensors, keyed by parameter name, so a
  /// checkpoint is independent of the plan and of the executor's layout),
  /// with a format version, the fingerprints of the spec and the plan, and
  /// a checksum of everything (docs/RELIABILITY.md). Under a multi-rank
  /// communicator every rank calls them: the sharded state is gathered to
  /// rank 0, which writes it; every rank reads its part back, whatever the
  /// number of ranks that saved it.
  ///
  /// saveState() writes atomically: on failure the previous file is left
  /// as it was. loadState() checks everything (format, checksum, spec,
  /// parameters and shapes, step counts, hyperparameters) before it
  /// changes anything: a refused file leaves the optimizer as it was, and
  /// the error names the file and what differs. Under several ranks both
  /// fail on every rank when they fail on one (AgreedError), and the ranks
  /// must have read the same checkpoint.
  void saveState(const std::string &path);
  void loadState(const std::string &path);

  /// The checkpoint saveState() writes, in memory, on every rank (each
  /// receives all of the state): its metadata and tensors, as a file has
  /// them. importState() takes one back as loadState() does, with every
  /// check and the agreement, the checksum too (a program may move the
  /// tensors, not change a bit of them or of the metadata; `source` names
  /// the checkpoint in errors). For frameworks that keep checkpoints
  /// themselves (PyTorch's state_dict()).
  struct Checkpoint {
    std::map<std::string, std::string> metadata;
    std::map<std::string, Tensor> tensors;
  };
  Checkpoint exportState();
  void importState(const std::map<std::string, std::string> &metadata,
                   const std::map<std::string, TensorView> &tensors,
                   const std::string &source);

private:
  struct Param {
    std::string name;
    TensorView param, grad;
    std::string group; ///< explicit group, or empty
    int rule = -1;     ///< the planned rule, or -1 for the group's
    std::vector<int64_t> fullRows, fullCols; ///< the states' whole shapes
    std::vector<int64_t> heldRows, heldCols; ///< what this rank holds
    ElementRange part;                       ///< what this rank steps
    int64_t steps = 0;
    size_t registered = 0; ///< its place in registration order
  };

  /// finalize() on this rank alone.
  void finalizeHere();
  /// The error of registered memory that overlaps where it must not (a
  /// parameter's with another's, or with a gradient when `gradients`), or
  /// "".
  std::string overlapError(bool gradients) const;

  /// Checks the registered parameters against spec().plannedParams and
  /// binds them to their planned groups and rules.
  void applyPlannedGroups();
  /// The schedule compiled into the code, after checking the world size.
  StepSchedule compiledSchedule() const;
  /// The schedule planned for the registered parameters.
  StepSchedule plannedSchedule();
  /// What each rank steps of each parameter (schedule order).
  std::vector<ElementRange> partsOf(int rank) const;
  size_t groupIndex(const std::string &name) const;
  /// The rule parameter `param` runs (after finalize()).
  const RuleSpec &ruleOf(size_t param) const;
  size_t paramIndex(const std::string &name) const;
  size_t hyperIndex(size_t group, const std::string &name,
                    size_t *offset) const;
  /// Throws unless the rule's hyperparameters fit its array without overlap.
  static void checkHyperLayout(const RuleSpec &rule);
  /// The rule's array of hyperparameter values, defaults set, others 0.
  static std::vector<double> defaultHypers(const RuleSpec &rule);

  // What the ranks compare (OptimizerAgreement.cpp).
  /// What the ranks compare at finalize() (JSON): the spec, the parameters
  /// in registration order, the plan.
  std::string agreementDescription() const;
  /// How rank `rank`'s agreementDescription() differs from rank 0's.
  static std::string explainDifference(const std::string &first,
                                       const std::string &theirs, int rank);
  /// What the ranks compare before each step: the hyperparameters' values
  /// (bytes), and how rank `rank`'s differ from rank 0's.
  std::string stepDescription() const;
  std::string explainStepDifference(const std::string &first,
                                    const std::string &theirs,
                                    int rank) const;

  // Checkpoints (OptimizerCheckpoint.cpp).
  /// The checkpoint's tables: the spec's structure and the plan (JSON).
  std::string specJson() const;
  std::string planJson() const;
  std::string hypersJson() const;
  /// The checkpoint, gathered whole on rank 0 (`everyRank`: on every rank).
  Checkpoint gatherState(bool everyRank);
  /// Reads a checkpoint's metadata and tensors (throwing Error when it
  /// cannot); the views stay valid while restoreState() runs.
  using CheckpointReader =
      std::function<void(std::map<std::string, std::string> &metadata,
                         std::map<std::string, TensorView> &tensors)>;
  /// loadState() and importState(): reads the checkpoint `source` (as
  /// errors name it), checks it and makes it the state, every rank
  /// agreeing.
  void restoreState(const std::string &source, const CheckpointReader &read);
  /// The shape state `state` of parameter `param` is stored with.
  std::vector<int64_t> storedStateShape(size_t param, size_t state) const;

  OptimizerSpec spec_;
  // The communicators before the executor, which the destructor ends
  // first: its CUDA graph holds the communicators' collectives, and NCCL
  // waits in ncclCommDestroy until no graph holds them.
  std::unique_ptr<Communicator> communicator_;
  /// With shard groups: this rank's group, and the ranks of its position
  /// across the groups (splits of communicator_).
  std::unique_ptr<Communicator> groupCommunicator_, crossCommunicator_;
  std::unique_ptr<Executor> executor_;
  std::deque<std::string> addedNames_; ///< names of groups from addGroup()
  /// "group/hyper" of hyperparameters without a value yet.
  std::set<std::string> unset_;
  /// In registration order until finalize(), then in the schedule's.
  std::vector<Param> params_;
  /// Each parameter's index in params_, by name (a model may have tens of
  /// thousands).
  std::unordered_map<std::string, size_t> paramAt_;
  std::vector<std::vector<double>> hypers_; ///< per group, flattened
  StepSchedule schedule_;
  bool finalized_ = false;
  NonFinitePolicy onNonFinite_ = NonFinitePolicy::Propagate;
  int64_t skipped_ = 0;
  bool lastSkipped_ = false;
  /// Whether the registered memory was checked for overlaps since it last
  /// changed (step() checks it then).
  bool memoryChecked_ = false;
};

/// The checksum an optimizer checkpoint stores as its "checksum" metadata:
/// of its other metadata (by key) and of its tensors (by name: dtype, shape,
/// bytes), 16 hex digits. For tools (and tests) that rewrite checkpoints.
std::string checkpointChecksum(
    const std::map<std::string, std::string> &metadata,
    const std::map<std::string, TensorView> &tensors);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_OPTIMIZERFRONT_H
