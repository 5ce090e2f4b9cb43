//===- CaseRunner.cpp - The main() of generated runners -------------------===//

#include "optgen/runtime/CaseRunner.h"

#ifdef OPTGEN_HAVE_MPI
#include "optgen/runtime/MpiCommunicator.h"
#endif

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace optgen::runtime {

namespace {

/// A whole decimal number ("4abc" and "" are not), within [low, high].
bool parseNumber(const std::string &text, int64_t low, int64_t high,
                 int64_t &value) {
  if (text.empty() || text.size() > 18)
    return false;
  size_t i = text[0] == '-' ? 1 : 0;
  if (i == text.size())
    return false;
  int64_t magnitude = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9')
      return false;
    magnitude = magnitude * 10 + (text[i] - '0');
  }
  value = text[0] == '-' ? -magnitude : magnitude;
  return value >= low && value <= high;
}

} // namespace

int parseRunnerArguments(int argc, char **argv, const std::string &target,
                         CaseOptions &options) {
  options.target = target;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "optgen: error: %s needs a value\n", arg.c_str());
        std::exit(ExitUsage);
      }
      return argv[++i];
    };
    auto number = [&](int64_t low, int64_t high) -> int64_t {
      std::string text = value();
      int64_t parsed = 0;
      if (!parseNumber(text, low, high, parsed)) {
        std::fprintf(stderr,
                     "optgen: error: %s takes a whole number from %lld to "
                     "%lld, not '%s'\n",
                     arg.c_str(), static_cast<long long>(low),
                     static_cast<long long>(high), text.c_str());
        std::exit(ExitUsage);
      }
      return parsed;
    };
    if (arg == "--case")
      options.casePath = value();
    else if (arg == "--out")
      options.outPath = value();
    else if (arg == "--report")
      options.reportPath = value();
    else if (arg == "--repeat")
      options.repeat = static_cast<int>(number(1, 1000000));
    else if (arg == "--split-grads")
      options.splitGrads = true;
    else if (arg == "--load-state")
      options.loadStatePath = value();
    else if (arg == "--save-state")
      options.saveStatePath = value();
    else if (arg == "--save-at") {
      options.saveAt = number(1, 1000000);
      options.saveAtDir = value();
    } else if (arg == "--resume")
      options.resumeDir = value();
    else if (arg == "--fail-at-step")
      options.failAtStep = number(1, 1000000);
    else if (arg == "--skip-nonfinite")
      options.skipNonFinite = true;
    else if (arg == "--tolerance") {
      std::string text = value();
      char *end = nullptr;
      double tolerance = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(tolerance >= 0) ||
          !std::isfinite(tolerance)) {
        std::fprintf(stderr,
                     "optgen: error: --tolerance takes a number at least 0 "
                     "(an update error, e.g. 1e-5), not '%s'\n",
                     text.c_str());
        return ExitUsage;
      }
      options.tolerance = tolerance;
    } else {
      std::fprintf(stderr,
                   "usage: %s --case CASE.safetensors [--out OUT.safetensors] "
                   "[--repeat R] [--report FILE.json] [--split-grads]\n"
                   "    [--load-state STATE.safetensors] [--save-state "
                   "STATE.safetensors]\n"
                   "    [--save-at K DIR] [--resume DIR] [--skip-nonfinite] "
                   "[--tolerance X] [--fail-at-step K]\n",
                   argv[0]);
      return ExitUsage;
    }
  }
  if (options.casePath.empty()) {
    std::fprintf(stderr, "optgen: error: --case is required\n");
    return ExitUsage;
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
