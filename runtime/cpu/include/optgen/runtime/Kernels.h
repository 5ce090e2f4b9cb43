//===- Kernels.h - What generated CPU code calls ----------------*- C++ -*-===//
//
// Generated rule code works on Tiles, 2-D views of float data (a vector or a
// parameter of any rank is one row), and calls these helpers for matrix
// products (BLAS), besides the element math it shares with generated CUDA
// code (ElementMath.h).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_KERNELS_H
#define OPTGEN_RUNTIME_KERNELS_H

#include "optgen/runtime/ElementMath.h"
#include "optgen/runtime/Float16.h"
#include "optgen/runtime/Tile.h"

#include <cmath>
#include <cstdint>
#include <limits>

/// Generated loops are parallel when built with OpenMP, and plain loops
/// (without unknown-pragma warnings) when not:
///   OPTGEN_PARALLEL_FOR(if (n >= 65536) reduction(+ : sum))
/// and inner loops are vectorised (their reductions reassociated) likewise:
///   OPTGEN_SIMD(reduction(+ : sum))
#define OPTGEN_PRAGMA(text) _Pragma(#text)
#ifdef _OPENMP
#define OPTGEN_PARALLEL_FOR(...) OPTGEN_PRAGMA(omp parallel for __VA_ARGS__)
#define OPTGEN_SIMD(...) OPTGEN_PRAGMA(omp simd __VA_ARGS__)
#else
#define OPTGEN_PARALLEL_FOR(...)
#define OPTGEN_SIMD(...)
#endif

/// A step function compiled twice, for the baseline instruction set and for
/// AVX2, the better chosen when the program loads (GCC's target_clones, an
/// ifunc: ELF and glibc), so that its loops use 8-wide vectors where the
/// CPU has them whatever flags built it. Elsewhere, one baseline version;
/// also under ThreadSanitizer, whose instrumented ifunc resolver runs (and
/// faults) before its runtime is set up.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&     \
    defined(__ELF__) && defined(__GLIBC__) && !defined(__SANITIZE_THREAD__)
#define OPTGEN_STEP_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define OPTGEN_STEP_CLONES
#endif

namespace optgen::runtime {

/// The two sides of lerp() (ElementMath.h), for loops whose weight is the
/// same at every element and that test it once: lerp(start, end, weight) is
/// lerpLower(...) for weight < 0.5 and lerpUpper(...) otherwise, bit for
/// bit.
inline float lerpLower(float start, float end, float weight) {
  return start + weight * (end - start);
}
inline float lerpUpper(float start, float end, float weight) {
  return end - (end - start) * (1.0f - weight);
}

/// out = alpha * op(a) @ op(b) + beta * c, op transposing when asked,
/// accumulating in f32 (BLAS sgemm); without `c` (null) beta is unused.
/// With `symmetric` the product is op(a) @ op(a)^T of one operand and `c`
/// is symmetric: only the upper triangle is computed (ssyrk, half the
/// multiply-adds) and then mirrored (in cache blocks). `out` holds the
/// product's rows x cols and may be `c`'s memory, never a's or b's; when it
/// is not, beta * c is formed while copying c (the f32 products BLAS would
/// form, without a pass of its own over out).
void gemm(const Tile &a, bool transposeA, const Tile &b, bool transposeB,
          float alpha, const Tile *c, float beta, bool symmetric, Tile &out);

/// dst = src^T; dst must hold src.cols x src.rows.
void transpose(const Tile &src, Tile &dst);

/// Rounds every element of `tile` to bf16 (or f16) in place.
void roundTileToBF16(Tile &tile);
void roundTileToF16(Tile &tile);

/// Copies src into dst (same size) unless they are the same memory.
void copyTile(const Tile &src, float *dst);

/// Throws an Error naming `what` unless a tensor of rows x cols broadcasts
/// to the iteration space spaceRows x spaceCols.
void checkBroadcast(const char *what, int64_t rows, int64_t cols,
                    int64_t spaceRows, int64_t spaceCols);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_KERNELS_H
