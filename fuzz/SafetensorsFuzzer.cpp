//===- SafetensorsFuzzer.cpp - The safetensors reader on arbitrary bytes --===//
//
// libFuzzer target: any bytes as a safetensors file, parsed, every tensor
// viewed and its elements read as f32. A malformed file must be an Error,
// never a crash or a read out of bounds.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Safetensors.h"
#include "optgen/runtime/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <vector>

using namespace optgen::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    SafetensorsFile file =
        SafetensorsFile::fromBytes(std::vector<unsigned char>(data, data + size),
                                   "fuzz.safetensors");
    for (const std::string &name : file.names()) {
      TensorView view = file.view(name);
      std::vector<float> values(static_cast<size_t>(view.numel()));
      convertElements(view.data, view.dtype, values.data(), DType::F32,
                      view.numel());
    }
  } catch (const Error &) {
  }
  return 0;
}
