//===- Planning.h - The runtime's planner for compile-time shapes -*- C++ -*-===//
//
// The passes that bind and bucket parameters known at compile time call the
// one planner (runtime/Planner.h) through here. The planner reports errors
// by throwing; Planning.cpp, compiled with exceptions, turns them into
// diagnostics.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_LIB_TRANSFORMS_PLANNING_H
#define OPTGEN_LIB_TRANSFORMS_PLANNING_H

#include "dialect/OptgenDialect.h"
#include "optgen/runtime/Planner.h"

namespace optgen {

/// The plan of `optimizer`'s `optgen.param`s over its groups (in order).
/// With `boundGroups`, each parameter keeps the group it is bound to.
mlir::FailureOr<runtime::Plan> planParameters(OptimizerOp optimizer,
                                              bool boundGroups);

} // namespace optgen

#endif // OPTGEN_LIB_TRANSFORMS_PLANNING_H
