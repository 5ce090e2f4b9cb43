//===- DeviceGemmTest.cpp - Matrix products on a CUDA device --------------===//
//
// deviceGemm must compute what the host's gemm (Kernels.h) computes, to f32
// rounding: it is checked against an f64 reference of the same products,
// and against the host's gemm where the runtime has a BLAS (GPU machines
// build it without one: scripts/gpu), in every transposition, with and
// without an accumulated c (its own memory or the result's), on batches
// whose members are not 256-byte aligned, and captured in a CUDA graph;
// with bf16 and f16 operands (the tensor cores' products), against the f64
// reference of the same 16-bit inputs, rounded once into the result's
// dtype. deviceRound must round as Float16.h does on the host, bit for
// bit, and deviceCopy must move bits, of every dtype. What deviceGemm rejects before any CUDA call
// is tested everywhere; the rest skips itself without a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include "optgen/runtime/DeviceGemm.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/Float16.h"
#include "optgen/runtime/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace optgen::runtime;
using namespace optgen::runtime::test;

namespace {

constexpr int kBatch = 3;
constexpr int64_t kM = 5, kK = 7, kN = 4;
constexpr float kAlpha = 0.75f, kBeta = -1.25f;
/// What fills the gaps between members, which nothing may write.
constexpr float kGap = 12345.0f;

/// A batch of row-major matrices in host memory, members `stride` floats
/// apart, the gaps between them holding kGap; and its copy on the device.
struct Batch {
  int64_t rows, cols, stride;
  std::vector<float> values;

  /// Members of `rows` x `cols` with `extra` floats of gap after each,
  /// filled with values of `seed`, or with `fill` where given.
  Batch(int64_t rows, int64_t cols, int64_t extra, int seed,
        std::optional<float> fill = std::nullopt)
      : rows(rows), cols(cols), stride(rows * cols + extra),
        values(static_cast<size_t>(stride * kBatch), kGap) {
    for (int m = 0; m < kBatch; ++m)
      for (int64_t i = 0; i < rows * cols; ++i)
        at(m, i) = fill ? *fill
                        : std::sin(0.7f * static_cast<float>(i + 11 * m) +
                                   static_cast<float>(seed));
  }
  float &at(int member, int64_t i) { return values[member * stride + i]; }
  float at(int member, int64_t row, int64_t col) const {
    return values[member * stride + row * cols + col];
  }
  Tile tile(int member) {
    return {values.data() + member * stride, rows, cols};
  }
  DeviceMatrices on(const DeviceBytes &device) const {
    return {device.data, rows, cols, stride};
  }
  /// Every value rounded to `dtype` (BF16 or F16), as held in f32.
  Batch roundedTo(DType dtype) const {
    Batch rounded = *this;
    for (float &x : rounded.values)
      if (x != kGap)
        x = dtype == DType::BF16 ? roundToBF16(x) : roundToF16(x);
    return rounded;
  }
};

/// `values` as 16-bit `dtype` (BF16 or F16) bytes, each rounded to
/// nearest even (kGap too, which neither holds exactly).
std::vector<unsigned char> halfBytesOf(const std::vector<float> &values,
                                       DType dtype) {
  std::vector<unsigned char> bytes(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits = dtype == DType::BF16 ? toBF16Bits(values[i])
                                         : toF16Bits(values[i]);
    std::memcpy(bytes.data() + 2 * i, &bits, 2);
  }
  return bytes;
}

/// The 16-bit `dtype` values of `bytes`, as f32.
std::vector<float> halfFloatsOf(const std::vector<unsigned char> &bytes,
                                DType dtype) {
  std::vector<float> values(bytes.size() / 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + 2 * i, 2);
    values[i] = dtype == DType::BF16 ? fromBF16Bits(bits) : fromF16Bits(bits);
  }
  return values;
}

