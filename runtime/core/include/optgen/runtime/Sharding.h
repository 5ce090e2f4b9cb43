//===- Sharding.h - Who updates what in a ZeRO-2 step -----------*- C++ -*-===//
//
// The one sharding planner: it decides, for N ranks, which collectives a
// distributed step runs and which rank updates (and keeps the state of)
// each parameter or part of one.
//
// - Small parameters (fewer than small_numel elements): their gradients are
//   all-reduced in one packed collective; every rank updates them.
// - Parameters of elementwise rules (no reduction, no shape query): packed
//   into one flat buffer, padded to a multiple of N, reduce-scattered in
//   equal parts; each rank updates the elements of its part (whatever the
//   parameters' first dimensions), then the parts are all-gathered.
// - Other parameters (Muon's matrices): each is updated whole by one owner
//   rank, chosen longest job first over all shapes together to balance the
//   estimated cost; each bucket is one reduce-scatter and one all-gather
//   whose per-rank parts are the matrices that rank owns.
//
// Hybrid sharding (a shard group of G < N ranks, as HSDP does): the ranks
// form N / G groups of G consecutive ranks, and the plan above is made for
// G ranks, every group alike: its counts and owners name the G positions of
// a group, rank r taking position r mod G. Reductions then average within
// the group and each part across the groups; gathers stay in the group.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_SHARDING_H
#define OPTGEN_RUNTIME_SHARDING_H

#include "optgen/runtime/Planner.h"

#include <cstdint>
#include <string>
#include <vector>

namespace optgen::runtime {

struct ShardParam {
  std::vector<int64_t> shape;
  /// The parameter's rule is elementwise: any part can be stepped alone.
  bool elementwise;
};

struct ShardUnit {
  enum class Kind { Small, Flat, Owned };
  Kind kind;
  /// The parameters, in the order their data is packed.
  std::vector<size_t> params;
  /// Owned: the rank that updates each parameter (parallel to params).
  std::vector<int> owner;
  /// Elements each rank receives from the reduce-scatter and contributes
  /// to the all-gather (Flat and Owned); the total for Small.
  std::vector<int64_t> counts;
};

struct ShardPlan {
  int worldSize = 1;
  /// The ranks of a shard group, which the counts, owners and costs are
  /// for: worldSize unless hybrid.
  int groupSize = 1;
  /// Small first, then Flat, then one Owned unit per bucket.
  std::vector<ShardUnit> units;
  /// Per position of a group: the estimated cost of its owned matrices
  /// (flops).
  std::vector<double> ownedCost;
};

/// The ranks of a shard group for a spec's `shard_group` (0: not set) on
/// `worldSize` ranks: every rank when it is not set or not smaller; else
/// it must divide the world (Error otherwise).
int shardGroupSize(int worldSize, int64_t shardGroup);

/// Plans a step of `plan`'s buckets over `worldSize` ranks, sharded within
/// groups of `shardGroupSize(worldSize, shardGroup)` ranks.
ShardPlan planShards(const Plan &plan, const std::vector<ShardParam> &params,
                     int worldSize, int64_t smallNumel,
                     int64_t shardGroup = 0);

/// The estimated cost of updating a parameter of `shape` whole: a matrix's
/// orthogonalisation is dominated by products of about m * n * min(m, n)
/// multiply-adds; anything else by its size.
double updateCost(const std::vector<int64_t> &shape);

/// The imbalance of the owned work: the most loaded rank over the mean (1
/// when there is none).
double ownedImbalance(const ShardPlan &plan);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_SHARDING_H
