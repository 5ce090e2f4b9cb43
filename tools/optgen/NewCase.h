//===- NewCase.h - optgen case new: a case to fill in -----------*- C++ -*-===//
//
// `optgen case new SPEC --shapes MODEL.safetensors -o CASE.safetensors`
// writes a case (test/golden/README.md's format) for the model's
// parameters: random initial values and gradients, and the groups the spec
// makes of them, each with every hyperparameter its rule declares set to the
// value the spec gives it (the group's setting or the rule's default). It
// replays exactly as the spec's own groups, and is the file to edit when a
// case should bind other parameters or values. Compiled with exceptions
// (the runtime's writers throw), unlike the rest of the driver.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TOOLS_NEWCASE_H
#define OPTGEN_TOOLS_NEWCASE_H

#include "dialect/OptgenDialect.h"

#include <cstdint>
#include <string>

namespace optgen {

struct NewCaseOptions {
  std::string outPath;
  int64_t steps = 3;
  uint64_t seed = 0;
  /// Gradients are drawn from N(0, gradScale^2), parameters from N(0, 1).
  double gradScale = 0.1;
};

/// Writes the case of the parameters that `optimizer` (planned: its
/// optgen.param ops bound to groups) holds. Returns the process exit code
/// (optgen/runtime/ExitCodes.h), after printing any error.
int writeNewCase(OptimizerOp optimizer, const NewCaseOptions &options);

} // namespace optgen

#endif // OPTGEN_TOOLS_NEWCASE_H
