//===- InProcessCommunicatorTest.cpp - Ranks as threads of one process ----===//
//
// The in-process communicators on 1..4 ranks (threads): each collective
// computes what Communicator.h says (means summed in rank order, bf16
// partial sums rounded once each, uneven counts), a collective that
// differs between ranks or a rank that never comes is an error on every
// rank that waits, never a hang; and the host executor's ZeRO-2 step on N
// in-process ranks ends with the bits of one rank's (DistributedScenario.h),
// as it does over MPI.
//
//===----------------------------------------------------------------------===//

#include "DistributedScenario.h"
#include "InProcessRanks.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Float16.h"
#include "optgen/runtime/InProcessCommunicator.h"
#include "optgen/runtime/Optimizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

using namespace optgen::runtime;
using namespace optgen::runtime::test;

namespace {

class InProcessCollectives : public testing::TestWithParam<int> {};

TEST_P(InProcessCollectives, AllReduceIsTheMeanInRankOrder) {
  int size = GetParam();
  constexpr int64_t kCount = 100;
  std::vector<std::vector<float>> results(size);
  std::vector<std::vector<uint16_t>> bf16Results(size);
  auto errors = onRanks(size, [&](int rank, Communicator &comm) {
    EXPECT_EQ(comm.rank(), rank);
    EXPECT_EQ(comm.size(), size);
    std::vector<float> data(kCount);
    std::vector<uint16_t> bits(kCount);
    for (int64_t i = 0; i < kCount; ++i) {
      data[i] = static_cast<float>(i) + 0.25f * static_cast<float>(rank);
      bits[i] = toBF16Bits(data[i]);
    }
    comm.allReduceMean(data.data(), kCount, DType::F32)->wait();
    comm.allReduceMean(bits.data(), kCount, DType::BF16)->wait();
    results[rank] = data;
    bf16Results[rank] = bits;
  });
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(errors[r], "");
    for (int64_t i = 0; i < kCount; ++i) {
      float sum = 0.0f;
      uint16_t bf16Sum = toBF16Bits(static_cast<float>(i));
      for (int k = 0; k < size; ++k) {
        sum += static_cast<float>(i) + 0.25f * static_cast<float>(k);
        if (k > 0)
          bf16Sum = toBF16Bits(
              fromBF16Bits(bf16Sum) +
              fromBF16Bits(toBF16Bits(static_cast<float>(i) +
                                      0.25f * static_cast<float>(k))));
      }
      ASSERT_EQ(results[r][i], size == 1 ? sum : sum / static_cast<float>(size))
          << "rank " << r << ", element " << i;
      uint16_t mean = size == 1 ? bf16Sum
                                : toBF16Bits(fromBF16Bits(bf16Sum) /
                                             static_cast<float>(size));
      ASSERT_EQ(bf16Results[r][i], mean) << "rank " << r << ", element " << i;
    }
  }
}

TEST_P(InProcessCollectives, ReduceScatterAndAllGatherTakeUnevenCounts) {
  int size = GetParam();
  // Rank r's part has r + 2 elements.
  std::vector<int64_t> counts(size);
  std::iota(counts.begin(), counts.end(), int64_t{2});
  int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  std::vector<std::vector<float>> parts(size), gathered(size);
  auto errors = onRanks(size, [&](int rank, Communicator &comm) {
    std::vector<float> send(total);
    for (int64_t i = 0; i < total; ++i)
      send[i] = static_cast<float>(i * size + rank);
    std::vector<float> part(counts[rank], -1.0f);
    comm.reduceScatterMean(send.data(), part.data(), counts, DType::F32)
        ->wait();
    std::vector<float> all(total, -1.0f);
    comm.allGather(part.data(), all.data(), counts, DType::F32)->wait();
    parts[rank] = part;
    gathered[rank] = all;
  });
  // Element i's mean: (i size + 0 + ... + size - 1) / size.
  std::vector<float> means(total);
  for (int64_t i = 0; i < total; ++i) {
    float sum = 0.0f;
    for (int k = 0; k < size; ++k)
      sum += static_cast<float>(i * size + k);
    means[i] = size == 1 ? sum : sum / static_cast<float>(size);
  }
  int64_t offset = 0;
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(errors[r], "");
    EXPECT_EQ(parts[r], std::vector<float>(means.begin() + offset,
                                           means.begin() + offset + counts[r]))
        << "rank " << r;
    EXPECT_EQ(gathered[r], means) << "rank " << r;
    offset += counts[r];
  }
}