/// The largest error of `actual` (a batch like `expected`) relative to the
/// largest magnitude of `expected`, over the members; the gaps must hold
/// `gap` still (kGap, as the dtype of `actual` holds it).
double relativeError(const Batch &expected, const std::vector<float> &actual,
                     float gap = kGap) {
  double error = 0.0, scale = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (static_cast<int64_t>(i % expected.stride) >=
        expected.rows * expected.cols) {
      EXPECT_EQ(actual[i], gap) << "a gap was written, at " << i;
      continue;
    }
    error = std::max(
        error, std::fabs(static_cast<double>(actual[i]) - expected.values[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(expected.values[i])));
  }
  return error / scale;
}

/// out = alpha * op(a) @ op(b) (+ beta * c) in f64, rounded once to f32:
/// the products deviceGemm and the host's gemm approach to f32 rounding.
Batch reference(const Batch &a, bool transposeA, const Batch &b,
                bool transposeB, const Batch *c, Batch out) {
  for (int m = 0; m < kBatch; ++m)
    for (int64_t i = 0; i < out.rows; ++i)
      for (int64_t j = 0; j < out.cols; ++j) {
        double sum = 0.0;
        for (int64_t k = 0; k < kK; ++k)
          sum +=
              static_cast<double>(transposeA ? a.at(m, k, i) : a.at(m, i, k)) *
              (transposeB ? b.at(m, j, k) : b.at(m, k, j));
        double value = kAlpha * sum;
        if (c)
          value += static_cast<double>(kBeta) * c->at(m, i, j);
        out.at(m, i * out.cols + j) = static_cast<float>(value);
      }
  return out;
}

/// How a product accumulates: not at all, into c's own memory, or into
/// the result's (c is the result).
enum class Accumulate { None, Separate, InPlace };
using GemmVariant = std::tuple<bool, bool, Accumulate>;

class DeviceGemmMatchesHost : public testing::TestWithParam<GemmVariant> {};

TEST_P(DeviceGemmMatchesHost, ToF32Rounding) {
  SKIP_WITHOUT_CUDA_DEVICE();
  auto [transposeA, transposeB, accumulate] = GetParam();
  // Gaps of 3, 1 and 2 floats: no member but the first is 256-byte
  // aligned, nor even 16-byte aligned.
  Batch a(transposeA ? kK : kM, transposeA ? kM : kK, 3, 1);
  Batch b(transposeB ? kN : kK, transposeB ? kK : kN, 0, 2);
  Batch c(kM, kN, accumulate == Accumulate::InPlace ? 2 : 1, 3);
  // Without c, NaN: the result's earlier contents are never read.
  Batch out =
      accumulate == Accumulate::InPlace
          ? c
          : Batch(kM, kN, 2, 0, std::numeric_limits<float>::quiet_NaN());
  const Batch *accumulated = accumulate == Accumulate::None ? nullptr : &c;
  Batch expected = reference(a, transposeA, b, transposeB, accumulated, out);

  DeviceBlas blas = DeviceBlas::create();
  DeviceBytes deviceA(bytesOf(a.values)), deviceB(bytesOf(b.values));
  DeviceBytes deviceC(bytesOf(c.values)), deviceOut(bytesOf(out.values));
  DeviceMatrices cOn =
      accumulate == Accumulate::InPlace ? out.on(deviceOut) : c.on(deviceC);
  deviceGemm(blas, a.on(deviceA), transposeA, b.on(deviceB), transposeB, kAlpha,
             accumulated ? &cOn : nullptr, kBeta, out.on(deviceOut), kBatch,
             nullptr, "test");
  EXPECT_LT(relativeError(expected, floatsOf(deviceOut.download())), 1e-5);

  // The host's gemm, member by member, where it has a BLAS.
  Batch host = out;
  try {
    for (int m = 0; m < kBatch; ++m) {
      Tile hostC = accumulate == Accumulate::InPlace ? host.tile(m) : c.tile(m);
      Tile hostOut = host.tile(m);
      gemm(a.tile(m), transposeA, b.tile(m), transposeB, kAlpha,
           accumulated ? &hostC : nullptr, kBeta, false, hostOut);
    }
  } catch (const Error &error) {
    ASSERT_NE(std::string(error.what()).find("without a BLAS"),
              std::string::npos)
        << error.what();
    return;
  }
  EXPECT_LT(relativeError(host, floatsOf(deviceOut.download())), 1e-5);
}

