//===- OptimizerFrontInternal.h - The front's helpers -----------*- C++ -*-===//
//
// The helpers OptimizerFront.cpp, OptimizerAgreement.cpp and
// OptimizerCheckpoint.cpp share (not installed): how messages, the ranks'
// descriptions and checkpoints write a double and a shape.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CORE_OPTIMIZERFRONTINTERNAL_H
#define OPTGEN_RUNTIME_CORE_OPTIMIZERFRONTINTERNAL_H

#include "optgen/runtime/Json.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace optgen::runtime {

/// A double as messages and checkpoints write it: the shortest text that
/// reads back to the same value ("0.1", "1e+30", "nan").
inline std::string formatDouble(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, v);
    if (std::strtod(text, nullptr) == v)
      break;
  }
  return text;
}

/// A shape as a JSON array of its dimensions.
inline JsonValue shapeJson(const std::vector<int64_t> &shape) {
  JsonArray dims;
  for (int64_t d : shape)
    dims.push_back(d);
  return dims;
}

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CORE_OPTIMIZERFRONTINTERNAL_H
