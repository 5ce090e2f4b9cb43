//===- cuda_bf16.h - bf16 of the emulated device ----------------*- C++ -*-===//
//
// __nv_bfloat16 and the conversions optgen's kernels call, as CUDA's
// cuda_bf16.hpp defines them: float to bf16 rounds to nearest, ties to
// even, and every NaN becomes the canonical 0x7fff; bf16 to float is exact.
// This is the emulated hardware's conversion, written from CUDA's
// definition, not optgen's own rounding (Float16.h), which it checks.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_EMU_CUDA_BF16_H
#define OPTGEN_EMU_CUDA_BF16_H

#include <cstdint>
#include <cstring>

struct __nv_bfloat16;
inline __nv_bfloat16 __float2bfloat16_rn(float x);
inline float __bfloat162float(__nv_bfloat16 x);

struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float x) : __x(__float2bfloat16_rn(x).__x) {}
  operator float() const { return __bfloat162float(*this); }
};

inline __nv_bfloat16 __float2bfloat16_rn(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  __nv_bfloat16 result;
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    result.__x = 0x7fffu;
  } else {
    bits += 0x7fffu + ((bits >> 16) & 1u);
    result.__x = static_cast<unsigned short>(bits >> 16);
  }
  return result;
}
inline __nv_bfloat16 __float2bfloat16(float x) { return __float2bfloat16_rn(x); }

inline float __bfloat162float(__nv_bfloat16 x) {
  uint32_t bits = static_cast<uint32_t>(x.__x) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

#endif // OPTGEN_EMU_CUDA_BF16_H
