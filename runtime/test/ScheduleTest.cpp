//===- ScheduleTest.cpp - The step as data --------------------------------===//

#include "optgen/runtime/Schedule.h"

#include "optgen/runtime/Error.h"

#include <gtest/gtest.h>

#include <string>

using namespace optgen::runtime;

namespace {

using Op = ScheduleOp::Kind;

/// Two groups: "scalars" (rule 0, elementwise) and "matrices" (rule 1).
StepSchedule scheduleOf(const std::vector<std::vector<int64_t>> &shapes,
                        Distribution distribution, int worldSize,
                        DType dtype = DType::F32, bool globals = false) {
  std::vector<ScheduleParam> params;
  std::vector<size_t> groupOf;
  for (size_t i = 0; i < shapes.size(); ++i) {
    bool matrix = shapes[i].size() == 2;
    params.push_back({"p" + std::to_string(i), shapes[i], matrix ? 1u : 0u,
                      matrix ? 1 : 0, !matrix, dtype});
    groupOf.push_back(matrix ? 1 : 0);
  }
  return buildStepSchedule(params, bucketParams(groupOf, shapes, 2),
                           distribution, worldSize, 16, 0, globals);
}

std::string programText(const StepSchedule &schedule) {
  std::string text;
  for (const ScheduleOp &op : schedule.program) {
    static const char *const names[] = {
        "allreduce", "reducescatter", "allgather", "wait",
        "compute",   "partials",      "gather",    "finish"};
    text += names[static_cast<int>(op.kind)];
    if (op.unit >= 0)
      text += " u" + std::to_string(op.unit);
    if (op.token >= 0)
      text += " t" + std::to_string(op.token);
    text += "; ";
  }
  return text;
}

TEST(ScheduleTest, WithoutDistributionEachBucketIsComputedWhereItIs) {
  for (auto [distribution, world] :
       {std::pair{Distribution::None, 4}, std::pair{Distribution::Zero2, 1}}) {
    StepSchedule schedule =
        scheduleOf({{8, 8}, {40}, {8, 8}, {4, 8}}, distribution, world);
    ASSERT_EQ(schedule.units.size(), 3u); // [40]; [8, 8] x 2; [4, 8]
    for (const StepUnit &unit : schedule.units) {
      EXPECT_EQ(unit.kind, UnitKind::Local);
      EXPECT_TRUE(unit.counts.empty());
    }
    EXPECT_EQ(schedule.units[1].params, (std::vector<size_t>{0, 2}));
    EXPECT_EQ(schedule.units[1].rule, 1);
    EXPECT_EQ(programText(schedule), "compute u0; compute u1; compute u2; ");
    EXPECT_EQ(schedule.tokenCount, 0);
    // Every rank steps everything.
    ASSERT_EQ(schedule.units[1].ranges.size(), static_cast<size_t>(world));
    EXPECT_EQ(schedule.units[1].ranges[world - 1][1].length, 64);
  }
}

TEST(ScheduleTest, ZeroTwoRunsThreePhasesOverThePlannersUnits) {
  // A small vector, two elementwise vectors, two matrices on two ranks.
  StepSchedule schedule =
      scheduleOf({{3}, {30}, {8, 8}, {50}, {8, 8}}, Distribution::Zero2, 2);
  ASSERT_EQ(schedule.units.size(), 3u);
  const StepUnit &small = schedule.units[0], &flat = schedule.units[1],
                 &owned = schedule.units[2];
  EXPECT_EQ(small.kind, UnitKind::Small);
  EXPECT_EQ(small.counts, (std::vector<int64_t>{3}));
  EXPECT_EQ(flat.kind, UnitKind::Flat);
  EXPECT_EQ(flat.params, (std::vector<size_t>{1, 3}));
  EXPECT_EQ(flat.counts, (std::vector<int64_t>{40, 40}));
  EXPECT_EQ(owned.kind, UnitKind::Owned);
  EXPECT_EQ(owned.rule, 1);
  EXPECT_EQ(owned.owners, (std::vector<int>{0, 1}));
  EXPECT_EQ(programText(schedule),
            "allreduce u0 t0; reducescatter u1 t1; reducescatter u2 t2; "
            "wait t0; compute u0; "
            "wait t1; compute u1; allgather u1 t3; "
            "wait t2; compute u2; allgather u2 t4; "
            "wait t3; wait t4; ");
  EXPECT_EQ(schedule.tokenCount, 5);
  // Rank 0 steps p1 whole and p3's first 10 elements; rank 1 the rest.
  EXPECT_EQ(flat.ranges[0][0].length, 30);
  EXPECT_EQ(flat.ranges[0][1].begin, 0);
  EXPECT_EQ(flat.ranges[0][1].length, 10);
  EXPECT_EQ(flat.ranges[1][0].length, 0);
  EXPECT_EQ(flat.ranges[1][1].begin, 10);
  EXPECT_EQ(flat.ranges[1][1].length, 40);
  EXPECT_EQ(owned.ranges[0][1].length, 0);
  EXPECT_EQ(owned.ranges[1][1].length, 64);
}

// With globals every update waits for them: each unit's partials after its
// reduction, the partials' gather and its wait, the finish, then the
// computes and gathers; locally, the partials and the finish first.
TEST(ScheduleTest, GlobalsComeBeforeEveryUpdate) {
  StepSchedule distributed = scheduleOf({{3}, {30}, {8, 8}, {50}, {8, 8}},
                                        Distribution::Zero2, 2, DType::F32,
                                        /*globals=*/true);
  EXPECT_EQ(programText(distributed),
            "allreduce u0 t0; reducescatter u1 t1; reducescatter u2 t2; "
            "wait t0; partials u0; wait t1; partials u1; wait t2; "
            "partials u2; gather t3; wait t3; finish; "
            "compute u0; compute u1; allgather u1 t4; "
            "compute u2; allgather u2 t5; wait t4; wait t5; ");
  EXPECT_EQ(distributed.tokenCount, 6);
  StepSchedule local = scheduleOf({{8, 8}, {40}}, Distribution::None, 4,
                                  DType::F32, /*globals=*/true);
  EXPECT_EQ(programText(local),
            "partials u0; partials u1; finish; compute u0; compute u1; ");
  EXPECT_EQ(local.tokenCount, 0);
}

TEST(ScheduleTest, CollectivesCarryBf16OnlyWhenEveryGradientIsBf16) {
  StepSchedule bf16 =
      scheduleOf({{3}, {8, 8}, {8, 8}}, Distribution::Zero2, 2, DType::BF16);
  for (const StepUnit &unit : bf16.units)
    EXPECT_EQ(unit.payload, DType::BF16);
  Traffic traffic = collectiveTraffic(bf16.units[1], Op::ReduceScatter, 0);
  EXPECT_EQ(traffic.sent, 2 * 128);
  EXPECT_EQ(traffic.received, 2 * 64);

  std::vector<ScheduleParam> params = {{"a", {8, 8}, 0, 0, false, DType::BF16},
                                       {"b", {8, 8}, 0, 0, false, DType::F32}};
  StepSchedule mixed =
      buildStepSchedule(params, bucketParams({0, 0}, {{8, 8}, {8, 8}}, 1),
                        Distribution::Zero2, 2, 16);
  EXPECT_EQ(mixed.units[0].payload, DType::F32);
  traffic = collectiveTraffic(mixed.units[0], Op::AllGather, 1);
  EXPECT_EQ(traffic.sent, 4 * 64);
  EXPECT_EQ(traffic.received, 4 * 128);
}

/// The error deriveRanges gives for `schedule`, or "" when it accepts it.
std::string rangeError(StepSchedule schedule) {
  try {
    deriveRanges(schedule);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

TEST(ScheduleTest, SchedulesThatDoNotFitTogetherAreRefused) {
  StepSchedule good =
      scheduleOf({{3}, {30}, {8, 8}, {50}, {8, 8}}, Distribution::Zero2, 2);
  EXPECT_EQ(rangeError(good), "");

  StepSchedule schedule = good;
  schedule.units[2].counts = {64, 60};
  EXPECT_EQ(rangeError(schedule),
            "unit 2 (owned) of the schedule: rank 1's part is 60 elements, "
            "but it owns 64");
  schedule = good;
  schedule.units[2].owners = {1, 0};
  EXPECT_EQ(rangeError(schedule),
            "unit 2 (owned) of the schedule: its members are not packed by "
            "owner");
  schedule = good;
  schedule.units[1].counts = {30, 30};
  EXPECT_EQ(rangeError(schedule),
            "unit 1 (flat) of the schedule: its parts hold 60 elements of 80");
  schedule = good;
  schedule.units[1].params.push_back(1);
  EXPECT_EQ(rangeError(schedule),
            "unit 1 (flat) of the schedule: parameter 'p1' is in unit 1 too");
  schedule = good;
  schedule.units.pop_back();
  EXPECT_EQ(rangeError(schedule),
            "parameter 'p2' is in no unit of the schedule");
  schedule = good;
  schedule.units[2].rule = 0;
  EXPECT_EQ(rangeError(schedule),
            "unit 2 (owned) of the schedule: parameter 'p2' runs rule 1, not "
            "the unit's 0");
  schedule = good;
  schedule.units[2].payload = DType::F64;
  EXPECT_EQ(rangeError(schedule),
            "unit 2 (owned) of the schedule: its collectives carry F64, not "
            "F32 or BF16");
}

} // namespace
