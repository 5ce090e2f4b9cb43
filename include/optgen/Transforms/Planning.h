//===- Planning.h - The runtime's planners on compile-time shapes -*- C++ -*-===//
//
// The passes that bind and bucket parameters known at compile time call the
// one planner (runtime/Planner.h) through here, and the schedule's units are
// read back in the runtime's terms here. The planner reports errors
// by throwing; Planning.cpp, compiled with exceptions, turns them into
// diagnostics.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TRANSFORMS_PLANNING_H
#define OPTGEN_TRANSFORMS_PLANNING_H

#include "dialect/OptgenDialect.h"
#include "optgen/runtime/Planner.h"
#include "optgen/runtime/Sharding.h"

namespace optgen {

/// The plan of `optimizer`'s `optgen.param`s over its groups (in order).
/// With `boundGroups`, each parameter keeps the group it is bound to.
mlir::FailureOr<runtime::Plan> planParameters(OptimizerOp optimizer,
                                              bool boundGroups);

/// The ZeRO-2 plan of `optimizer`'s bucketed parameters over `worldSize`
/// ranks (the runtime's sharding planner), sharded within groups of
/// `shardGroup` ranks (0: the distribution's shard_group, if any); the
/// optimizer must distribute zero2. `plan` receives the step plan it
/// starts from.
mlir::FailureOr<runtime::ShardPlan>
planShardsFor(OptimizerOp optimizer, int worldSize, runtime::Plan &plan,
              int64_t shardGroup = 0);

/// The sharding plan a verified `schedule` carries, in the runtime's terms:
/// its units in order, each parameter as its index among the optimizer's
/// `optgen.param`s; `ownedCost` summed with runtime::updateCost. For a
/// schedule written by optgen-plan-shards, what the planner decided.
runtime::ShardPlan readShardPlan(ScheduleOp schedule);

} // namespace optgen

#endif // OPTGEN_TRANSFORMS_PLANNING_H
