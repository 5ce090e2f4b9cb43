//===- CudaCheck.cpp - CUDA runtime calls that throw ----------------------===//

#include "optgen/runtime/CudaCheck.h"

#include "optgen/runtime/Error.h"

namespace optgen::runtime {

std::string describeCudaError(cudaError_t result, std::string_view call,
                              std::string_view context) {
  std::string message;
  if (!context.empty())
    message.append(context).append(": ");
  message.append(call.substr(0, call.find('(')))
      .append(" failed: ")
      .append(cudaGetErrorName(result))
      .append(" (")
      .append(cudaGetErrorString(result))
      .append(")");
  return message;
}

void throwCudaError(cudaError_t result, std::string_view call,
                    std::string_view context) {
  throw Error(describeCudaError(result, call, context));
}

} // namespace optgen::runtime
