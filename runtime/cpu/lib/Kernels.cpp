//===- Kernels.cpp - What generated CPU code calls ------------------------===//

#include "optgen/runtime/Kernels.h"

#include "optgen/runtime/Error.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace optgen::runtime {

void matmul(const Tile &a, bool transposeA, const Tile &b, bool transposeB,
            Tile &c) {
  int64_t m = transposeA ? a.cols : a.rows;
  int64_t k = transposeA ? a.rows : a.cols;
  int64_t kb = transposeB ? b.cols : b.rows;
  int64_t n = transposeB ? b.rows : b.cols;
  if (k != kb || c.rows != m || c.cols != n)
    throw Error("matrix product of " + std::to_string(m) + "x" +
                std::to_string(k) + " and " + std::to_string(kb) + "x" +
                std::to_string(n) + " into " + std::to_string(c.rows) + "x" +
                std::to_string(c.cols));
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    std::fill(c.data, c.data + c.size(), 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a.data,
              static_cast<int>(a.cols), b.data, static_cast<int>(b.cols), 0.0f,
              c.data, static_cast<int>(c.cols));
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
