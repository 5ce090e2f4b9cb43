//===- OptimizerFront.h - The device-agnostic optimizer ----*- C++ -*-===//
//
// Generated code describes its optimizer as tables (rules with their
// hyperparameters, states and step functions; groups with their patterns,
// shape conditions and settings) and derives from Optimizer, which does the
// rest: registering parameters, planning (the one planner, Planner.h),
// allocating state, keeping hyperparameters, stepping, and checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_OPTIMIZERFRONT_H
#define OPTGEN_RUNTIME_OPTIMIZERFRONT_H

#include "optgen/runtime/Communicator.h"
#include "optgen/runtime/Planner.h"
#include "optgen/runtime/Sharding.h"
#include "optgen/runtime/Tensor.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace optgen::runtime {

/// One parameter's step, as a generated rule function receives it. The
/// parameter is seen as rows x cols: a matrix as itself, a vector or a
/// parameter of any rank as one row.
struct RuleCall {
  float *param;
  const float *grad;
  float *const *states;         ///< per state, its storage
  const int64_t *stateRows;     ///< per state
  const int64_t *stateCols;     ///< per state
  int64_t rows, cols;
  const int64_t *shape;         ///< the parameter's own shape
  int rank;
  const double *hypers;         ///< the group's values, tuples flattened
  int64_t step;                 ///< 1 at the first step
};

struct HyperSpec {
  const char *name;
  int size;        ///< 1, or the number of values of a tuple
  bool isInt;      ///< an int (or a tuple of ints) rather than floats
  bool hasDefault;
  std::vector<double> defaults;
};

struct RuleSpec {
  const char *name;
  int rank; ///< -1 any, 1 vectors, 2 matrices
  std::vector<HyperSpec> hypers;
  std::vector<const char *> states;
  /// The rows x cols of each state for a parameter of `shape`.
  void (*stateShapes)(const int64_t *shape, int rank, int64_t *rows,
                      int64_t *cols);
  void (*step)(const RuleCall &call);
  /// Purely elementwise (no reduction, no shape query): any part of a
  /// parameter can be stepped on its own, so ZeRO-2 splits it by element.
  bool elementwise = false;
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
/// the group's rule specialised to its shape.
struct PlannedParam {
  const char *name;
  std::vector<int64_t> shape;
  int group;
  int rule;
};

enum class Distribution { None, Zero2 };

struct OptimizerSpec {
  const char *name;
  std::vector<RuleSpec> rules;
  std::vector<GroupSpec> groups;
  Distribution distribution;
  int64_t smallNumel;
  /// Empty unless compiled with --shapes: then exactly these parameters
  /// must be registered, and they keep these groups.
  std::vector<PlannedParam> plannedParams = {};
};

class Optimizer {
public:
  explicit Optimizer(OptimizerSpec spec);
  virtual ~Optimizer();
  Optimizer(const Optimizer &) = delete;
  Optimizer &operator=(const Optimizer &) = delete;

  /// Registers a parameter and its gradient (the same shape and dtype, F32
  /// or BF16). Both stay the caller's memory and must not move while the
  /// optimizer lives; step() reads the gradient as it is then (the
  /// optimizer never zeroes it). The group is the first whose patterns and
  /// condition match the name and shape, chosen at finalize().
  void addParameter(const std::string &name, TensorView param,
                    TensorView grad);
  /// Registers a parameter into the named group, whatever its name.
  void addParameter(const std::string &name, TensorView param,
                    TensorView grad, const std::string &group);

  /// Adds a group running the rule named `rule` with its defaults, which
  /// matches no name: parameters join it by the explicit addParameter. Used
  /// to replay cases that bind parameters themselves.
  void addGroup(const std::string &name, const std::string &rule);

  /// The ranks a `distribute zero2` optimizer shares its step with (the
  /// default: this process alone). Call before finalize().
  void setCommunicator(std::unique_ptr<Communicator> communicator);

  /// Plans the step (groups and buckets of same-shape matrices) and
  /// allocates the optimizer state. Errors name the parameter at fault.
  void finalize();

