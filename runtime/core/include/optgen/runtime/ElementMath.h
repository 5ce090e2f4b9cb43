//===- ElementMath.h - Per-element math of generated code -------*- C++ -*-===//
//
// The element functions whose exact form must match PyTorch's (lerp,
// NaN-propagating min/max, sign, Python's floored remainder and division,
// floor), one implementation that generated CPU
// code and generated CUDA kernels both call: on the host as inline
// functions, in device code as __device__ ones.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_ELEMENTMATH_H
#define OPTGEN_RUNTIME_ELEMENTMATH_H

#include <cstdint>
#include <math.h>

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

/// Python's `%` and torch.remainder: the remainder takes the divisor's
/// sign (-7 % 3 is 2). Floats as torch computes them (fmod, exact, then
/// moved into the divisor's sign); a float modulo 0 is NaN.
OPTGEN_HOST_DEVICE inline float remainder(float a, float b) {
  float mod = ::fmodf(a, b);
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f)))
    mod += b;
  return mod;
}
OPTGEN_HOST_DEVICE inline double remainder(double a, double b) {
  double mod = ::fmod(a, b);
  if (mod != 0.0 && ((b < 0.0) != (mod < 0.0)))
    mod += b;
  return mod;
}
/// An int modulo 0 is `a` (Python raises; a step cannot), so that
/// a == b * floorDivide(a, b) + remainder(a, b) holds for every int.
OPTGEN_HOST_DEVICE inline int64_t remainder(int64_t a, int64_t b) {
  if (b == 0)
    return a;
  if (b == -1)
    return 0;
  int64_t mod = a % b;
  if (mod != 0 && ((b < 0) != (mod < 0)))
    mod += b;
  return mod;
}

/// Python's `//` and torch.floor_divide: the quotient rounded down
/// (-7 // 2 is -4). Floats as torch computes them; a float divided by 0 is
/// a / 0 (an infinity or NaN).
OPTGEN_HOST_DEVICE inline float floorDivide(float a, float b) {
  if (b == 0.0f)
    return a / b;
  float mod = ::fmodf(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f)))
    div -= 1.0f;
  if (div == 0.0f)
    return ::copysignf(0.0f, a / b);
  float floored = ::floorf(div);
  if (div - floored > 0.5f)
    floored += 1.0f;
  return floored;
}
OPTGEN_HOST_DEVICE inline double floorDivide(double a, double b) {
  if (b == 0.0)
    return a / b;
  double mod = ::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0.0) != (mod < 0.0)))
    div -= 1.0;
  if (div == 0.0)
    return ::copysign(0.0, a / b);
  double floored = ::floor(div);
  if (div - floored > 0.5)
    floored += 1.0;
  return floored;
}
/// An int divided by 0 gives 0 (see remainder).
OPTGEN_HOST_DEVICE inline int64_t floorDivide(int64_t a, int64_t b) {
  if (b == 0)
    return 0;
  if (b == -1)
    return -a;
  int64_t quotient = a / b, rest = a % b;
  return rest != 0 && ((a < 0) != (b < 0)) ? quotient - 1 : quotient;
}

/// torch.floor: an int stays itself.
OPTGEN_HOST_DEVICE inline float floor(float x) { return ::floorf(x); }
OPTGEN_HOST_DEVICE inline double floor(double x) { return ::floor(x); }
OPTGEN_HOST_DEVICE inline int64_t floor(int64_t x) { return x; }

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_ELEMENTMATH_H