/// "ATB", "ABTC", "ABCInPlace", ...: the operands as they are multiplied.
std::string variantName(const testing::TestParamInfo<GemmVariant> &info) {
  const char *accumulate[] = {"", "C", "CInPlace"};
  return std::string(std::get<0>(info.param) ? "AT" : "A") +
         (std::get<1>(info.param) ? "BT" : "B") +
         accumulate[static_cast<int>(std::get<2>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(Transpositions, DeviceGemmMatchesHost,
                         testing::Combine(testing::Bool(), testing::Bool(),
                                          testing::Values(Accumulate::None,
                                                          Accumulate::Separate,
                                                          Accumulate::InPlace)),
                         variantName);

/// A product of 16-bit operands (the polar iteration's, stored bf16 by
/// device targets), into their dtype or into f32, accumulating c of the
/// result's dtype in place: the f64 reference of the same rounded inputs,
/// rounded once into the result. Errors are a few units of the result's
/// last place at most: the tensor cores accumulate in f32, in an order of
/// their own, and a sum near a rounding boundary may round either way.
class DeviceGemm16Bit
    : public testing::TestWithParam<std::tuple<DType, bool, bool>> {};

TEST_P(DeviceGemm16Bit, MatchesTheReferenceOfTheRoundedInputs) {
  SKIP_WITHOUT_CUDA_DEVICE();
  auto [dtype, intoF32, transposeB] = GetParam();
  Batch a = Batch(kM, kK, 3, 1).roundedTo(dtype);
  Batch b = Batch(transposeB ? kN : kK, transposeB ? kK : kN, 1, 2)
                .roundedTo(dtype);
  Batch c = Batch(kM, kN, 2, 3);
  if (!intoF32)
    c = c.roundedTo(dtype);
  Batch expected = reference(a, false, b, transposeB, &c, c);
  if (!intoF32)
    expected = expected.roundedTo(dtype);

  DType outType = intoF32 ? DType::F32 : dtype;
  auto upload = [&](const Batch &x, DType as) {
    return as == DType::F32 ? bytesOf(x.values) : halfBytesOf(x.values, as);
  };
  DeviceBlas blas = DeviceBlas::create();
  DeviceBytes deviceA(upload(a, dtype)), deviceB(upload(b, dtype));
  DeviceBytes deviceOut(upload(c, outType));
  DeviceMatrices aOn = a.on(deviceA), bOn = b.on(deviceB);
  aOn.dtype = bOn.dtype = dtype;
  DeviceMatrices out = c.on(deviceOut);
  out.dtype = outType;
  deviceGemm(blas, aOn, false, bOn, transposeB, kAlpha, &out, kBeta, out,
             kBatch, nullptr, "test");
  std::vector<unsigned char> bytes = deviceOut.download();
  std::vector<float> result =
      intoF32 ? floatsOf(bytes) : halfFloatsOf(bytes, dtype);
  // bf16 keeps 8 bits of mantissa, f16 11; in f32, f32 rounding.
  double ulp = intoF32 ? 1e-6 : dtype == DType::BF16 ? 1.0 / 256 : 1.0 / 2048;
  float gap = intoF32 ? kGap
              : dtype == DType::BF16 ? roundToBF16(kGap)
                                     : roundToF16(kGap);
  EXPECT_LT(relativeError(expected, result, gap), 4 * ulp) << dtypeName(dtype);
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, DeviceGemm16Bit,
    testing::Combine(testing::Values(DType::BF16, DType::F16), testing::Bool(),
                     testing::Bool()),
    [](const testing::TestParamInfo<std::tuple<DType, bool, bool>> &info) {
      return std::string(dtypeName(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "IntoF32" : "") +
             (std::get<2>(info.param) ? "BT" : "");
    });

TEST(DeviceGemmTest, WithoutAnInnerDimensionTheResultIsBetaCOrZero) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Batch c(kM, kN, 1, 3);
  Batch out(kM, kN, 2, 0, std::numeric_limits<float>::quiet_NaN());
  DeviceBlas empty; // not needed: nothing is multiplied
  DeviceBytes deviceC(bytesOf(c.values)), deviceOut(bytesOf(out.values));
  DeviceMatrices a{nullptr, kM, 0, 0}, b{nullptr, 0, kN, 0};
  DeviceMatrices cOn = c.on(deviceC);
  deviceGemm(empty, a, false, b, false, kAlpha, &cOn, kBeta, out.on(deviceOut),
             kBatch, nullptr, "test");
  std::vector<float> scaled = floatsOf(deviceOut.download());
  deviceGemm(empty, a, false, b, false, kAlpha, nullptr, kBeta,
             out.on(deviceOut), kBatch, nullptr, "test");
  std::vector<float> zeros = floatsOf(deviceOut.download());
  for (int m = 0; m < kBatch; ++m)
    for (int64_t i = 0; i < kM * kN; ++i) {
      EXPECT_EQ(scaled[m * out.stride + i], kBeta * c.at(m, i));
      EXPECT_EQ(zeros[m * out.stride + i], 0.0f);
    }
  EXPECT_EQ(zeros[kM * kN], kGap);
}

/// Floats whose rounding is hard: ties, NaNs with payloads, infinities,
/// signed zeros, subnormals of f32 and of f16, values beyond f16's range.
std::vector<float> hardFloats() {
  std::vector<uint32_t> bits = {
      0x3f808000u, 0x3f818000u, 0x3f80c000u, 0x7fc00001u, 0xffa12345u,
      0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u, 0x00000001u,
      0x807fffffu, 0x7f7fffffu, 0x477ff000u, 0x477fefffu, 0x33800000u,
      0x33000000u, 0x38800000u, 0x387fe000u, 0xc7800000u, 0x3eaaaaabu};
  std::vector<float> values;
  for (uint32_t b : bits)
    values.push_back(bitsFloat(b));
  for (int i = 0; i < 44; ++i) // and some ordinary ones
    values.push_back(
        std::ldexp(std::sin(1.3f * static_cast<float>(i)), i - 20));
  return values;
}

/// hardFloats() for `batch` members `stride` floats apart, each member's
/// rotated by its index, the gaps kGap.
std::vector<float> hardBatch(int64_t stride) {
  std::vector<float> values = hardFloats(), batch(stride * kBatch, kGap);
  for (int m = 0; m < kBatch; ++m)
    for (size_t i = 0; i < values.size(); ++i)
      batch[m * stride + i] = values[(i + m) % values.size()];
  return batch;
}

TEST(DeviceGemmTest, RoundingMatchesTheHostBitForBit) {
  SKIP_WITHOUT_CUDA_DEVICE();
  int64_t count = static_cast<int64_t>(hardFloats().size()), stride = count + 5;
  for (DType to : {DType::BF16, DType::F16}) {
    std::vector<float> values = hardBatch(stride), expected = values;
    for (int m = 0; m < kBatch; ++m)
      for (int64_t i = 0; i < count; ++i) {
        float &x = expected[m * stride + i];
        x = to == DType::BF16 ? roundToBF16(x) : roundToF16(x);
      }
    DeviceBytes device(bytesOf(values));
    deviceRound(static_cast<float *>(device.data), count, stride, kBatch, to,
                nullptr);
    EXPECT_EQ(device.download(), bytesOf(expected)) << dtypeName(to);
  }
}

TEST(DeviceGemmTest, ACopyMovesEveryMembersBits) {
  SKIP_WITHOUT_CUDA_DEVICE();
  int64_t count = static_cast<int64_t>(hardFloats().size()), stride = count + 3;
  std::vector<float> source = hardBatch(stride);
  std::vector<float> expected(source.size(), kGap);
  for (int m = 0; m < kBatch; ++m)
    std::copy_n(source.begin() + m * stride, count,
                expected.begin() + m * stride);
  DeviceBytes from(bytesOf(source));
  DeviceBytes to(bytesOf(std::vector<float>(source.size(), kGap)));
  deviceCopy({from.data, 1, count, stride}, {to.data, 1, count, stride},
             kBatch, nullptr);
  EXPECT_EQ(to.download(), bytesOf(expected));

  // 16-bit elements too: NaN payloads and all, by their bits.
  for (DType dtype : {DType::BF16, DType::F16}) {
    std::vector<unsigned char> halfSource = halfBytesOf(source, dtype);
    std::vector<unsigned char> halfExpected = halfBytesOf(expected, dtype);
    DeviceBytes halfFrom(halfSource);
    DeviceBytes halfTo(halfBytesOf(std::vector<float>(source.size(), kGap),
                                   dtype));
    deviceCopy({halfFrom.data, count, 1, stride, dtype},
               {halfTo.data, count, 1, stride, dtype}, kBatch, nullptr);
    EXPECT_EQ(halfTo.download(), halfExpected) << dtypeName(dtype);
  }
}

TEST(DeviceGemmTest, AProductACopyAndARoundingReplayFromAGraph) {
  SKIP_WITHOUT_CUDA_DEVICE();
  Batch a(kM, kK, 3, 1), b(kN, kK, 0, 2), c(kM, kN, 2, 3);
  Batch expected = reference(a, false, b, true, &c, c);
  DeviceBlas blas = DeviceBlas::create();
  DeviceBytes deviceA(bytesOf(a.values)), deviceB(bytesOf(b.values));
  DeviceBytes deviceOut(bytesOf(c.values));
  DeviceBytes copy(bytesOf(std::vector<float>(c.values.size(), kGap)));
  float *copied = static_cast<float *>(copy.data);

  // As the executor captures a step: its own stream, thread-local mode.
  cudaStream_t stream = nullptr;
  OPTGEN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                    "test stream");
  OPTGEN_CUDA_CHECK(
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
      "test capture");
  DeviceMatrices out = c.on(deviceOut);
  deviceGemm(blas, a.on(deviceA), false, b.on(deviceB), true, kAlpha, &out,
             kBeta, out, kBatch, stream, "test");
  deviceCopy(out, {copied, kM, kN, c.stride}, kBatch, stream);
  deviceRound(copied, kM * kN, c.stride, kBatch, DType::BF16, stream);
  cudaGraph_t graph = nullptr;
  OPTGEN_CUDA_CHECK(cudaStreamEndCapture(stream, &graph), "test capture");
  cudaGraphExec_t exec = nullptr;
  OPTGEN_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0), "test graph");
  cudaGraphDestroy(graph);
  // Nothing ran while capturing.
  EXPECT_EQ(deviceOut.download(), bytesOf(c.values));
  OPTGEN_CUDA_CHECK(cudaGraphLaunch(exec, stream), "test graph");
  OPTGEN_CUDA_CHECK(cudaStreamSynchronize(stream), "test graph");
  cudaGraphExecDestroy(exec);
  cudaStreamDestroy(stream);

  std::vector<float> result = floatsOf(deviceOut.download());
  EXPECT_LT(relativeError(expected, result), 1e-5);
  std::vector<float> rounded = result;
  for (int m = 0; m < kBatch; ++m)
    for (int64_t i = 0; i < kM * kN; ++i)
      rounded[m * c.stride + i] = roundToBF16(result[m * c.stride + i]);
  for (size_t i = 0; i < rounded.size(); ++i)
    if (static_cast<int64_t>(i % c.stride) >= kM * kN)
      rounded[i] = kGap; // the copy's gaps are its own
  EXPECT_EQ(copy.download(), bytesOf(rounded));
}