  /// One optimizer step with the gradients now in the registered memory.
  void step();

  /// Sets a hyperparameter of a group; takes effect at the next step.
  void setHyper(const std::string &group, const std::string &name,
                double value);
  void setHyper(const std::string &group, const std::string &name,
                const std::vector<double> &values);
  /// A float or int hyperparameter of a group.
  double hyper(const std::string &group, const std::string &name) const;
  /// A hyperparameter's values (a tuple's elements; one for the others).
  std::vector<double> hyperValues(const std::string &group,
                                  const std::string &name) const;

  /// Steps taken by the named parameter.
  int64_t stepCount(const std::string &param) const;
  /// Bytes of optimizer state held.
  int64_t stateBytes() const;
  /// Bytes this rank gave to and got from collectives in the last step (f32
  /// payloads, as optgen explain counts them).
  int64_t bytesSent() const { return bytesSent_; }
  int64_t bytesReceived() const { return bytesReceived_; }
  /// The group a parameter was bound to (after finalize()).
  std::string groupOf(const std::string &param) const;
  /// The plan as a table: per bucket its group, rule, shape and parameters.
  std::string describePlan() const;
  const OptimizerSpec &spec() const { return spec_; }
  const Plan &plan() const { return plan_; }
  const Communicator &communicator() const { return *communicator_; }
  /// The ZeRO-2 plan (after finalize(), for distribute zero2).
  const std::optional<ShardPlan> &shardPlan() const { return shards_; }

  /// Writes / reads every parameter's state and step count (safetensors,
  /// keyed by parameter name, so a checkpoint is independent of the plan).
  /// Under a multi-rank communicator every rank calls them: the sharded
  /// state is gathered to rank 0, which writes it; every rank reads its
  /// part back, whatever the number of ranks that saved it.
  void saveState(const std::string &path);
  void loadState(const std::string &path);

private:
  struct Param {
    std::string name;
    TensorView param, grad;
    std::string group; ///< explicit group, or empty
    int rule = -1;     ///< the planned rule, or -1 for the group's
    std::vector<std::vector<float>> states;
    std::vector<int64_t> stateRows, stateCols;
    std::vector<int64_t> fullRows, fullCols; ///< the states' whole shapes
    int64_t partBegin = 0, partLength = 0;   ///< this rank's elements
    std::vector<float> stagedParam, stagedGrad; ///< for bf16 parameters
    int64_t steps = 0;
  };

  float *paramData(Param &p);
  const float *gradData(Param &p);
  /// Steps elements [begin, begin + length) of parameter `index` (all of
  /// it, or this rank's part of an elementwise rule's parameter).
  void runRule(size_t index, const float *grad, int64_t begin,
               int64_t length);
  /// The three phases of a ZeRO-2 step: launch every reduction; per unit,
  /// wait, update and launch its gather; wait for the gathers.
  void stepSharded();
  /// Which elements of each parameter `rank` updates and keeps state for.
  void partsOf(int rank, std::vector<int64_t> &begin,
               std::vector<int64_t> &length) const;
  /// Checks the registered parameters against spec().plannedParams and
  /// binds them to their planned groups.
  void applyPlannedGroups();
  size_t groupIndex(const std::string &name) const;
  /// The rule parameter `param` runs (after finalize()).
  const RuleSpec &ruleOf(size_t param) const;
  size_t paramIndex(const std::string &name) const;
  size_t hyperIndex(size_t group, const std::string &name,
                    size_t *offset) const;

  OptimizerSpec spec_;
  std::deque<std::string> addedNames_; ///< names of groups from addGroup()
  /// "group/hyper" of hyperparameters without a value yet.
  std::set<std::string> unset_;
  std::vector<Param> params_;
  std::vector<std::vector<double>> hypers_; ///< per group, flattened
  Plan plan_;
  std::unique_ptr<Communicator> communicator_;
  std::optional<ShardPlan> shards_; ///< set for distribute zero2
  int64_t bytesSent_ = 0, bytesReceived_ = 0;
  bool finalized_ = false;
};

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_OPTIMIZERFRONT_H
