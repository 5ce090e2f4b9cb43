//===- Float16Test.cpp - bf16 and f16 rounding ----------------------------===//
//
// Known values, ties to even, NaN, infinity, overflow and f16 subnormals,
// then every 16-bit pattern and a million random floats against a reference
// that picks the nearest neighbour in double arithmetic.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/Float16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace optgen::runtime;

namespace {

bool isNaNBF16(uint16_t bits) {
  return (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu) != 0;
}

bool isNaNF16(uint16_t bits) {
  return (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0;
}

/// The reference rounding: of the two representable neighbours `low` and
/// `high` (as doubles, with their bit patterns), the nearer; on a tie the
/// one with an even last bit.
uint16_t nearest(double x, double low, uint16_t lowBits, double high,
                 uint16_t highBits) {
  double toLow = x - low, toHigh = high - x;
  if (toLow < toHigh)
    return lowBits;
  if (toHigh < toLow)
    return highBits;
  return (lowBits & 1u) ? highBits : lowBits;
}

} // namespace

TEST(BF16, KnownValues) {
  EXPECT_EQ(roundToBF16(0.9f), 0.8984375f);
  EXPECT_EQ(toBF16Bits(0.9f), 0x3f66);
  EXPECT_EQ(toBF16Bits(1.0f), 0x3f80);
  EXPECT_EQ(toBF16Bits(-2.0f), 0xc000);
  EXPECT_EQ(toBF16Bits(0.0f), 0x0000);
  EXPECT_EQ(toBF16Bits(-0.0f), 0x8000);
  EXPECT_EQ(roundToBF16(0.95f), 0.94921875f);
  EXPECT_EQ(fromBF16Bits(0x3f80), 1.0f);
}

TEST(BF16, TiesToEven) {
  // 1 + 2^-8 lies halfway between 1 (even) and 1 + 2^-7 (odd).
  EXPECT_EQ(toBF16Bits(bitsFloat(0x3f808000u)), 0x3f80);
  // Halfway between 0x3f81 (odd) and 0x3f82 (even).
  EXPECT_EQ(toBF16Bits(bitsFloat(0x3f818000u)), 0x3f82);
  // Just above and below halfway.
  EXPECT_EQ(toBF16Bits(bitsFloat(0x3f808001u)), 0x3f81);
  EXPECT_EQ(toBF16Bits(bitsFloat(0x3f817fffu)), 0x3f81);
  // Negative ties behave symmetrically.
  EXPECT_EQ(toBF16Bits(bitsFloat(0xbf808000u)), 0xbf80);
  EXPECT_EQ(toBF16Bits(bitsFloat(0xbf818000u)), 0xbf82);
}

TEST(BF16, NaNInfinityAndOverflow) {
  EXPECT_TRUE(isNaNBF16(toBF16Bits(std::numeric_limits<float>::quiet_NaN())));
  // A signalling NaN whose payload lies only in the low 16 bits must not
  // truncate to infinity.
  EXPECT_TRUE(isNaNBF16(toBF16Bits(bitsFloat(0x7f800001u))));
  EXPECT_TRUE(isNaNBF16(toBF16Bits(bitsFloat(0xff800001u))));
  EXPECT_TRUE(std::isnan(roundToBF16(std::nanf(""))));
  EXPECT_EQ(toBF16Bits(INFINITY), 0x7f80);
  EXPECT_EQ(toBF16Bits(-INFINITY), 0xff80);
  // FLT_MAX lies above the largest bf16 by more than half a step.
  EXPECT_EQ(toBF16Bits(FLT_MAX), 0x7f80);
  EXPECT_EQ(toBF16Bits(-FLT_MAX), 0xff80);
  // The largest finite bf16 stays finite.
  EXPECT_EQ(toBF16Bits(fromBF16Bits(0x7f7f)), 0x7f7f);
}

TEST(BF16, EveryPatternRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    uint16_t pattern = static_cast<uint16_t>(bits);
    if (isNaNBF16(pattern))
      EXPECT_TRUE(isNaNBF16(toBF16Bits(fromBF16Bits(pattern))));
    else
      EXPECT_EQ(toBF16Bits(fromBF16Bits(pattern)), pattern) << bits;
  }
}

TEST(BF16, RandomFloatsRoundToNearestEven) {
  std::mt19937 random(1234);
  for (int i = 0; i < 1000000; ++i) {
    float x = bitsFloat(static_cast<uint32_t>(random()));
    if (!std::isfinite(x))
      continue;
    uint32_t bits = floatBits(x);
    uint16_t low = static_cast<uint16_t>(bits >> 16); // toward zero
    uint16_t high = static_cast<uint16_t>(low + 1);   // away from zero
    double lowValue = std::fabs(static_cast<double>(fromBF16Bits(low)));
    double highValue = (high & 0x7fffu) == 0x7f80u
                           ? std::ldexp(1.0, 128) // the overflow threshold
                           : std::fabs(static_cast<double>(fromBF16Bits(high)));
    uint16_t expected = nearest(std::fabs(static_cast<double>(x)), lowValue,
                                low, highValue, high);
    ASSERT_EQ(toBF16Bits(x), expected) << x;
  }
}

