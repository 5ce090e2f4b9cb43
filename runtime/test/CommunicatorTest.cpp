//===- CommunicatorTest.cpp - The single-rank communicator ----------------===//

#include "optgen/runtime/Communicator.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Float16.h"

#include <gtest/gtest.h>

#include <vector>

using namespace optgen::runtime;

TEST(SingleRankCommunicator, CollectivesOfOneRankAreCopiesInEitherDType) {
  std::unique_ptr<Communicator> comm = makeSingleRankCommunicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);

  std::vector<float> data = {1.5f, -2.0f};
  comm->allReduceMean(data.data(), 2, DType::F32)->wait();
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f}));

  std::vector<uint16_t> send = {toBF16Bits(3.0f), toBF16Bits(0.25f)};
  std::vector<uint16_t> recv(2, 0);
  comm->reduceScatterMean(send.data(), recv.data(), {2}, DType::BF16)->wait();
  EXPECT_EQ(recv, send);
  std::vector<uint16_t> gathered(2, 0);
  comm->allGather(recv.data(), gathered.data(), {2}, DType::BF16)->wait();
  EXPECT_EQ(gathered, send);
}

TEST(SingleRankCommunicator, RejectsOtherDTypesCountsAndStreams) {
  std::unique_ptr<Communicator> comm = makeSingleRankCommunicator();
  double wide[2] = {0, 0};
  EXPECT_THROW(comm->allReduceMean(wide, 2, DType::F64), Error);
  float values[2] = {0, 0};
  EXPECT_THROW(comm->allGather(values, values, {1, 1}, DType::F32), Error);
  comm->bindStream(nullptr);
  int stream = 0;
  EXPECT_THROW(comm->bindStream(&stream), Error);
}
