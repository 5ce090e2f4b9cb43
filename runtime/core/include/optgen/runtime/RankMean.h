//===- RankMean.h - The mean over ranks, as collectives compute it -*- C++ -*-===//
//
// What Communicator.h says a mean over ranks is, element by element: f32
// summed in rank order and divided once; bf16 summed in f32 with each
// partial sum rounded once to bf16 (as NCCL's and the MPI communicator's
// bf16 reductions round), the sum divided once and rounded once. One
// implementation for the communicators that compute it themselves (the
// in-process ones, on the host and on a device).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_RANKMEAN_H
#define OPTGEN_RUNTIME_RANKMEAN_H

#include "optgen/runtime/ElementMath.h"
#include "optgen/runtime/Float16.h"

#include <cstdint>

namespace optgen::runtime {

/// The mean of at(0), ..., at(ranks - 1), f32 values; one rank's own value
/// on one rank.
template <typename At>
OPTGEN_HOST_DEVICE inline float rankMeanF32(const At &at, int ranks) {
  float sum = at(0);
  for (int r = 1; r < ranks; ++r)
    sum += at(r);
  return ranks == 1 ? sum : sum / static_cast<float>(ranks);
}

/// The mean of at(0), ..., at(ranks - 1), bf16 bits.
template <typename At>
OPTGEN_HOST_DEVICE inline uint16_t rankMeanBF16(const At &at, int ranks) {
  uint16_t sum = at(0);
  for (int r = 1; r < ranks; ++r)
    sum = toBF16Bits(fromBF16Bits(sum) + fromBF16Bits(at(r)));
  return ranks == 1 ? sum
                    : toBF16Bits(fromBF16Bits(sum) / static_cast<float>(ranks));
}

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_RANKMEAN_H