// What is checked before any CUDA call: these run everywhere.

/// Addresses that stand for device memory: never touched.
std::vector<float> fakeMemory(4096);
float *fake(int64_t at) { return fakeMemory.data() + at; }

/// deviceGemm's error for a product of 3 members of a @ op(b) (+ c) into
/// out, with an empty DeviceBlas (the error when the checks pass).
std::string gemmError(const DeviceMatrices &a, const DeviceMatrices &b,
                      bool transposeB, const DeviceMatrices *c,
                      const DeviceMatrices &out, int batch = kBatch) {
  try {
    deviceGemm(DeviceBlas(), a, false, b, transposeB, 1.0f, c, 1.0f, out, batch,
               nullptr, "test");
  } catch (const Error &error) {
    return error.what();
  }
  return "(no error)";
}

TEST(DeviceGemmTest, ShapesThatDoNotMultiplyAreErrors) {
  DeviceMatrices a{fake(0), 5, 7, 35}, b{fake(200), 7, 4, 28};
  DeviceMatrices out{fake(400), 5, 4, 20};
  EXPECT_EQ(gemmError(a, b, true, nullptr, out),
            "test: matrix product of 5x7 and 4x7 into 5x4");
  DeviceMatrices wide{fake(400), 5, 5, 25};
  EXPECT_EQ(gemmError(a, b, false, nullptr, wide),
            "test: matrix product of 5x7 and 7x4 into 5x5");
  DeviceMatrices c{fake(600), 4, 5, 20};
  EXPECT_EQ(gemmError(a, b, false, &c, out),
            "test: matrix product 5x4 accumulating 4x5");
  EXPECT_EQ(gemmError(a, b, false, nullptr, out, -1),
            "test: a batch of -1 matrix products");
  DeviceMatrices negative{fake(0), 5, -7, 35};
  EXPECT_EQ(gemmError(negative, b, false, nullptr, out),
            "test: matrices of 5x-7, 35 elements apart");
}

