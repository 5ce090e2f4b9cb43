//===- CudaTestSupport.h - What the CUDA tests share ------------*- C++ -*-===//
//
// The runtime's CUDA tests run where there is no GPU too: those that need
// one skip themselves, and the rest (what is checked before any CUDA call)
// run. They hold device memory as copies of host bytes.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_TEST_CUDATESTSUPPORT_H
#define OPTGEN_RUNTIME_TEST_CUDATESTSUPPORT_H

#include "optgen/runtime/CudaCheck.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstring>
#include <vector>

namespace optgen::runtime::test {

inline bool haveCudaDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define SKIP_WITHOUT_CUDA_DEVICE()                                             \
  if (!::optgen::runtime::test::haveCudaDevice())                              \
  GTEST_SKIP() << "no CUDA device: skipped"

/// The bytes of `values`, and back.
inline std::vector<unsigned char> bytesOf(const std::vector<float> &values) {
  const auto *bytes = reinterpret_cast<const unsigned char *>(values.data());
  return {bytes, bytes + values.size() * sizeof(float)};
}
inline std::vector<float> floatsOf(const std::vector<unsigned char> &bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

/// Device memory holding a copy of host bytes.
struct DeviceBytes {
  void *data = nullptr;
  size_t size;
  explicit DeviceBytes(const std::vector<unsigned char> &bytes)
      : size(bytes.size()) {
    OPTGEN_CUDA_CHECK(cudaMalloc(&data, size), "test memory");
    upload(bytes);
  }
  ~DeviceBytes() { cudaFree(data); }
  DeviceBytes(const DeviceBytes &) = delete;
  DeviceBytes &operator=(const DeviceBytes &) = delete;
  /// Complete when it returns: a pageable cudaMemcpy returns once the
  /// bytes are staged, its transfer on the legacy default stream possibly
  /// still to come, which work on a non-blocking stream does not wait for.
  void upload(const std::vector<unsigned char> &bytes) {
    OPTGEN_CUDA_CHECK(
        cudaMemcpy(data, bytes.data(), size, cudaMemcpyHostToDevice), "test");
    OPTGEN_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy), "test");
  }
  /// On `stream`, before the work enqueued there after it.
  void upload(const std::vector<unsigned char> &bytes, cudaStream_t stream) {
    OPTGEN_CUDA_CHECK(cudaMemcpyAsync(data, bytes.data(), size,
                                      cudaMemcpyHostToDevice, stream),
                      "test");
  }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> bytes(size);
    OPTGEN_CUDA_CHECK(
        cudaMemcpy(bytes.data(), data, size, cudaMemcpyDeviceToHost), "test");
    return bytes;
  }
};

} // namespace optgen::runtime::test

#endif // OPTGEN_RUNTIME_TEST_CUDATESTSUPPORT_H
