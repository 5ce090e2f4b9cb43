//===- TensorTest.cpp - Dtypes, views and element access ------------------===//

#include "optgen/runtime/Tensor.h"

#include "optgen/runtime/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace optgen::runtime;

TEST(Tensor, DTypes) {
  for (DType dtype :
       {DType::F32, DType::BF16, DType::F16, DType::F64, DType::I64})
    EXPECT_EQ(parseDType(dtypeName(dtype)), dtype);
  EXPECT_EQ(dtypeName(DType::BF16), "BF16");
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::F64), 8u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(parseDType("f32"), std::nullopt);
  EXPECT_EQ(parseDType("I8"), std::nullopt);
  EXPECT_EQ(parseDType(""), std::nullopt);
}

TEST(Tensor, Shapes) {
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(formatShape({256, 8}), "[256, 8]");
  EXPECT_EQ(checkedNumel({}), 1);
  EXPECT_EQ(checkedNumel({3, 0, 5}), 0);
  EXPECT_EQ(checkedNumel({256, 8}), 2048);
  EXPECT_EQ(checkedNumel({-1}), std::nullopt);
  EXPECT_EQ(checkedNumel({int64_t{1} << 32, int64_t{1} << 31}), std::nullopt);
  EXPECT_EQ(checkedNumel({int64_t{1} << 31, int64_t{1} << 31}),
            int64_t{1} << 62);
  EXPECT_EQ(checkedByteSize(DType::F32, {int64_t{1} << 61}), std::nullopt);
  EXPECT_EQ(checkedByteSize(DType::BF16, {3, 5}), 30);
  EXPECT_THROW(TensorView({nullptr, DType::F32, {-2}}).numel(), Error);
  EXPECT_THROW(Tensor::zeros(DType::F64, {int64_t{1} << 62}), Error);
}

TEST(Tensor, ReadsAndWritesEveryDType) {
  for (DType dtype :
       {DType::F32, DType::BF16, DType::F16, DType::F64, DType::I64}) {
    Tensor tensor = Tensor::zeros(dtype, {2, 3});
    EXPECT_EQ(tensor.numel(), 6);
    EXPECT_EQ(tensor.bytes.size(), 6 * dtypeSize(dtype));
    TensorView view = tensor.view();
    for (int64_t i = 0; i < 6; ++i) {
      EXPECT_EQ(readFloat(view, i), 0.0f);
      writeDouble(view, i, static_cast<double>(i) - 2.0);
    }
    EXPECT_EQ(toDoubleVector(view), (std::vector<double>{-2, -1, 0, 1, 2, 3}));
    EXPECT_EQ(toFloatVector(view), (std::vector<float>{-2, -1, 0, 1, 2, 3}));
  }
}

TEST(Tensor, RoundsToTheDType) {
  Tensor bf16 = Tensor::zeros(DType::BF16, {1});
  writeFloat(bf16.view(), 0, 0.9f);
  EXPECT_EQ(readFloat(bf16.view(), 0), 0.8984375f);
  uint16_t bits;
  std::memcpy(&bits, bf16.bytes.data(), 2);
  EXPECT_EQ(bits, 0x3f66);

  Tensor f16 = Tensor::zeros(DType::F16, {1});
  writeDouble(f16.view(), 0, 1e6);
  EXPECT_EQ(readFloat(f16.view(), 0), INFINITY);

  Tensor f64 = Tensor::zeros(DType::F64, {1});
  writeDouble(f64.view(), 0, 0.1);
  EXPECT_EQ(readDouble(f64.view(), 0), 0.1);
  EXPECT_EQ(readFloat(f64.view(), 0), 0.1f);

  Tensor i64 = Tensor::zeros(DType::I64, {1});
  writeDouble(i64.view(), 0, -2.9);
  EXPECT_EQ(readDouble(i64.view(), 0), -2.0);
  writeDouble(i64.view(), 0, -0x1p63);
  EXPECT_EQ(readDouble(i64.view(), 0), -0x1p63);
  EXPECT_THROW(writeDouble(i64.view(), 0, 0x1p63), Error);
  EXPECT_THROW(writeDouble(i64.view(), 0, NAN), Error);
}