TEST(DeviceGemmTest, DtypesThatDoNotMultiplyAreErrors) {
  DeviceMatrices a{fake(0), 5, 7, 35, DType::BF16};
  DeviceMatrices b{fake(200), 7, 4, 28, DType::F32};
  DeviceMatrices out{fake(400), 5, 4, 20, DType::F32};
  const std::string rule = ": the operands hold one of F32, BF16 and F16, the "
                           "result theirs or F32, and what it accumulates the "
                           "result's";
  EXPECT_EQ(gemmError(a, b, false, nullptr, out),
            "test: a product of BF16 and F32 matrices into F32" + rule);
  b.dtype = DType::BF16;
  DeviceMatrices halfOut{fake(400), 5, 4, 20, DType::F16};
  EXPECT_EQ(gemmError(a, b, false, nullptr, halfOut),
            "test: a product of BF16 and BF16 matrices into F16" + rule);
  DeviceMatrices c{fake(600), 5, 4, 20, DType::BF16};
  EXPECT_EQ(gemmError(a, b, false, &c, out),
            "test: a product of BF16 and BF16 matrices into F32 accumulating "
            "BF16" +
                rule);
  DeviceMatrices doubles{fake(0), 5, 7, 35, DType::F64};
  EXPECT_EQ(gemmError(doubles, doubles, false, nullptr, out),
            "test: a product of F64 and F64 matrices into F32" + rule);
  // bf16 into bf16 or f32 passes the checks (the empty DeviceBlas stops it).
  const std::string passed = "test: 3 matrix products of 5x7 and 7x4 into "
                             "5x4: no cuBLASLt handle (an empty DeviceBlas)";
  EXPECT_EQ(gemmError(a, b, false, nullptr, out), passed);
  DeviceMatrices bfOut{fake(400), 5, 4, 20, DType::BF16};
  EXPECT_EQ(gemmError(a, b, false, &c, bfOut), passed);
}