TEST(F16, KnownValues) {
  EXPECT_EQ(toF16Bits(1.0f), 0x3c00);
  EXPECT_EQ(toF16Bits(-2.0f), 0xc000);
  EXPECT_EQ(toF16Bits(0.1f), 0x2e66);
  EXPECT_EQ(fromF16Bits(0x2e66), 0.0999755859375f);
  EXPECT_EQ(toF16Bits(65504.0f), 0x7bff);
  EXPECT_EQ(toF16Bits(-0.0f), 0x8000);
}

TEST(F16, Subnormals) {
  const float smallest = std::ldexp(1.0f, -24);
  EXPECT_EQ(toF16Bits(smallest), 0x0001);
  EXPECT_EQ(fromF16Bits(0x0001), smallest);
  EXPECT_EQ(toF16Bits(-smallest), 0x8001);
  EXPECT_EQ(fromF16Bits(0x03ff), 1023 * smallest);
  EXPECT_EQ(toF16Bits(1023 * smallest), 0x03ff);
  EXPECT_EQ(toF16Bits(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  // Ties to even among subnormals: half the smallest rounds to 0, one and a
  // half to 2, two and a half to 2.
  EXPECT_EQ(toF16Bits(0.5f * smallest), 0x0000);
  EXPECT_EQ(toF16Bits(1.5f * smallest), 0x0002);
  EXPECT_EQ(toF16Bits(2.5f * smallest), 0x0002);
  EXPECT_EQ(toF16Bits(0.50001f * smallest), 0x0001);
  // Far below: zero, keeping the sign.
  EXPECT_EQ(toF16Bits(1e-30f), 0x0000);
  EXPECT_EQ(toF16Bits(-1e-30f), 0x8000);
}

TEST(F16, NaNInfinityAndOverflow) {
  EXPECT_TRUE(isNaNF16(toF16Bits(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(isNaNF16(toF16Bits(bitsFloat(0x7f800001u))));
  EXPECT_TRUE(std::isnan(fromF16Bits(0x7e00)));
  EXPECT_EQ(toF16Bits(INFINITY), 0x7c00);
  EXPECT_EQ(toF16Bits(-INFINITY), 0xfc00);
  EXPECT_EQ(fromF16Bits(0x7c00), INFINITY);
  // 65520 lies halfway between 65504 (odd) and the overflow threshold.
  EXPECT_EQ(toF16Bits(65519.0f), 0x7bff);
  EXPECT_EQ(toF16Bits(65520.0f), 0x7c00);
  EXPECT_EQ(toF16Bits(1e6f), 0x7c00);
  EXPECT_EQ(toF16Bits(-1e6f), 0xfc00);
  EXPECT_EQ(toF16Bits(FLT_MAX), 0x7c00);
}

TEST(F16, EveryPatternRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    uint16_t pattern = static_cast<uint16_t>(bits);
    if (isNaNF16(pattern))
      EXPECT_TRUE(isNaNF16(toF16Bits(fromF16Bits(pattern))));
    else
      EXPECT_EQ(toF16Bits(fromF16Bits(pattern)), pattern) << bits;
  }
}

TEST(F16, RandomFloatsRoundToNearestEven) {
  // The non-negative finite f16 values in order, then 2^16, the next value
  // were the exponent unbounded, standing in for infinity (IEEE 754 rounds
  // to infinity what would round to it).
  std::vector<double> values;
  for (uint32_t bits = 0; bits < 0x7c00; ++bits)
    values.push_back(fromF16Bits(static_cast<uint16_t>(bits)));
  values.push_back(65536.0);
  std::mt19937 random(5678);
  std::uniform_real_distribution<float> exponent(-27.0f, 17.0f);
  for (int i = 0; i < 1000000; ++i) {
    float x = std::exp2(exponent(random));
    if (random() & 1)
      x = -x;
    double magnitude = std::fabs(static_cast<double>(x));
    uint16_t sign = x < 0 ? 0x8000 : 0;
    uint16_t expected;
    if (magnitude >= 65520.0) {
      expected = 0x7c00;
    } else {
      auto above = std::upper_bound(values.begin(), values.end(), magnitude);
      uint16_t high = static_cast<uint16_t>(above - values.begin());
      uint16_t low = static_cast<uint16_t>(high - 1);
      // Past 65504 the neighbour above is 2^16: index 0x7c00, the bits of
      // infinity.
      expected = nearest(magnitude, values[low], low, values[high], high);
    }
    ASSERT_EQ(toF16Bits(x), static_cast<uint16_t>(sign | expected)) << x;
  }
}
