//===- Optimizer.h - What generated CPU code includes -----------*- C++ -*-===//
//
// Generated CPU code includes this one header: the optimizer its class
// derives from (OptimizerFront.h, in core) and the helpers its rule
// functions call (Kernels.h).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_OPTIMIZER_H
#define OPTGEN_RUNTIME_OPTIMIZER_H

#include "optgen/runtime/Kernels.h"
#include "optgen/runtime/OptimizerFront.h"

#endif // OPTGEN_RUNTIME_OPTIMIZER_H
