//===- PartialsKernel.cu - The globals' partials combined on a device -----===//

#include "PartialsKernel.h"

#include "optgen/runtime/Launch.h"

#include <cmath>

namespace optgen::runtime {

namespace {

constexpr int kThreads = 32;

__global__ void foldPartialsKernel(double *partials, const double *rows,
                                   int rowCount, int width,
                                   const int32_t *kinds, bool fromIdentity) {
  for (int k = static_cast<int>(threadIdx.x); k < width; k += blockDim.x) {
    bool max = kinds[k] != 0;
    double acc = fromIdentity ? (max ? -INFINITY : 0.0) : partials[k];
    for (int r = 0; r < rowCount; ++r) {
      double x = rows[static_cast<int64_t>(r) * width + k];
      acc = max ? (acc < x ? x : acc) : acc + x;
    }
    partials[k] = acc;
  }
}

} // namespace

cudaError_t launchFoldPartials(double *partials, const double *rows,
                               int rowCount, int width, const int32_t *kinds,
                               bool fromIdentity, cudaStream_t stream) {
  if (width == 0)
    return cudaSuccess;
  launchKernel<foldPartialsKernel>(1, kThreads, 0, stream, partials, rows,
                                   rowCount, width, kinds, fromIdentity);
  return cudaGetLastError();
}

} // namespace optgen::runtime
