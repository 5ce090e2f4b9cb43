//===- StepAllocationTest.cpp - Memory is planned at finalize() -----------===//
//
// Counts the heap allocations a step makes (this test binary's operator new
// counts while a step runs): a step allocates none of the optimizer's
// memory (state, staging, packed buffers, workspace); only the handles of
// the collectives it launches.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/Optimizer.h"

#include "optgen/runtime/Float16.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

namespace {
std::atomic<bool> counting{false};
std::atomic<int64_t> allocations{0};
} // namespace

// None inlined: GCC would see free() of what a new-expression returned, or
// operator delete of what malloc() did, and warn of a mismatch, which these
// replacements, a pair, are not.
[[gnu::noinline]] void *operator new(std::size_t size) {
  if (counting)
    ++allocations;
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void *p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void *p, std::size_t) noexcept {
  std::free(p);
}

using namespace optgen::runtime;

namespace {

/// p -= lr * g / (1 + |g|), through the workspace: g's magnitudes first.
void stepScaled(const RuleCall &call) {
  int64_t n = call.rows * call.cols;
  for (int64_t i = 0; i < n; ++i)
    call.workspace[i] =
        1.0f + (call.grad[i] < 0 ? -call.grad[i] : call.grad[i]);
  for (int64_t i = 0; i < n; ++i)
    call.param[i] -=
        static_cast<float>(call.hypers[0]) * call.grad[i] / call.workspace[i];
}

int64_t workspaceScaled(const int64_t *shape, int rank) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d)
    n *= shape[d];
  return n;
}

void noStates(const int64_t *, int, int64_t *, int64_t *) {}

OptimizerSpec scaledSpec(Distribution distribution) {
  OptimizerSpec spec;
  spec.name = "scaled";
  spec.rules.push_back({"scaled",
                        -1,
                        {{"lr", 1, 0, false, true, {0.5}}},
                        {},
                        noStates,
                        stepScaled,
                        true,
                        workspaceScaled});
  spec.groups.push_back({"all", 0, {"*"}, nullptr, {}});
  spec.distribution = distribution;
  spec.smallNumel = 8;
  return spec;
}

struct Bf16Model {
  std::vector<uint16_t> w, dw, v, dv;
  Bf16Model() {
    for (int i = 0; i < 64; ++i) {
      w.push_back(toBF16Bits(0.25f * i));
      dw.push_back(toBF16Bits(i % 2 ? 1.0f : -3.0f));
    }
    v = {toBF16Bits(1.0f), toBF16Bits(2.0f)};
    dv = {toBF16Bits(1.0f), toBF16Bits(-1.0f)};
  }
  void addTo(Optimizer &opt) {
    opt.addParameter("w", {w.data(), DType::BF16, {8, 8}},
                     {dw.data(), DType::BF16, {8, 8}});
    opt.addParameter("v", {v.data(), DType::BF16, {2}},
                     {dv.data(), DType::BF16, {2}});
  }
};

int64_t allocationsOfOneStep(Optimizer &opt) {
  allocations = 0;
  counting = true;
  opt.step();
  counting = false;
  return allocations;
}

TEST(StepAllocationTest, ALocalStepAllocatesNothing) {
  Bf16Model model;
  Optimizer opt(scaledSpec(Distribution::None));
  model.addTo(opt);
  opt.finalize();
  opt.step(); // anything lazily set up on a first call is not the step's
  EXPECT_EQ(allocationsOfOneStep(opt), 0);
  // The workspace did its work: each step adds 0.5 * 3 / (1 + 3).
  EXPECT_EQ(fromBF16Bits(model.w[0]), 0.75f);
}

void scatteredStep(Executor &x) {
  Token t0 = x.launchAllReduce(0);
  Token t1 = x.launchReduceScatter(1);
  x.wait(t0);
  x.compute(0);
  x.wait(t1);
  x.compute(1);
  x.wait(x.launchAllGather(1));
}

TEST(StepAllocationTest, ADistributedStepAllocatesOnlyCollectiveHandles) {
  Bf16Model local, scattered;
  Optimizer reference(scaledSpec(Distribution::None));
  local.addTo(reference);
  reference.finalize();
  OptimizerSpec spec = scaledSpec(Distribution::Zero2);
  spec.plannedParams = {{"w", {8, 8}, 0, -1}, {"v", {2}, 0, -1}};
  spec.compiledSchedule =
      CompiledSchedule{1,
                       {{UnitKind::Small, 0, {1}, {}, {2}, DType::BF16},
                        {UnitKind::Flat, 0, {0}, {}, {64}, DType::BF16}},
                       scatteredStep};
  Optimizer opt(spec);
  scattered.addTo(opt);
  opt.finalize();
  opt.step();
  reference.step();
  EXPECT_LE(allocationsOfOneStep(opt), 3); // three collectives' handles
  reference.step();
  EXPECT_EQ(scattered.w, local.w);
  EXPECT_EQ(scattered.v, local.v);
}

} // namespace