TEST_P(InProcessCollectives, TheDistributedStepEndsWhereOneRanksDoes) {
  int size = GetParam();
  for (DType dtype : {DType::F32, DType::BF16}) {
    std::string name(dtypeName(dtype));
    std::vector<std::vector<Param>> shared(size);
    for (int r = 0; r < size; ++r)
      shared[r] = model(dtype);
    std::vector<Param> alone = model(dtype);
    std::vector<std::string> units(size);
    std::vector<std::unique_ptr<Communicator>> communicators =
        makeInProcessCommunicators(size);
    std::vector<std::unique_ptr<Optimizer>> optimizers;
    for (int r = 0; r < size; ++r) {
      optimizers.push_back(std::make_unique<Optimizer>(spec()));
      optimizers[r]->setCommunicator(std::move(communicators[r]));
      addAll(*optimizers[r], shared[r], dtype);
    }
    std::vector<std::string> errors(size);
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r)
      threads.emplace_back([&, r] {
        try {
          optimizers[r]->finalize();
          for (const StepUnit &unit : optimizers[r]->schedule().units)
            units[r] += std::string(unitKindName(unit.kind)) + " ";
          for (int s = 0; s < 3; ++s) {
            setGrads(shared[r], dtype, s, rankOffset(r, size));
            optimizers[r]->step();
          }
        } catch (const std::exception &error) {
          errors[r] = error.what();
        }
      });
    for (std::thread &thread : threads)
      thread.join();
    Optimizer reference(spec());
    addAll(reference, alone, dtype);
    reference.finalize();
    for (int s = 0; s < 3; ++s) {
      setGrads(alone, dtype, s, 0.0f);
      reference.step();
    }
    for (int r = 0; r < size; ++r) {
      EXPECT_EQ(errors[r], "") << name << ", rank " << r;
      EXPECT_EQ(units[r], expectedUnits(size)) << name << ", rank " << r;
      for (size_t p = 0; p < alone.size(); ++p)
        EXPECT_TRUE(shared[r][p].value == alone[p].value)
            << "'" << alone[p].name << "' (" << name << ") on rank " << r
            << " differs from one rank's";
    }
  }
}

