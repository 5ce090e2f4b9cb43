//===- CaseReplay.h - Replaying a case file ---------------------*- C++ -*-===//
//
// A case (the golden files' format, test/golden/README.md) holds initial
// parameters, the gradient of every step, optionally the expected result and
// the parameter groups with their hyperparameters. runCase() replays it on
// a Stepper: the compiled optimizer of a generated runner, or optgen's
// reference interpreter; both go through this one implementation. (The
// runner component's CaseRunner.h adds the main() of generated runners.)
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CASEREPLAY_H
#define OPTGEN_RUNTIME_CASEREPLAY_H

#include "optgen/runtime/Agreement.h"
#include "optgen/runtime/ExitCodes.h"
#include "optgen/runtime/OptimizerFront.h"
#include "optgen/runtime/Tensor.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace optgen::runtime {

/// What a case is replayed on. Methods report errors by throwing Error.
class Stepper {
public:
  virtual ~Stepper();
  /// A group to which parameters are bound only explicitly, running `rule`
  /// with its defaults.
  virtual void addGroup(const std::string &name, const std::string &rule) = 0;
  virtual void setHyper(const std::string &group, const std::string &name,
                        const std::vector<double> &values) = 0;
  /// `group` empty: bound by the spec's groups.
  virtual void addParameter(const std::string &name, TensorView param,
                            TensorView grad, const std::string &group) = 0;
  virtual void finalize() = 0;
  virtual void step() = 0;
  /// This process's rank and the number of ranks stepping together.
  virtual int rank() const { return 0; }
  virtual int worldSize() const { return 1; }
  /// Bytes of optimizer state this process holds, and of collective
  /// payloads it sent and received in the last step, when it knows.
  virtual int64_t stateBytes() const { return -1; }
  virtual int64_t bytesSent() const { return -1; }
  virtual int64_t bytesReceived() const { return -1; }
  /// How long the last step() took on the device, in milliseconds, when the
  /// stepper times it itself (a GPU's events: step() copies data around the
  /// step that the report must not count), or -1: runCase times step().
  virtual double lastStepMs() const { return -1; }
  /// Steps with a non-finite gradient change nothing and are counted
  /// (NonFinitePolicy::Skip; before finalize()). The default cannot.
  virtual void skipNonFinite();
  /// The steps skipped so far, or -1 when the stepper does not count them.
  virtual int64_t skippedSteps() const { return -1; }
  /// The spec's globals with the values the last step gave them (after a
  /// step), in the spec's order; none by default.
  virtual std::vector<std::pair<std::string, double>> globalValues() const {
    return {};
  }
  /// Checkpoints of the optimizer state (all ranks call them).
  virtual void saveState(const std::string &path);
  virtual void loadState(const std::string &path);
  /// After a phase that may fail on some ranks and not on others, every
  /// rank calls it with its own outcome (Agreement.h): it returns when all
  /// succeeded with equal descriptions and throws AgreedError on every rank
  /// otherwise. The default, one rank alone, throws `error` when given.
  virtual void agree(const std::string &error, const std::string &description,
                     const DifferenceFn &explain);
  /// Ends every rank at once, after this one reported an error that the
  /// others, inside a collective, cannot learn of. The default (one rank)
  /// does nothing.
  virtual void abortAll(int code);
};

/// Every global of `optimizer` with the value its last step gave it, in the
/// spec's order (Stepper::globalValues of a stepper of an optimizer).
std::vector<std::pair<std::string, double>>
lastGlobals(const OptimizerFront &optimizer);

/// Steps a generated optimizer, on whatever executor it has.
class OptimizerStepper : public Stepper {
public:
  explicit OptimizerStepper(std::unique_ptr<OptimizerFront> optimizer)
      : optimizer(std::move(optimizer)) {}
  void addGroup(const std::string &name, const std::string &rule) override;
  void setHyper(const std::string &group, const std::string &name,
                const std::vector<double> &values) override;
  void addParameter(const std::string &name, TensorView param,
                    TensorView grad, const std::string &group) override;
  void finalize() override;
  void step() override;
  int rank() const override { return optimizer->communicator().rank(); }
  int worldSize() const override { return optimizer->communicator().size(); }
  int64_t stateBytes() const override { return optimizer->stateBytes(); }
  int64_t bytesSent() const override { return optimizer->bytesSent(); }
  int64_t bytesReceived() const override {
    return optimizer->bytesReceived();
  }
  void skipNonFinite() override {
    optimizer->setNonFinitePolicy(NonFinitePolicy::Skip);
  }
  int64_t skippedSteps() const override { return optimizer->skippedSteps(); }
  std::vector<std::pair<std::string, double>> globalValues() const override {
    return lastGlobals(*optimizer);
  }
  void saveState(const std::string &path) override {
    optimizer->saveState(path);
  }
  void loadState(const std::string &path) override {
    optimizer->loadState(path);
  }
  void agree(const std::string &error, const std::string &description,
             const DifferenceFn &explain) override {
    runtime::agree(optimizer->communicator(), error, description, explain);
  }
  void abortAll(int code) override { optimizer->communicator().abort(code); }

private:
  std::unique_ptr<OptimizerFront> optimizer;
};

struct CaseOptions {
  std::string casePath;
  std::string outPath;    ///< where param/<name> after the last step go
  std::string reportPath; ///< JSON report, or empty
  std::string target;     ///< named in the report: "cpu", "interpreter"
  int repeat = 1;         ///< replays, for timing
  /// Give each rank a different gradient whose mean over the ranks is the
  /// case's (so that averaging is tested); else every rank gets the case's.
  bool splitGrads = false;
  std::string loadStatePath; ///< optimizer state to start from, or empty
  std::string saveStatePath; ///< where the state after the last step goes
  /// --save-at K DIR: after step K, the run's checkpoint (the optimizer
  /// state and the parameters) goes to DIR, and the replay goes on.
  int64_t saveAt = 0;
  std::string saveAtDir;
  /// --resume DIR: start after the step a --save-at checkpoint in DIR was
  /// saved at, from its parameters and optimizer state.
  std::string resumeDir;
  /// --fail-at-step K (for tests): this process fails just before step K,
  /// as a rank whose step breaks would, to check that no rank is left
  /// waiting.
  int64_t failAtStep = 0;
  /// --skip-nonfinite: a step with a non-finite gradient changes nothing
  /// and is counted (NonFinitePolicy::Skip).
  bool skipNonFinite = false;
  /// --tolerance X: the run fails (ExitToleranceExceeded) when a
  /// parameter's update error against expect/ is above X, or not a number;
  /// negative when not asked.
  double tolerance = -1;
};

/// The files of a run checkpoint (--save-at, --resume) in `dir`.
std::string runCheckpointStatePath(const std::string &dir);
std::string runCheckpointParamsPath(const std::string &dir);

/// Replays the case `repeat` times, each on a fresh Stepper, writes the
/// parameters after the last step and the report, and prints a summary
/// (with each parameter's error when the case has `expect/` tensors).
/// Returns ExitSuccess; ExitToleranceExceeded when options.tolerance is
/// set and some parameter's error is above it, naming them; or
/// ExitFailure after printing "optgen: error: ..." to stderr. Never
/// throws. Under several ranks, every phase that can fail on one rank ends
/// with an agreement, so that all ranks fail together; an error no other
/// rank can learn of (inside a step) ends every rank (Stepper::abortAll).
/// Outputs never overwrite inputs, and are written atomically.
int runCase(const std::function<std::unique_ptr<Stepper>()> &makeStepper,
            const CaseOptions &options);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CASEREPLAY_H
