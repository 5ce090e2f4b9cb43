//===- stream_kernels.cpp - Memory-bandwidth kernels for optgen-bench -----===//
//
// Each kernel is a function of its own with __restrict pointers and a local
// trip count, so that the compiler vectorises it (a lambda reading its arrays
// through captured references does not: the stores might alias the captured
// pointers). A static schedule, as the generated code's `omp parallel for`
// loops use, so the same threads touch the same pages every time, first
// touch included.
//
//===----------------------------------------------------------------------===//

#include "stream_kernels.h"

namespace optgen_bench {

void kernelFill(int64_t n, float *__restrict a, float *__restrict b,
                float *__restrict c, float *__restrict d) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 1.0f;
    b[i] = 2.0f;
    c[i] = 0.5f;
    d[i] = 0.25f;
  }
}

void kernelCopy(int64_t n, float *__restrict a, const float *__restrict b) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    a[i] = b[i];
}

void kernelTriad(int64_t n, float *__restrict a, const float *__restrict b,
                 const float *__restrict c) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    a[i] = b[i] + 0.5f * c[i];
}

void kernelUpdate(int64_t n, float *__restrict a, const float *__restrict b) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    a[i] = a[i] * 0.999f + 0.001f * b[i];
}

void kernelAdamwLike(int64_t n, float *__restrict p, const float *__restrict g,
                     float *__restrict m, float *__restrict v) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float mi = m[i] * 0.9f + 0.1f * g[i];
    float vi = v[i] * 0.99f + 0.01f * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] - 0.001f * mi * vi;
  }
}

} // namespace optgen_bench