// With globals: every rank finishes the same values, those of one rank
// stepping the mean gradients, each element counted once (the small
// tensor, updated on every rank, too); the parameters end with one rank's
// bits.
TEST_P(InProcessCollectives, GlobalsAreOneRanksOnEveryRank) {
  int size = GetParam();
  DType dtype = DType::F32;
  std::vector<std::vector<Param>> shared(size);
  for (int r = 0; r < size; ++r)
    shared[r] = model(dtype);
  std::vector<Param> alone = model(dtype);
  std::vector<std::unique_ptr<Communicator>> communicators =
      makeInProcessCommunicators(size);
  std::vector<std::unique_ptr<Optimizer>> optimizers;
  for (int r = 0; r < size; ++r) {
    optimizers.push_back(std::make_unique<Optimizer>(specWithGlobals()));
    optimizers[r]->setCommunicator(std::move(communicators[r]));
    addAll(*optimizers[r], shared[r], dtype);
  }
  std::vector<std::string> errors(size);
  std::vector<std::vector<double>> values(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        optimizers[r]->finalize();
        for (int s = 0; s < 3; ++s) {
          setGrads(shared[r], dtype, s, rankOffset(r, size));
          optimizers[r]->step();
        }
        for (const std::string &name : optimizers[r]->globalNames())
          values[r].push_back(optimizers[r]->globalValue(name));
      } catch (const std::exception &error) {
        errors[r] = error.what();
      }
    });
  for (std::thread &thread : threads)
    thread.join();

  Optimizer reference(specWithGlobals());
  addAll(reference, alone, dtype);
  reference.finalize();
  EXPECT_THROW(reference.globalValue("grad_norm"), Error); // before a step
  std::vector<Param> before;
  for (int s = 0; s < 3; ++s) {
    setGrads(alone, dtype, s, 0.0f);
    before = alone;
    reference.step();
  }
  // The last step's globals, from its gradients and the parameters before
  // it, summed here.
  double squares = 0, peak = 0, weights = 0;
  for (const Param &p : before)
    for (size_t i = 0; i < p.grad.size() / sizeof(float); ++i) {
      float g, w;
      std::memcpy(&g, p.grad.data() + i * sizeof(float), sizeof g);
      std::memcpy(&w, p.value.data() + i * sizeof(float), sizeof w);
      squares += static_cast<double>(g) * g;
      peak = std::max(peak, std::fabs(static_cast<double>(g)));
      weights += static_cast<double>(w) * w;
    }
  EXPECT_EQ(reference.globalNames(),
            (std::vector<std::string>{"grad_norm", "grad_peak", "weight_norm"}));
  EXPECT_FLOAT_EQ(static_cast<float>(reference.globalValue("grad_norm")),
                  static_cast<float>(std::sqrt(squares)));
  EXPECT_EQ(reference.globalValue("grad_peak"), peak);
  EXPECT_FLOAT_EQ(static_cast<float>(reference.globalValue("weight_norm")),
                  static_cast<float>(std::sqrt(weights)));
  std::vector<double> expected;
  for (const std::string &name : reference.globalNames())
    expected.push_back(reference.globalValue(name));
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(values[r], expected) << "rank " << r;
    for (size_t p = 0; p < alone.size(); ++p)
      EXPECT_TRUE(shared[r][p].value == alone[p].value)
          << "'" << alone[p].name << "' on rank " << r
          << " differs from one rank's";
  }
  EXPECT_THROW(reference.globalValue("norm"), Error);
}

INSTANTIATE_TEST_SUITE_P(Ranks, InProcessCollectives, testing::Values(1, 2, 3, 4),
                         [](const testing::TestParamInfo<int> &info) {
                           return "N" + std::to_string(info.param);
                         });

TEST(InProcessCommunicatorTest, ACollectiveThatDiffersBetweenRanksIsAnError) {
  auto errors = onRanks(2, [](int rank, Communicator &comm) {
    float data[4] = {};
    if (rank == 0)
      comm.allReduceMean(data, 4, DType::F32);
    else
      comm.allGather(data, data, {2, 2}, DType::F32);
  });
  const std::string why = "rank 1 called all-gather of F32 with counts [2, 2] "
                          "where rank 0 called all-reduce of F32 with counts "
                          "[4]";
  EXPECT_EQ(errors[0], "rank 0: " + why);
  EXPECT_EQ(errors[1], "rank 1: " + why);
}

TEST(InProcessCommunicatorTest, ARankThatNeverComesIsAnErrorNotAHang) {
  auto start = std::chrono::steady_clock::now();
  auto errors = onRanks(
      3,
      [](int rank, Communicator &comm) {
        float data[4] = {};
        if (rank == 2)
          return; // fails before its collective, say
        comm.allReduceMean(data, 4, DType::F32);
      },
      std::chrono::milliseconds(300));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(errors[2], "");
  // The first to give up says so; the other learns it from the first.
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(errors[r].find("waited 300 ms at a collective for the other "
                             "ranks, and 1 of 2 came"),
              std::string::npos)
        << errors[r];
}

TEST(InProcessCommunicatorTest, CountsThatDoNotFitTheWorldAreErrors) {
  auto errors = onRanks(1, [](int, Communicator &comm) {
    float data[4] = {};
    comm.reduceScatterMean(data, data, {2, 2}, DType::F32);
  });
  EXPECT_EQ(errors[0],
            "reduce-scatter with 2 counts on 1 ranks: one count per rank");
}

} // namespace
