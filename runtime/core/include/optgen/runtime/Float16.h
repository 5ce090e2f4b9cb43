//===- Float16.h - bf16 and f16 conversions ---------------------*- C++ -*-===//
//
// The one implementation of rounding to bf16 and f16 in optgen: the runtime,
// the generated code and the reference interpreter all call these, so a spec
// that says bf16 rounds identically everywhere, and generated CUDA kernels
// call them as device functions. Round to nearest, ties to
// even, as the hardware conversions (and torch's .to(torch.bfloat16)) do.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_FLOAT16_H
#define OPTGEN_RUNTIME_FLOAT16_H

#include "optgen/runtime/ElementMath.h"

#include <cstdint>
#include <cstring>

namespace optgen::runtime {

OPTGEN_HOST_DEVICE inline uint32_t floatBits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

OPTGEN_HOST_DEVICE inline float bitsFloat(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

/// The bf16 nearest to `x` (ties to even); NaN stays a quiet NaN.
OPTGEN_HOST_DEVICE inline uint16_t toBF16Bits(float x) {
  uint32_t bits = floatBits(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

OPTGEN_HOST_DEVICE inline float fromBF16Bits(uint16_t bits) {
  return bitsFloat(static_cast<uint32_t>(bits) << 16);
}

/// `x` rounded to bf16 and widened back: what a bf16 value of `x` holds.
OPTGEN_HOST_DEVICE inline float roundToBF16(float x) { return fromBF16Bits(toBF16Bits(x)); }

/// The f16 nearest to `x` (ties to even), with f16's subnormals, overflow to
/// infinity, and NaN kept quiet.
OPTGEN_HOST_DEVICE inline uint16_t toF16Bits(float x) {
  uint32_t bits = floatBits(x);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) // rounds to beyond 65504: infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude < 0x38800000u) {
    // Subnormal in f16 (below 2^-14): the quantum is 2^-24. Adding 0.5
    // (= 2^-1) aligns the value so that float addition itself rounds it to
    // a multiple of 2^-24, ties to even.
    float shifted = bitsFloat(magnitude) + 0.5f;
    return static_cast<uint16_t>(sign | (floatBits(shifted) - 0x3f000000u));
  }
  uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

OPTGEN_HOST_DEVICE inline float fromF16Bits(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) // infinity or NaN
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) // zero or subnormal: mantissa * 2^-24, exact in float
    return bitsFloat(sign) + (sign ? -1.0f : 1.0f) *
                                 static_cast<float>(mantissa) * 0x1p-24f;
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

OPTGEN_HOST_DEVICE inline float roundToF16(float x) { return fromF16Bits(toF16Bits(x)); }

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_FLOAT16_H
