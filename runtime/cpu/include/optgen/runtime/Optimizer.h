//===- Optimizer.h - What generated CPU code includes -----------*- C++ -*-===//
//
// Generated CPU code includes this one header: the optimizer its class
// derives from (the device-agnostic front on the host executor) and the
// helpers its rule functions call (Kernels.h).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_OPTIMIZER_H
#define OPTGEN_RUNTIME_OPTIMIZER_H

#include "optgen/runtime/HostExecutor.h"
#include "optgen/runtime/Kernels.h"
#include "optgen/runtime/OptimizerFront.h"

#include <utility>

namespace optgen::runtime {

/// An optimizer stepping on the host.
class Optimizer : public OptimizerFront {
public:
  explicit Optimizer(OptimizerSpec spec)
      : OptimizerFront(std::move(spec), makeHostExecutor()) {}
};

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_OPTIMIZER_H
