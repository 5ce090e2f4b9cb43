//===- CaseRunner.cpp - The main() of generated runners -------------------===//

#include "optgen/runtime/CaseRunner.h"

#ifdef OPTGEN_HAVE_MPI
#include "optgen/runtime/MpiCommunicator.h"
#endif

#include <cstdio>
#include <cstdlib>
#include <string>

namespace optgen::runtime {

int parseRunnerArguments(int argc, char **argv, const std::string &target,
                         CaseOptions &options) {
  options.target = target;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "optgen: error: %s needs a value\n", arg.c_str());
        std::exit(1);
      }
      return argv[++i];
    };
    if (arg == "--case")
      options.casePath = value();
    else if (arg == "--out")
      options.outPath = value();
    else if (arg == "--report")
      options.reportPath = value();
    else if (arg == "--repeat")
      options.repeat = std::atoi(value().c_str());
    else if (arg == "--split-grads")
      options.splitGrads = true;
    else if (arg == "--load-state")
      options.loadStatePath = value();
    else if (arg == "--save-state")
      options.saveStatePath = value();
    else {
      std::fprintf(stderr,
                   "usage: %s --case CASE.safetensors [--out OUT.safetensors] "
                   "[--repeat R] [--report FILE.json] [--split-grads]\n"
                   "    [--load-state STATE.safetensors] [--save-state "
                   "STATE.safetensors]\n",
                   argv[0]);
      return 1;
    }
  }
  if (options.casePath.empty()) {
    std::fprintf(stderr, "optgen: error: --case is required\n");
    return 1;
  }
  return -1;
}

int runnerMain(int argc, char **argv,
               const std::function<std::unique_ptr<OptimizerFront>()> &make) {
  CaseOptions options;
  if (int status = parseRunnerArguments(argc, argv, "cpu", options);
      status >= 0)
    return status;
  return runCase(
      [&] {
        std::unique_ptr<OptimizerFront> optimizer = make();
#ifdef OPTGEN_HAVE_MPI
        if (optimizer->spec().distribution == Distribution::Zero2)
          optimizer->setCommunicator(makeMpiCommunicator());
#endif
        return std::unique_ptr<Stepper>(
            std::make_unique<OptimizerStepper>(std::move(optimizer)));
      },
      options);
}

} // namespace optgen::runtime
