//===- stream_kernels.h - Memory-bandwidth kernels for optgen-bench -------===//
//
// STREAM-like loops over float arrays, parallel on the OpenMP threads. They
// live in their own translation unit, compiled for this machine's best
// instructions (-march=native), so that the bandwidth they measure is the
// machine's, not the limit of a baseline instruction set; nothing else in
// that unit (no templates, no inline functions shared with the generated
// code) could leak those instructions into what is being measured.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_BENCH_STREAM_KERNELS_H
#define OPTGEN_BENCH_STREAM_KERNELS_H

#include <cstdint>

namespace optgen_bench {

/// a, b, c, d = 1, 2, 0.5, 0.25 (also the first touch of their pages).
void kernelFill(int64_t n, float *a, float *b, float *c, float *d);
/// a = b: 2 arrays moved (STREAM counting).
void kernelCopy(int64_t n, float *a, const float *b);
/// a = b + s c: 3 arrays moved (STREAM counting).
void kernelTriad(int64_t n, float *a, const float *b, const float *c);
/// a = s a + t b, in place: reads a and b, writes a.
void kernelUpdate(int64_t n, float *a, const float *b);
/// AdamW's traffic: reads p, g, m, v and writes p, m, v in place, with cheap
/// arithmetic (no sqrt or divide): the pure-traffic bound of an AdamW step.
void kernelAdamwLike(int64_t n, float *p, const float *g, float *m, float *v);

} // namespace optgen_bench

#endif // OPTGEN_BENCH_STREAM_KERNELS_H
