//===- Sharding.cpp - Who updates what in a ZeRO-2 step -------------------===//

#include "optgen/runtime/Sharding.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Tensor.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <utility>

namespace optgen::runtime {

double updateCost(const std::vector<int64_t> &shape) {
  double numel = 1;
  for (int64_t d : shape)
    numel *= static_cast<double>(d);
  if (shape.size() == 2)
    return numel * static_cast<double>(std::min(shape[0], shape[1]));
  return numel;
}

double ownedImbalance(const ShardPlan &plan) {
  double total = 0, most = 0;
  for (double c : plan.ownedCost) {
    total += c;
    most = std::max(most, c);
  }
  if (total == 0)
    return 1;
  return most / (total / static_cast<double>(plan.ownedCost.size()));
}

int shardGroupSize(int worldSize, int64_t shardGroup) {
  if (shardGroup < 0)
    throw Error("a shard group of " + std::to_string(shardGroup) + " ranks");
  if (shardGroup == 0 || shardGroup >= worldSize)
    return worldSize;
  if (worldSize % shardGroup != 0)
    throw Error("shard groups of " + std::to_string(shardGroup) +
                " ranks do not divide " + std::to_string(worldSize) +
                " ranks");
  return static_cast<int>(shardGroup);
}

ShardPlan planShards(const Plan &plan, const std::vector<ShardParam> &params,
                     int world, int64_t smallNumel, int64_t shardGroup) {
  if (world < 1)
    throw Error("a world of " + std::to_string(world) + " ranks");
  ShardPlan shards;
  shards.worldSize = world;
  // Within a group, the plan of a step on its ranks.
  int worldSize = shardGroupSize(world, shardGroup);
  shards.groupSize = worldSize;
  shards.ownedCost.assign(worldSize, 0.0);
  auto numel = [&](size_t p) { return *checkedNumel(params[p].shape); };

  ShardUnit small{ShardUnit::Kind::Small, {}, {}, {0}};
  ShardUnit flat{ShardUnit::Kind::Flat, {}, {}, {}};
  std::vector<std::vector<size_t>> owned(plan.buckets.size());
  for (size_t b = 0; b < plan.buckets.size(); ++b)
    for (size_t p : plan.buckets[b].params) {
      if (numel(p) < smallNumel) {
        small.params.push_back(p);
        small.counts[0] += numel(p);
      } else if (params[p].elementwise) {
        flat.params.push_back(p);
      } else {
        owned[b].push_back(p);
      }
    }
  if (!small.params.empty())
    shards.units.push_back(std::move(small));
  if (!flat.params.empty()) {
    int64_t total = 0;
    for (size_t p : flat.params)
      total += numel(p);
    int64_t part = (total + worldSize - 1) / worldSize;
    flat.counts.assign(worldSize, part);
    shards.units.push_back(std::move(flat));
  }

  // Owners: the costliest matrix first, each to the least loaded rank (the
  // lowest rank among equals), over every bucket together. The ranks wait
  // in a heap ordered so: a matrix costs log(ranks), not ranks.
  std::vector<size_t> order;
  for (const auto &members : owned)
    order.insert(order.end(), members.begin(), members.end());
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return updateCost(params[a].shape) > updateCost(params[b].shape);
  });
  using Load = std::pair<double, int>; // cost, rank
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> leastLoaded;
  for (int rank = 0; rank < worldSize; ++rank)
    leastLoaded.push({0.0, rank});
  std::vector<int> ownerOf(params.size(), -1);
  for (size_t p : order) {
    int rank = leastLoaded.top().second;
    leastLoaded.pop();
    ownerOf[p] = rank;
    shards.ownedCost[rank] += updateCost(params[p].shape);
    leastLoaded.push({shards.ownedCost[rank], rank});
  }
  for (const auto &members : owned) {
    if (members.empty())
      continue;
    ShardUnit unit{ShardUnit::Kind::Owned, {}, {}, {}};
    unit.counts.assign(worldSize, 0);
    // Packed by owner, so that each rank's matrices are one contiguous part
    // (in the bucket's order within it).
    unit.params = members;
    std::stable_sort(unit.params.begin(), unit.params.end(),
                     [&](size_t a, size_t b) { return ownerOf[a] < ownerOf[b]; });
    for (size_t p : unit.params) {
      unit.owner.push_back(ownerOf[p]);
      unit.counts[ownerOf[p]] += numel(p);
    }
    shards.units.push_back(std::move(unit));
  }
  return shards;
}

} // namespace optgen::runtime
