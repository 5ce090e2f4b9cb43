//===- Kernels.cpp - What generated CPU code calls ------------------------===//

#include "optgen/runtime/Kernels.h"

#include "optgen/runtime/Error.h"

#ifndef OPTGEN_NO_BLAS
#include <cblas.h>
#endif

#ifdef __SSE__
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <string>

namespace optgen::runtime {

namespace {

#ifndef OPTGEN_NO_BLAS // what the BLAS products need around them
/// Copies the upper triangle of square `tile` into its lower one: 4 x 4
/// blocks transposed in registers where SSE is there, within 32 x 32 blocks
/// so that what the lower rows read stays in the L1 cache.
void mirrorUpper(Tile &tile) {
  constexpr int64_t kBlock = 32;
  const int64_t n = tile.rows;
  float *data = tile.data;
  for (int64_t ib = 0; ib < n; ib += kBlock) {
    int64_t iEnd = std::min(ib + kBlock, n);
    for (int64_t jb = 0; jb <= ib; jb += kBlock) {
      int64_t jEnd = std::min(jb + kBlock, iEnd);
      int64_t i = ib;
#ifdef __SSE__
      // Row quads i..i+3 below the diagonal: columns j < i in quads.
      for (; i + 4 <= iEnd; i += 4) {
        int64_t j = jb;
        for (; j + 4 <= std::min(jEnd, i); j += 4) {
          __m128 r0 = _mm_loadu_ps(data + (j + 0) * n + i);
          __m128 r1 = _mm_loadu_ps(data + (j + 1) * n + i);
          __m128 r2 = _mm_loadu_ps(data + (j + 2) * n + i);
          __m128 r3 = _mm_loadu_ps(data + (j + 3) * n + i);
          _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
          _mm_storeu_ps(data + (i + 0) * n + j, r0);
          _mm_storeu_ps(data + (i + 1) * n + j, r1);
          _mm_storeu_ps(data + (i + 2) * n + j, r2);
          _mm_storeu_ps(data + (i + 3) * n + j, r3);
        }
        // The rest of each row (the diagonal quad).
        for (int64_t r = i; r < i + 4; ++r)
          for (int64_t c = j; c < std::min(jEnd, r); ++c)
            data[r * n + c] = data[c * n + r];
      }
#endif
      for (; i < iEnd; ++i)
        for (int64_t j = jb; j < std::min(jEnd, i); ++j)
          data[i * n + j] = data[j * n + i];
    }
  }
}

/// to = beta * from over rows x cols (only the upper triangle when
/// `upper`): before a BLAS product that accumulates.
OPTGEN_STEP_CLONES void scaledCopy(const float *from, float *to, int64_t rows,
                                   int64_t cols, float beta, bool upper) {
  if (upper) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = i; j < cols; ++j)
        to[i * cols + j] = beta * from[i * cols + j];
    return;
  }
  for (int64_t i = 0; i < rows * cols; ++i)
    to[i] = beta * from[i];
}
#endif

} // namespace

void gemm(const Tile &a, bool transposeA, const Tile &b, bool transposeB,
          float alpha, const Tile *c, float beta, bool symmetric, Tile &out) {
  int64_t m = transposeA ? a.cols : a.rows;
  int64_t k = transposeA ? a.rows : a.cols;
  int64_t kb = transposeB ? b.cols : b.rows;
  int64_t n = transposeB ? b.rows : b.cols;
  auto shape = [](int64_t rows, int64_t cols) {
    return std::to_string(rows) + "x" + std::to_string(cols);
  };
  if (k != kb || out.rows != m || out.cols != n)
    throw Error("matrix product of " + shape(m, k) + " and " + shape(kb, n) +
                " into " + shape(out.rows, out.cols));
  if (c && (c->rows != m || c->cols != n))
    throw Error("matrix product " + shape(m, n) + " accumulating " +
                shape(c->rows, c->cols));
  if (symmetric && (a.data != b.data || transposeA == transposeB))
    throw Error("a symmetric product multiplies one matrix by its transpose");
  if (m == 0 || n == 0)
    return;
  if (!c)
    beta = 0.0f;
  if (k == 0) {
    for (int64_t i = 0; i < out.size(); ++i)
      out.data[i] = c ? beta * c->data[i] : 0.0f;
    return;
  }
#ifdef OPTGEN_NO_BLAS
  static_cast<void>(alpha);
  static_cast<void>(beta);
  throw Error("matrix product of " + shape(m, k) + " and " + shape(kb, n) +
              ": this runtime was built without a BLAS (OPTGEN_RUNTIME_BLAS "
              "off)");
#else
  if (c && c->data != out.data && beta != 0.0f) {
    // out = beta * c in the copy, then BLAS accumulates with beta = 1 (no
    // pass of its own to scale out): the same f32 products as BLAS's
    // scaling, one pass fewer. A symmetric product reads and writes only
    // the upper triangle.
    scaledCopy(c->data, out.data, m, n, beta, symmetric);
    beta = 1.0f;
  }
  if (!symmetric) {
    cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
                transposeB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), alpha, a.data,
                static_cast<int>(a.cols), b.data, static_cast<int>(b.cols),
                beta, out.data, static_cast<int>(out.cols));
    return;
  }
  // op(a) @ op(a)^T: a @ a^T is syrk's NoTrans, a^T @ a its Trans.
  cblas_ssyrk(CblasRowMajor, CblasUpper, transposeA ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(k), alpha, a.data,
              static_cast<int>(a.cols), beta, out.data,
              static_cast<int>(out.cols));
  mirrorUpper(out);
#endif
}

void transpose(const Tile &src, Tile &dst) {
  if (dst.rows != src.cols || dst.cols != src.rows)
    throw Error("transpose of " + std::to_string(src.rows) + "x" +
                std::to_string(src.cols) + " into " +
                std::to_string(dst.rows) + "x" + std::to_string(dst.cols));
  for (int64_t i = 0; i < src.rows; ++i)
    for (int64_t j = 0; j < src.cols; ++j)
      dst.data[j * dst.cols + i] = src.data[i * src.cols + j];
}

void roundTileToBF16(Tile &tile) {
  for (int64_t i = 0; i < tile.size(); ++i)
    tile.data[i] = roundToBF16(tile.data[i]);
}

void roundTileToF16(Tile &tile) {
  for (int64_t i = 0; i < tile.size(); ++i)
    tile.data[i] = roundToF16(tile.data[i]);
}

void copyTile(const Tile &src, float *dst) {
  if (src.data != dst && src.size() > 0)
    std::memcpy(dst, src.data, static_cast<size_t>(src.size()) * sizeof(float));
}

void checkBroadcast(const char *what, int64_t rows, int64_t cols,
                    int64_t spaceRows, int64_t spaceCols) {
  if ((rows == 1 || rows == spaceRows) && (cols == 1 || cols == spaceCols))
    return;
  throw Error(std::string("'") + what + "' of shape [" + std::to_string(rows) +
              ", " + std::to_string(cols) + "] does not broadcast to [" +
              std::to_string(spaceRows) + ", " + std::to_string(spaceCols) +
              "]");
}

} // namespace optgen::runtime