TEST(DeviceGemmTest, AResultThatOverlapsWhatItIsComputedFromIsAnError) {
  DeviceMatrices a{fake(0), 5, 7, 35}, b{fake(200), 7, 4, 28};
  const std::string product = "test: 3 matrix products of 5x7 and 7x4 into 5x4";
  EXPECT_EQ(gemmError(a, b, false, nullptr, {fake(400), 5, 4, 19}),
            product + ", 19 elements apart: results overlap");
  EXPECT_EQ(gemmError(a, b, false, nullptr, {fake(0), 5, 4, 20}),
            product + ": the result overlaps an operand it is computed from");
  // b's last element is at 283.
  EXPECT_EQ(gemmError(a, b, false, nullptr, {fake(283), 5, 4, 20}),
            product + ": the result overlaps an operand it is computed from");
  DeviceMatrices out{fake(400), 5, 4, 20};
  DeviceMatrices otherStride{fake(400), 5, 4, 21};
  EXPECT_EQ(gemmError(a, b, false, &otherStride, out),
            product + ": the result overlaps the matrices it accumulates (it "
                      "may be their memory, at their stride)");
}

TEST(DeviceGemmTest, MembersInterleavedInOneWorkspacePassTheChecks) {
  // As a launch lays out its workspace: a member's matrices side by side,
  // the members 128 floats apart. The checks pass; the empty DeviceBlas
  // stops the product before cuBLASLt.
  const std::string passed = "test: 3 matrix products of 5x7 and 7x4 into "
                             "5x4: no cuBLASLt handle (an empty DeviceBlas)";
  DeviceMatrices a{fake(0), 5, 7, 128}, b{fake(35), 7, 4, 128};
  DeviceMatrices out{fake(63), 5, 4, 128};
  EXPECT_EQ(gemmError(a, b, false, nullptr, out), passed);
  EXPECT_EQ(gemmError(a, b, false, &out, out), passed);
  DeviceMatrices c{fake(83), 5, 4, 128};
  EXPECT_EQ(gemmError(a, b, false, &c, out), passed);
  // One float too far: the result's last element is the next operand's
  // first.
  DeviceMatrices overlapping{fake(64), 5, 4, 128};
  EXPECT_EQ(gemmError(a, b, false, &c, overlapping),
            "test: 3 matrix products of 5x7 and 7x4 into 5x4: the result "
            "overlaps the matrices it accumulates (it may be their memory, "
            "at their stride)");
}

TEST(DeviceGemmTest, CopiesAndRoundingsOfOverlappingMembersAreErrors) {
  try {
    deviceCopy({fake(0), 2, 5, 8}, {fake(100), 2, 5, 10}, 3, nullptr);
    FAIL() << "no Error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "copying 3 members of 10 F32 elements, 8 apart: members must be "
              "distinct memory, none of a negative size");
  }
  try {
    deviceCopy({fake(0), 2, 5, 10}, {fake(100), 2, 5, 10, DType::BF16}, 3,
               nullptr);
    FAIL() << "no Error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "copying 2x5 F32 matrices into 2x5 BF16 ones: a copy keeps the "
              "shape and the dtype (F32, BF16 or F16)");
  }
  try {
    deviceRound(fake(0), 10, 12, 3, DType::F32, nullptr);
    FAIL() << "no Error";
  } catch (const Error &error) {
    EXPECT_EQ(std::string(error.what()),
              "rounding 3 members of 10 F32 elements, 12 apart to F32: floats "
              "round to BF16 or F16");
  }
}

} // namespace
