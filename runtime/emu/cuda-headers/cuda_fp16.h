//===- cuda_fp16.h - f16 of the emulated device -----------------*- C++ -*-===//
//
// __half and its conversions as CUDA's cuda_fp16.hpp defines them: float
// to f16 rounds to nearest, ties to even, with f16's subnormals, overflow
// to infinity and every NaN the canonical 0x7fff; f16 to float is exact.
// Written from CUDA's definition (see cuda_bf16.h).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_EMU_CUDA_FP16_H
#define OPTGEN_EMU_CUDA_FP16_H

#include <cmath>
#include <cstdint>
#include <cstring>

struct __half;
inline __half __float2half_rn(float x);
inline float __half2float(__half x);

struct __half {
  unsigned short __x;
  __half() = default;
  __half(float x) : __x(__float2half_rn(x).__x) {}
  operator float() const { return __half2float(*this); }
};

inline __half __float2half_rn(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t magnitude = bits & 0x7fffffffu;
  __half result;
  if (magnitude > 0x7f800000u) {
    result.__x = 0x7fffu;
    return result;
  }
  uint32_t half;
  if (magnitude >= 0x477ff000u) { // at or beyond 65520: infinity
    half = 0x7c00u;
  } else if (magnitude < 0x38800000u) {
    // Below 2^-14, a subnormal: the value in units of 2^-24, rounded to
    // nearest even (exact in double).
    double units = std::ldexp(static_cast<double>(std::fabs(x)), 24);
    double floor = std::floor(units);
    double rest = units - floor;
    uint32_t whole = static_cast<uint32_t>(floor);
    if (rest > 0.5 || (rest == 0.5 && (whole & 1u)))
      ++whole;
    half = whole;
  } else {
    uint32_t exponent = (magnitude >> 23) - 112; // rebiased: 127 - 15
    uint32_t mantissa = magnitude & 0x7fffffu;
    half = (exponent << 10) | (mantissa >> 13);
    uint32_t dropped = mantissa & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u)))
      ++half; // a carry into the exponent is the next binade, as it should be
  }
  result.__x = static_cast<unsigned short>(sign | half);
  return result;
}
inline __half __float2half(float x) { return __float2half_rn(x); }

inline float __half2float(__half x) {
  uint32_t sign = static_cast<uint32_t>(x.__x & 0x8000u) << 16;
  uint32_t exponent = (x.__x >> 10) & 0x1fu;
  uint32_t mantissa = x.__x & 0x3ffu;
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  uint32_t bits = exponent == 0x1fu
                      ? sign | 0x7f800000u | (mantissa << 13)
                      : sign | ((exponent + 112) << 23) | (mantissa << 13);
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

#endif // OPTGEN_EMU_CUDA_FP16_H
