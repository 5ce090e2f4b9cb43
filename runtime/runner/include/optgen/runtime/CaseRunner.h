//===- CaseRunner.h - The main() of generated runners -----------*- C++ -*-===//
//
// A generated runner replays case files (CaseReplay.h) on its compiled
// optimizer; under mpirun a `distribute zero2` optimizer steps with all the
// ranks, over MPI when this component was built with it.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CASERUNNER_H
#define OPTGEN_RUNTIME_CASERUNNER_H

#include "optgen/runtime/CaseReplay.h"

#include <functional>
#include <memory>
#include <string>

namespace optgen::runtime {

/// The main() of a generated runner: parses --case, --out, --repeat,
/// --report, --split-grads, --load-state, --save-state, --save-at K DIR,
/// --resume DIR and --fail-at-step K (for tests), and replays on a new
/// optimizer per replay (under mpirun, a `distribute zero2` optimizer steps
/// with all the ranks).
int runnerMain(int argc, char **argv,
               const std::function<std::unique_ptr<OptimizerFront>()> &make);

/// The command line of a runner for `target` (named in its report): fills
/// `options` and returns -1, or returns the exit status after printing the
/// error or the usage.
int parseRunnerArguments(int argc, char **argv, const std::string &target,
                         CaseOptions &options);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CASERUNNER_H
