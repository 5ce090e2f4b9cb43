//===- ElementMath.h - Per-element math of generated code -------*- C++ -*-===//
//
// The element functions whose exact form must match PyTorch's (lerp,
// NaN-propagating min/max, sign), one implementation that generated CPU
// code and generated CUDA kernels both call: on the host as inline
// functions, in device code as __device__ ones.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_ELEMENTMATH_H
#define OPTGEN_RUNTIME_ELEMENTMATH_H

#include <cstdint>

/// Marks a function callable from host and device code when nvcc compiles
/// it, and a plain inline function otherwise.
#ifdef __CUDACC__
#define OPTGEN_HOST_DEVICE __host__ __device__
#else
#define OPTGEN_HOST_DEVICE
#endif

namespace optgen::runtime {

/// torch.lerp's formula, exact at both ends: start + weight * (end - start)
/// for weight < 0.5, else end - (end - start) * (1 - weight).
OPTGEN_HOST_DEVICE inline float lerp(float start, float end, float weight) {
  return weight < 0.5f ? start + weight * (end - start)
                       : end - (end - start) * (1.0f - weight);
}

/// torch.maximum / torch.minimum: NaN if either is NaN (x != x: NaN alone
/// compares unequal to itself, on host and device alike).
OPTGEN_HOST_DEVICE inline float maximum(float a, float b) {
  if (a != a)
    return a;
  if (b != b)
    return b;
  return a > b ? a : b;
}
OPTGEN_HOST_DEVICE inline float minimum(float a, float b) {
  if (a != a)
    return a;
  if (b != b)
    return b;
  return a < b ? a : b;
}
OPTGEN_HOST_DEVICE inline int64_t maximum(int64_t a, int64_t b) {
  return a > b ? a : b;
}
OPTGEN_HOST_DEVICE inline int64_t minimum(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/// torch.sign: -1, 0 or 1; NaN stays NaN.
OPTGEN_HOST_DEVICE inline float sign(float x) {
  if (x != x)
    return x;
  return static_cast<float>((x > 0.0f) - (x < 0.0f));
}

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_ELEMENTMATH_H
