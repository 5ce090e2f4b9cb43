//===- Tile.h - A 2-D view of float data ------------------------*- C++ -*-===//
//
// Generated rule code sees every tensor as a Tile: a matrix as itself, a
// vector or a parameter of any rank as one row. Host code of every target
// (state shapes, workspace layouts) and the CPU target's rule code use it.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_TILE_H
#define OPTGEN_RUNTIME_TILE_H

#include <cstdint>

namespace optgen::runtime {

/// A row-major rows x cols block of floats. Tensors of bf16 or f16 hold
/// values already rounded to that type; masks hold 0 and 1.
struct Tile {
  float *data = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t size() const { return rows * cols; }
};

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_TILE_H
