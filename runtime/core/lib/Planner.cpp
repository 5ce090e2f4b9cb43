//===- Planner.cpp - Assigning parameters to groups and buckets -----------===//

#include "optgen/runtime/Planner.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Glob.h"
#include "optgen/runtime/Tensor.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>

namespace optgen::runtime {

/// What a rule of `rank` takes, for messages: "matrices", "vectors", ...
static std::string rankNoun(int rank) {
  if (rank == 1)
    return "vectors";
  if (rank == 2)
    return "matrices";
  if (rank == 0)
    return "scalars";
  return "rank-" + std::to_string(rank) + " tensors";
}

static void checkInputs(const std::vector<ParamDesc> &params,
                        const std::vector<GroupDesc> &groups) {
  for (const GroupDesc &group : groups)
    for (const std::string &pattern : group.patterns)
      if (std::optional<std::string> error = globSyntaxError(pattern))
        throw Error("group '" + group.name + "': pattern \"" + pattern +
                    "\": " + *error);
  std::set<std::string_view> seen;
  for (const ParamDesc &param : params) {
    if (!seen.insert(param.name).second)
      throw Error("parameter '" + param.name + "' is registered twice");
    if (!checkedNumel(param.shape))
      throw Error("parameter '" + param.name + "' has an invalid shape " +
                  formatShape(param.shape));
  }
}

static bool claims(const GroupDesc &group, const ParamDesc &param) {
  bool named = std::any_of(group.patterns.begin(), group.patterns.end(),
                           [&](const std::string &pattern) {
                             return globMatch(pattern, param.name);
                           });
  return named && (!group.where || group.where(param.shape));
}

std::vector<Bucket>
bucketParams(const std::vector<size_t> &groupOf,
             const std::vector<std::vector<int64_t>> &shapes,
             size_t groupCount) {
  std::vector<Bucket> buckets;
  for (size_t group = 0; group < groupCount; ++group) {
    std::map<std::vector<int64_t>, size_t> bucketOfShape;
    for (size_t param = 0; param < groupOf.size(); ++param) {
      if (groupOf[param] != group)
        continue;
      auto [found, isNew] =
          bucketOfShape.emplace(shapes[param], buckets.size());
      if (isNew)
        buckets.push_back(Bucket{group, shapes[param], {}});
      buckets[found->second].params.push_back(param);
    }
  }
  return buckets;
}

Plan planStep(const std::vector<ParamDesc> &params,
              const std::vector<GroupDesc> &groups) {
  checkInputs(params, groups);
  Plan plan;
  for (const ParamDesc &param : params) {
    auto group = std::find_if(
        groups.begin(), groups.end(), [&](const GroupDesc &candidate) {
          return param.group.empty() ? claims(candidate, param)
                                     : candidate.name == param.group;
        });
    if (group == groups.end() && !param.group.empty())
      throw Error("parameter '" + param.name + "' names group '" + param.group +
                  "', which does not exist");
    if (group == groups.end())
      throw Error("parameter '" + param.name + "' (shape " +
                  formatShape(param.shape) + ") matches no group");
    if (group->rank >= 0 &&
        static_cast<size_t>(group->rank) != param.shape.size())
      throw Error("parameter '" + param.name + "' of shape " +
                  formatShape(param.shape) + " matched group '" + group->name +
                  "', whose rule '" + group->rule + "' takes " +
                  rankNoun(group->rank));
    plan.groupOf.push_back(static_cast<size_t>(group - groups.begin()));
  }

  std::vector<std::vector<int64_t>> shapes;
  for (const ParamDesc &param : params)
    shapes.push_back(param.shape);
  plan.buckets = bucketParams(plan.groupOf, shapes, groups.size());
  return plan;
}

std::string describePlan(const Plan &plan, const std::vector<ParamDesc> &params,
                         const std::vector<GroupDesc> &groups) {
  std::vector<std::vector<std::string>> rows = {
      {"group", "rule", "shape", "count", "parameters"}};
  std::vector<bool> used(groups.size(), false);
  for (const Bucket &bucket : plan.buckets) {
    used[bucket.group] = true;
    std::string names;
    for (size_t param : bucket.params)
      names += (names.empty() ? "" : ", ") + params[param].name;
    const GroupDesc &group = groups[bucket.group];
    rows.push_back({group.name, group.rule, formatShape(bucket.shape),
                    std::to_string(bucket.params.size()), names});
  }
  for (size_t group = 0; group < groups.size(); ++group)
    if (!used[group])
      rows.push_back({groups[group].name, groups[group].rule, "-", "0",
                      "(no parameters)"});

  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto &row : rows)
    for (size_t column = 0; column < row.size(); ++column)
      widths[column] = std::max(widths[column], row[column].size());
  std::string table;
  for (const auto &row : rows) {
    std::string line;
    for (size_t column = 0; column < row.size(); ++column) {
      line += row[column];
      if (column + 1 < row.size())
        line.append(widths[column] - row[column].size() + 2, ' ');
    }
    table += line + "\n";
  }
  return table;
}

} // namespace optgen::runtime
