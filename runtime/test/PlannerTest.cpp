//===- PlannerTest.cpp - Assigning parameters to groups and buckets -------===//

#include "optgen/runtime/Planner.h"

#include "optgen/runtime/Error.h"

#include <gtest/gtest.h>

using namespace optgen::runtime;

namespace {

bool isMatrix(const std::vector<int64_t> &shape) { return shape.size() == 2; }

/// nanochat's parameters, in its registration order, and the groups of
/// examples/nanochat.opt.
std::vector<ParamDesc> nanochatParams() {
  return {
      {"transformer.wte.weight", {512, 64}},
      {"transformer.h.0.attn.c_q.weight", {64, 64}},
      {"transformer.h.0.attn.c_k.weight", {32, 64}},
      {"transformer.h.0.attn.c_v.weight", {32, 64}},
      {"transformer.h.0.attn.c_proj.weight", {64, 64}},
      {"transformer.h.0.mlp.c_fc.weight", {256, 64}},
      {"transformer.h.0.mlp.c_proj.weight", {64, 256}},
      {"transformer.h.1.attn.c_q.weight", {64, 64}},
      {"transformer.h.1.attn.c_k.weight", {32, 64}},
      {"transformer.h.1.attn.c_v.weight", {32, 64}},
      {"transformer.h.1.attn.c_proj.weight", {64, 64}},
      {"transformer.h.1.mlp.c_fc.weight", {256, 64}},
      {"transformer.h.1.mlp.c_proj.weight", {64, 256}},
      {"lm_head.weight", {512, 64}},
      {"resid_lambdas", {2}},
      {"x0_lambdas", {2}},
      {"value_embeds.0.weight", {512, 32}},
  };
}

std::vector<GroupDesc> nanochatGroups() {
  return {
      {"lm_head", "adamw", {"lm_head.*"}, -1, nullptr},
      {"embeddings",
       "adamw",
       {"transformer.wte.*", "value_embeds.*"},
       -1,
       nullptr},
      {"scalars", "adamw", {"*lambdas"}, -1, nullptr},
      {"matrices", "muon", {"transformer.h.*"}, 2, isMatrix},
  };
}

std::string planError(const std::vector<ParamDesc> &params,
                      const std::vector<GroupDesc> &groups) {
  try {
    planStep(params, groups);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

std::vector<size_t> indices(std::initializer_list<size_t> list) {
  return std::vector<size_t>(list);
}

} // namespace

TEST(Planner, Nanochat) {
  std::vector<ParamDesc> params = nanochatParams();
  std::vector<GroupDesc> groups = nanochatGroups();
  Plan plan = planStep(params, groups);
  EXPECT_EQ(plan.groupOf,
            indices({1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0, 2, 2, 1}));
  ASSERT_EQ(plan.buckets.size(), 8u);
  // lm_head; embeddings (two shapes); scalars; matrices by first appearance.
  EXPECT_EQ(plan.buckets[0].group, 0u);
  EXPECT_EQ(plan.buckets[0].params, indices({13}));
  EXPECT_EQ(plan.buckets[1].shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(plan.buckets[1].params, indices({0}));
  EXPECT_EQ(plan.buckets[2].shape, (std::vector<int64_t>{512, 32}));
  EXPECT_EQ(plan.buckets[2].params, indices({16}));
  EXPECT_EQ(plan.buckets[3].group, 2u);
  EXPECT_EQ(plan.buckets[3].shape, std::vector<int64_t>{2});
  EXPECT_EQ(plan.buckets[3].params, indices({14, 15}));
  EXPECT_EQ(plan.buckets[4].group, 3u);
  EXPECT_EQ(plan.buckets[4].shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(plan.buckets[4].params, indices({1, 4, 7, 10}));
  EXPECT_EQ(plan.buckets[5].shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(plan.buckets[5].params, indices({2, 3, 8, 9}));
  EXPECT_EQ(plan.buckets[6].shape, (std::vector<int64_t>{256, 64}));
  EXPECT_EQ(plan.buckets[6].params, indices({5, 11}));
  EXPECT_EQ(plan.buckets[7].shape, (std::vector<int64_t>{64, 256}));
  EXPECT_EQ(plan.buckets[7].params, indices({6, 12}));
}

TEST(Planner, FirstMatchingGroupWins) {
  std::vector<GroupDesc> groups = {
      {"no_decay", "adamw", {"*.bias", "*norm*"}, -1, nullptr},
      {"all", "adamw", {"*"}, -1, nullptr},
  };
  Plan plan = planStep({{"fc.weight", {4, 4}},
                        {"fc.bias", {4}},
                        {"ln.norm.weight", {4}},
                        {"out.weight", {2, 4}}},
                       groups);
  EXPECT_EQ(plan.groupOf, indices({1, 0, 0, 1}));
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_EQ(plan.buckets[0].params, indices({1, 2}));
  EXPECT_EQ(plan.buckets[1].params, indices({0}));
  EXPECT_EQ(plan.buckets[2].params, indices({3}));
}

TEST(Planner, WherePredicatesFallThrough) {
  // A parameter the first group names but whose shape it declines goes on
  // to the next group.
  std::vector<GroupDesc> groups = {
      {"matrices", "muon", {"*"}, 2, isMatrix},
      {"rest", "adamw", {"*"}, -1, nullptr},
  };
  Plan plan = planStep(
      {{"w", {3, 4}}, {"b", {4}}, {"scale", {}}, {"conv", {2, 3, 4}}}, groups);
  EXPECT_EQ(plan.groupOf, indices({0, 1, 1, 1}));
  std::vector<GroupDesc> big = {
      {"big",
       "adamw",
       {"*"},
       -1,
       [](const std::vector<int64_t> &shape) {
         return !shape.empty() && shape[0] >= 100;
       }},
      {"small", "sgd", {"*"}, -1, nullptr},
  };
  EXPECT_EQ(planStep({{"a", {100}}, {"b", {99}}}, big).groupOf,
            indices({0, 1}));
}

TEST(Planner, RankMismatchIsAnError) {
  std::vector<GroupDesc> groups = {
      {"matrices", "muon", {"*"}, 2, nullptr},
  };
  EXPECT_EQ(planError({{"w", {40, 40}}, {"bias", {40}}}, groups),
            "parameter 'bias' of shape [40] matched group 'matrices', whose "
            "rule 'muon' takes matrices");
  groups[0] = {"vectors", "lion1d", {"*"}, 1, nullptr};
  EXPECT_EQ(planError({{"w", {40, 40}}}, groups),
            "parameter 'w' of shape [40, 40] matched group 'vectors', whose "
            "rule 'lion1d' takes vectors");
  groups[0] = {"convs", "conv", {"*"}, 4, nullptr};
  EXPECT_EQ(planError({{"s", {}}}, groups),
            "parameter 's' of shape [] matched group 'convs', whose rule "
            "'conv' takes rank-4 tensors");
}

TEST(Planner, UnmatchedParameterIsAnError) {
  EXPECT_EQ(
      planError(nanochatParams(), {nanochatGroups()[0], nanochatGroups()[1]}),
      "parameter 'transformer.h.0.attn.c_q.weight' (shape [64, 64]) "
      "matches no group");
  std::vector<ParamDesc> params = nanochatParams();
  params.push_back({"extra.norm", {3, 4}});
  EXPECT_EQ(planError(params, nanochatGroups()),
            "parameter 'extra.norm' (shape [3, 4]) matches no group");
  // The where predicate can be what excludes it.
  params.back() = {"transformer.h.0.ln.weight", {64}};
  EXPECT_EQ(planError(params, nanochatGroups()),
            "parameter 'transformer.h.0.ln.weight' (shape [64]) matches no "
            "group");
}

TEST(Planner, InvalidInputsAreErrors) {
  std::vector<GroupDesc> all = {{"all", "adamw", {"*"}, -1, nullptr}};
  EXPECT_EQ(planError({{"w", {2}}, {"b", {2}}, {"w", {3}}}, all),
            "parameter 'w' is registered twice");
  EXPECT_EQ(planError({{"w", {2, -1}}}, all),
            "parameter 'w' has an invalid shape [2, -1]");
  std::vector<GroupDesc> bad = {{"g", "adamw", {"*", "h.[0-9"}, -1, nullptr}};
  EXPECT_EQ(planError({{"w", {2}}}, bad),
            "group 'g': pattern \"h.[0-9\": unterminated character class '[' "
            "at offset 2 (write \\[ for a literal '[')");
}

TEST(Planner, EmptyInputs) {
  Plan plan = planStep({}, nanochatGroups());
  EXPECT_TRUE(plan.groupOf.empty());
  EXPECT_TRUE(plan.buckets.empty());
  EXPECT_EQ(planError({{"w", {2}}}, {}),
            "parameter 'w' (shape [2]) matches no group");
}

TEST(Planner, Deterministic) {
  std::vector<ParamDesc> params = nanochatParams();
  std::vector<GroupDesc> groups = nanochatGroups();
  Plan first = planStep(params, groups);
  for (int i = 0; i < 3; ++i) {
    Plan again = planStep(params, groups);
    EXPECT_EQ(again.groupOf, first.groupOf);
    ASSERT_EQ(again.buckets.size(), first.buckets.size());
    for (size_t b = 0; b < first.buckets.size(); ++b) {
      EXPECT_EQ(again.buckets[b].group, first.buckets[b].group);
      EXPECT_EQ(again.buckets[b].shape, first.buckets[b].shape);
      EXPECT_EQ(again.buckets[b].params, first.buckets[b].params);
    }
    EXPECT_EQ(describePlan(again, params, groups),
              describePlan(first, params, groups));
  }
}

TEST(Planner, DescribesThePlan) {
  std::vector<ParamDesc> params = {
      {"fc.weight", {4, 4}}, {"fc.bias", {4}}, {"out.weight", {4, 4}}};
  std::vector<GroupDesc> groups = {
      {"matrices", "muon", {"*"}, 2, isMatrix},
      {"vectors", "adamw", {"*"}, -1, nullptr},
      {"unused", "lion", {"nothing.*"}, -1, nullptr},
  };
  EXPECT_EQ(describePlan(planStep(params, groups), params, groups),
            "group     rule   shape   count  parameters\n"
            "matrices  muon   [4, 4]  2      fc.weight, out.weight\n"
            "vectors   adamw  [4]     1      fc.bias\n"
            "unused    lion   -       0      (no parameters)\n");
}
