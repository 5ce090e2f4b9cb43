//===- Planner.h - Assigning parameters to groups and buckets ---*- C++ -*-===//
//
// The one planner, shared by the compiler (at compile time, when parameter
// shapes are known) and by generated runtimes (at initialisation), so both
// assign every parameter identically. A parameter belongs to the first group,
// in spec order, one of whose glob patterns matches its name and whose
// `where` predicate (if any) accepts its shape. Within a group, parameters of
// one shape form a bucket, stepped together as a K x shape stack. The plan
// depends only on the order and contents of its inputs.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_PLANNER_H
#define OPTGEN_RUNTIME_PLANNER_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace optgen::runtime {

struct ParamDesc {
  std::string name;
  std::vector<int64_t> shape;
  /// A group named explicitly, bypassing patterns and conditions; empty:
  /// the first group whose patterns and condition accept the parameter.
  std::string group = {};
};

struct GroupDesc {
  std::string name;
  std::string rule;
  std::vector<std::string> patterns;
  int rank = -1; ///< the rule's input rank: -1 any, 1 vectors, 2 matrices
  std::function<bool(const std::vector<int64_t> &shape)> where; ///< optional
};

struct Bucket {
  size_t group;               ///< index into the groups
  std::vector<int64_t> shape; ///< every member's shape
  std::vector<size_t> params; ///< indices into the parameters, ascending
};

struct Plan {
  std::vector<size_t> groupOf; ///< per parameter, its group's index
  /// By group, then by the first parameter of each shape.
  std::vector<Bucket> buckets;
};

/// Assigns `params` to `groups`. Throws Error for a group pattern that is
/// not valid glob syntax, a duplicate or negative-dimensioned parameter, a
/// parameter no group claims ("parameter 'NAME' (shape [a, b]) matches no
/// group") and one claimed by a group whose rule takes another rank
/// ("parameter 'NAME' of shape [40] matched group 'matrices', whose rule
/// 'muon' takes matrices").
Plan planStep(const std::vector<ParamDesc> &params,
              const std::vector<GroupDesc> &groups);

/// The buckets of parameters whose groups are known: within each group (in
/// group order), one bucket per shape, in the order of its first parameter.
/// planStep's buckets; also how a plan fixed at compile time is rebuilt.
std::vector<Bucket>
bucketParams(const std::vector<size_t> &groupOf,
             const std::vector<std::vector<int64_t>> &shapes,
             size_t groupCount);

/// A table of `plan`, one line per bucket (group, rule, shape, count and
/// parameter names), and the groups that claimed nothing; for debugging and
/// `optgen explain`.
std::string describePlan(const Plan &plan, const std::vector<ParamDesc> &params,
                         const std::vector<GroupDesc> &groups);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_PLANNER_H
