//===- KernelsTest.cpp - The CPU runtime's matrix products ----------------===//
//
// gemm() against a double-precision product: accumulating `c` with beta
// (out of place, as generated code calls it, and in place), symmetric
// products (syrk, the upper triangle mirrored, in blocks: sizes around the
// block size), and an empty inner dimension.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

using namespace optgen::runtime;

namespace {

std::vector<float> filled(int64_t count, uint32_t seed) {
  std::vector<float> values(static_cast<size_t>(count));
  uint32_t state = seed * 2654435761u + 1;
  for (float &v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(state >> 8) % 2001 - 1000) /
        1000.0f;
  }
  return values;
}

/// alpha * op(a) @ op(b) + beta * c, in double.
std::vector<double> reference(const Tile &a, bool ta, const Tile &b, bool tb,
                              float alpha, const std::vector<float> *c,
                              float beta) {
  int64_t m = ta ? a.cols : a.rows, k = ta ? a.rows : a.cols;
  int64_t n = tb ? b.rows : b.cols;
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < k; ++l) {
        double x = ta ? a.data[l * a.cols + i] : a.data[i * a.cols + l];
        double y = tb ? b.data[j * b.cols + l] : b.data[l * b.cols + j];
        sum += x * y;
      }
      out[i * n + j] = alpha * sum + (c ? beta * (*c)[i * n + j] : 0.0);
    }
  return out;
}

void expectClose(const std::vector<double> &expected, const Tile &out) {
  ASSERT_EQ(static_cast<int64_t>(expected.size()), out.size());
  for (int64_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out.data[i], expected[i], 1e-4 * (1 + std::fabs(expected[i])))
        << "at " << i;
}

TEST(Gemm, AccumulatesOutOfPlaceAndInPlace) {
  for (bool ta : {false, true}) {
    int64_t m = 37, k = 53, n = 29;
    std::vector<float> av = filled(m * k, 1), bv = filled(k * n, 2),
                       cv = filled(m * n, 3), outv(m * n, 123.0f);
    Tile a{av.data(), ta ? k : m, ta ? m : k}, b{bv.data(), k, n};
    Tile c{cv.data(), m, n}, out{outv.data(), m, n};
    std::vector<double> expected = reference(a, ta, b, false, 0.5f, &cv, -1.5f);
    gemm(a, ta, b, false, 0.5f, &c, -1.5f, false, out);
    expectClose(expected, out);
    // c untouched; then in place.
    EXPECT_EQ(cv, filled(m * n, 3));
    gemm(a, ta, b, false, 0.5f, &c, -1.5f, false, c);
    expectClose(expected, c);
  }
}

TEST(Gemm, BetaZeroIgnoresWhatOutHeld) {
  int64_t m = 5, k = 7, n = 6;
  std::vector<float> av = filled(m * k, 4), bv = filled(k * n, 5),
                     cv = filled(m * n, 6), outv(m * n, NAN);
  Tile a{av.data(), m, k}, b{bv.data(), k, n}, c{cv.data(), m, n};
  Tile out{outv.data(), m, n};
  gemm(a, false, b, false, 2.0f, &c, 0.0f, false, out);
  expectClose(reference(a, false, b, false, 2.0f, &cv, 0.0f), out);
}

TEST(Gemm, SymmetricProductsAreMirroredExactly) {
  // Around the mirror's block of 32, both Gram products, with and without
  // a symmetric c.
  for (int64_t m : {1, 31, 32, 33, 70}) {
    for (bool ta : {false, true}) {
      int64_t k = 19;
      std::vector<float> xv = filled(m * k, 7 + m);
      Tile x{xv.data(), ta ? k : m, ta ? m : k};
      std::vector<float> gramv(m * m, NAN);
      Tile gram{gramv.data(), m, m};
      gemm(x, ta, x, !ta, 1.0f, nullptr, 0.0f, true, gram);
      expectClose(reference(x, ta, x, !ta, 1.0f, nullptr, 0.0f), gram);
      // gram @ gram^T + 0.25 gram, out of place and in place.
      std::vector<float> outv(m * m, NAN);
      Tile out{outv.data(), m, m};
      std::vector<double> expected =
          reference(gram, false, gram, true, -2.0f, &gramv, 0.25f);
      gemm(gram, false, gram, true, -2.0f, &gram, 0.25f, true, out);
      expectClose(expected, out);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j)
          ASSERT_EQ(out.data[i * m + j], out.data[j * m + i]);
      std::vector<float> copyv = gramv;
      Tile copy{copyv.data(), m, m};
      gemm(gram, false, gram, true, -2.0f, &copy, 0.25f, true, copy);
      EXPECT_EQ(copyv, outv);
    }
  }
}

TEST(Gemm, EmptyInnerDimensionScalesC) {
  std::vector<float> av(1), cv = filled(12, 8), outv(12, NAN);
  Tile a{av.data(), 3, 0}, b{av.data(), 0, 4}, c{cv.data(), 3, 4};
  Tile out{outv.data(), 3, 4};
  gemm(a, false, b, false, 1.0f, &c, 3.0f, false, out);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(outv[i], 3.0f * cv[i]);
  gemm(a, false, b, false, 1.0f, nullptr, 3.0f, false, out);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(outv[i], 0.0f);
}

} // namespace

namespace {

TEST(Lerp, EachSideIsLerpWhereItsWeightsAre) {
  std::vector<float> ends = filled(2000, 9);
  const float weights[] = {0.0f,  1e-8f, 0.05f,  0.1f,   0.4999999f,
                           0.5f,  0.5000001f, 0.9f, 0.95f, 0.999f,
                           1.0f,  -0.5f,  1.5f,   NAN};
  for (float w : weights)
    for (size_t i = 0; i + 1 < ends.size(); i += 2) {
      float start = ends[i] * 1e3f, end = ends[i + 1];
      float expected = lerp(start, end, w);
      float got = w < 0.5f ? lerpLower(start, end, w) : lerpUpper(start, end, w);
      if (std::isnan(expected))
        EXPECT_TRUE(std::isnan(got));
      else
        ASSERT_EQ(got, expected) << "weight " << w;
    }
}

} // namespace
