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

namespace optgen::runtime {

/// The main() of a generated runner: parses --case, --out, --repeat,
/// --report, --split-grads, --load-state and --save-state, and replays on a
/// new optimizer per replay (under mpirun, a `distribute zero2` optimizer
/// steps with all the ranks).
int runnerMain(int argc, char **argv,
               const std::function<std::unique_ptr<OptimizerFront>()> &make);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CASERUNNER_H