TEST(Tensor, IndicesAreChecked) {
  Tensor tensor = Tensor::zeros(DType::F32, {2, 2});
  EXPECT_THROW(readFloat(tensor.view(), 4), Error);
  EXPECT_THROW(readDouble(tensor.view(), -1), Error);
  EXPECT_THROW(writeFloat(tensor.view(), 4, 1.0f), Error);
  try {
    readFloat(tensor.view(), 7);
    FAIL();
  } catch (const Error &error) {
    EXPECT_STREQ(
        error.what(),
        "element index 7 is out of range for a tensor of shape [2, 2]");
  }
}

TEST(Tensor, CopiesUnalignedViews) {
  // Views into file buffers need not be aligned.
  unsigned char buffer[1 + 2 * sizeof(double)] = {};
  double values[2] = {1.5, -3.25};
  std::memcpy(buffer + 1, values, sizeof values);
  TensorView view{buffer + 1, DType::F64, {2}};
  EXPECT_EQ(view.byteSize(), 16u);
  EXPECT_EQ(readDouble(view, 1), -3.25);
  Tensor copy = Tensor::copyOf(view);
  EXPECT_EQ(copy.shape, std::vector<int64_t>{2});
  EXPECT_EQ(toDoubleVector(copy.view()), (std::vector<double>{1.5, -3.25}));
  Tensor scalar = Tensor::zeros(DType::F32, {});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.bytes.size(), 4u);
}

TEST(Tensor, ViewsAreOnTheHostUnlessTaggedAndOnlyHostMemoryIsRead) {
  float value = 1.5f;
  TensorView host{&value, DType::F32, {1}};
  EXPECT_EQ(host.device, Device::Host);
  EXPECT_EQ(readFloat(host, 0), 1.5f);
  TensorView device{&value, DType::F32, {1}, Device::Cuda};
  EXPECT_EQ(deviceName(device.device), "cuda");
  EXPECT_THROW(readFloat(device, 0), Error);
  EXPECT_THROW(writeFloat(device, 0, 2.0f), Error);
  EXPECT_THROW(Tensor::copyOf(device), Error);
}

TEST(Tensor, ConvertsInBulkAsElementAccessRounds) {
  // Values around bf16/f16 rounding boundaries, specials included.
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 1.00390625f, 1.005859375f,
                               -3.14159f, 65504.0f, 65520.0f, 1e-8f,
                               std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN()};
  for (float x = -2.0f; x < 2.0f; x += 0.0137f)
    values.push_back(x);
  int64_t n = static_cast<int64_t>(values.size());
  for (DType narrow : {DType::BF16, DType::F16}) {
    std::vector<uint16_t> bulk(values.size()), single(values.size());
    convertElements(values.data(), DType::F32, bulk.data(), narrow, n);
    TensorView view{single.data(), narrow, {n}};
    for (int64_t i = 0; i < n; ++i)
      writeFloat(view, i, values[i]);
    EXPECT_EQ(bulk, single) << dtypeName(narrow);
    std::vector<float> widened(values.size());
    convertElements(bulk.data(), narrow, widened.data(), DType::F32, n);
    for (int64_t i = 0; i < n; ++i) {
      float expected = readFloat(view, i);
      if (std::isnan(expected))
        EXPECT_TRUE(std::isnan(widened[i]));
      else
        EXPECT_EQ(widened[i], expected);
    }
  }
  std::vector<float> copy(values.size());
  convertElements(values.data(), DType::F32, copy.data(), DType::F32, n);
  EXPECT_EQ(std::memcmp(copy.data(), values.data(), copy.size() * 4), 0);
  EXPECT_THROW(convertElements(values.data(), DType::F32, copy.data(),
                               DType::F64, n),
               Error);
}
