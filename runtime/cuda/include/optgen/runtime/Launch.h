//===- Launch.h - The one way optgen launches a kernel ----------*- C++ -*-===//
//
// Every kernel launch of the runtime and of generated CUDA code goes
// through launchKernel: under nvcc it is `Kernel<<<grid, block,
// sharedBytes, stream>>>(args...)`; on the emulated device (the same
// source compiled by the host compiler, docs/EMULATION.md) it is the
// emulator's launch, which checks and enqueues the kernel with its
// arguments copied. Launch failures are cudaGetLastError's, as after
// `<<<...>>>`.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_LAUNCH_H
#define OPTGEN_RUNTIME_LAUNCH_H

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace optgen::runtime {

template <auto Kernel, typename... Args>
inline void launchKernel(dim3 grid, dim3 block, size_t sharedBytes,
                         cudaStream_t stream, Args &&...args) {
#ifdef OPTGEN_CUDA_EMULATED
  ::optgen::emu::launchKernel<Kernel>(grid, block, sharedBytes, stream,
                                      std::forward<Args>(args)...);
#else
  Kernel<<<grid, block, sharedBytes, stream>>>(std::forward<Args>(args)...);
#endif
}

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_LAUNCH_H
