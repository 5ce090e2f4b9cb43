//===- InterpreterStepper.h - Case replay on the interpreter ----*- C++ -*-===//
//
// `optgen run --interpret`: the runtime's case runner stepping optgen's fp64
// reference interpreter. Compiled with exceptions (the runtime's errors are
// exceptions), unlike the rest of the driver.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TOOLS_INTERPRETERSTEPPER_H
#define OPTGEN_TOOLS_INTERPRETERSTEPPER_H

#include "dialect/OptgenDialect.h"

#include <string>

namespace optgen {

/// Replays the case at `casePath` on the interpreter of `optimizer`; see
/// optgen::runtime::runCase (`tolerance`: CaseOptions::tolerance). Returns
/// the process exit code (optgen/runtime/ExitCodes.h).
int runCaseOnInterpreter(OptimizerOp optimizer, const std::string &casePath,
                         const std::string &outPath,
                         const std::string &reportPath, int repeat,
                         bool skipNonFinite, double tolerance);

} // namespace optgen

#endif // OPTGEN_TOOLS_INTERPRETERSTEPPER_H
