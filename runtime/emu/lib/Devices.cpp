//===- Devices.cpp - Devices and errors of the emulated device ------------===//

#include "Emulator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace optgen::emu {

namespace {

struct Devices {
  std::vector<std::unique_ptr<Device>> list;
  Devices() {
    int count = kDefaultDevices;
    if (const char *text = std::getenv("OPTGEN_EMU_DEVICES")) {
      char *end = nullptr;
      long parsed = std::strtol(text, &end, 10);
      if (end != text && *end == '\0' && parsed >= 0 && parsed <= 64)
        count = static_cast<int>(parsed);
      else
        report("OPTGEN_EMU_DEVICES='" + std::string(text) +
               "' is not a count of devices from 0 to 64; using " +
               std::to_string(count));
    }
    for (int i = 0; i < count; ++i) {
      list.push_back(std::make_unique<Device>());
      list.back()->index = i;
    }
  }
};

/// Never destroyed: code that frees device memory in static destructors
/// (after main) still finds its device.
Devices &devices() {
  static Devices *all = new Devices;
  return *all;
}

thread_local int current = 0;
thread_local cudaError_t lastError = cudaSuccess;
/// Per error, the emulator's account of its last occurrence on this thread.
thread_local std::map<int, std::string> messages;
thread_local std::string errorText;

struct ErrorInfo {
  cudaError_t error;
  const char *name, *text;
};
constexpr ErrorInfo kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError",
     "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer",
     "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorNoDevice, "cudaErrorNoDevice",
     "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle",
     "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
     "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources",
     "too many resources requested for launch"},
    {cudaErrorPeerAccessNotEnabled, "cudaErrorPeerAccessNotEnabled",
     "peer access has not been enabled"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction",
     "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress",
     "misaligned address"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure",
     "unspecified launch failure"},
    {cudaErrorNotPermitted, "cudaErrorNotPermitted", "operation not permitted"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge",
     "operation would result in a merge of separate capture sequences"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched",
     "capture was not ended in the same stream as it began"},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined",
     "capturing stream has unjoined work"},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation",
     "dependency created on uncaptured work in another stream"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking "
     "stream"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing "
     "stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another "
     "thread"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrorInfo *infoOf(cudaError_t error) {
  for (const ErrorInfo &info : kErrors)
    if (info.error == error)
      return &info;
  return nullptr;
}

} // namespace

void fail(cudaError_t error, std::string message) {
  throw ApiError{error, std::move(message)};
}

void noteMessage(cudaError_t error, const std::string &message) {
  messages[error] = message;
}

void report(const std::string &message) {
  std::fprintf(stderr, "optgen emulated device: %s\n", message.c_str());
}

cudaError_t api(const std::function<void()> &body) {
  try {
    body();
    return cudaSuccess;
  } catch (const ApiError &error) {
    noteMessage(error.error, error.message);
    // cudaErrorNotReady is an answer, not an error: cudaGetLastError does
    // not keep it.
    if (error.error != cudaErrorNotReady)
      lastError = error.error;
    return error.error;
  }
}

int deviceCount() { return static_cast<int>(devices().list.size()); }

Device &device(int index) {
  if (index < 0 || index >= deviceCount())
    fail(cudaErrorInvalidDevice,
         "device " + std::to_string(index) + " does not exist: the emulator " +
             "has " + std::to_string(deviceCount()) +
             " (OPTGEN_EMU_DEVICES)");
  return *devices().list[static_cast<size_t>(index)];
}

Device &currentDevice() {
  if (deviceCount() == 0)
    fail(cudaErrorNoDevice, "the emulator has no devices (OPTGEN_EMU_DEVICES=0)");
  return device(current);
}

void checkSticky(const Device &device) {
  int sticky = device.sticky.load();
  if (sticky != cudaSuccess)
    fail(static_cast<cudaError_t>(sticky),
         "device " + std::to_string(device.index) +
             " is unusable after an earlier fault (sticky, as on a GPU): " +
             device.stickyMessage);
}

void setSticky(Device &device, cudaError_t error, const std::string &message) {
  int expected = cudaSuccess;
  std::lock_guard<std::mutex> lock(device.mutex);
  if (device.sticky.load() != cudaSuccess)
    return;
  device.stickyMessage = message;
  device.sticky.compare_exchange_strong(expected, error);
  report(message);
}

} // namespace optgen::emu

using namespace optgen::emu;

const char *cudaGetErrorName(cudaError_t error) {
  const ErrorInfo *info = infoOf(error);
  return info ? info->name : "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t error) {
  const ErrorInfo *info = infoOf(error);
  errorText = info ? info->text : "unrecognized error code";
  auto message = messages.find(error);
  if (message != messages.end())
    errorText += " [emulated device: " + message->second + "]";
  return errorText.c_str();
}

cudaError_t cudaGetLastError() {
  cudaError_t error = lastError;
  lastError = cudaSuccess;
  if (error == cudaSuccess && deviceCount() > 0) {
    const Device &here = *devices().list[static_cast<size_t>(current)];
    if (here.sticky.load() != cudaSuccess)
      return api([&] { checkSticky(here); });
  }
  return error;
}

cudaError_t cudaPeekAtLastError() {
  cudaError_t error = lastError;
  if (error == cudaSuccess && deviceCount() > 0) {
    const Device &here = *devices().list[static_cast<size_t>(current)];
    if (here.sticky.load() != cudaSuccess) {
      error = static_cast<cudaError_t>(here.sticky.load());
      noteMessage(error, here.stickyMessage);
    }
  }
  return error;
}

cudaError_t cudaGetDeviceCount(int *count) {
  return api([&] {
    if (!count)
      fail(cudaErrorInvalidValue, "cudaGetDeviceCount: a null count");
    *count = deviceCount();
    if (*count == 0)
      fail(cudaErrorNoDevice,
           "the emulator has no devices (OPTGEN_EMU_DEVICES=0)");
  });
}

cudaError_t cudaGetDevice(int *index) {
  return api([&] {
    if (!index)
      fail(cudaErrorInvalidValue, "cudaGetDevice: a null device");
    *index = currentDevice().index;
  });
}

cudaError_t cudaSetDevice(int index) {
  return api([&] {
    device(index);
    current = index;
  });
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int index) {
  return api([&] {
    device(index);
    if (!prop)
      fail(cudaErrorInvalidValue, "cudaGetDeviceProperties: a null prop");
    std::memset(prop, 0, sizeof *prop);
    std::snprintf(prop->name, sizeof prop->name,
                  "optgen emulated device (sm_90)");
    prop->totalGlobalMem = kDeviceMemory;
    prop->sharedMemPerBlock = kMaxSharedPerBlock;
    prop->sharedMemPerBlockOptin = kMaxSharedPerBlock;
    prop->warpSize = kWarpSize;
    prop->maxThreadsPerBlock = kMaxThreadsPerBlock;
    prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = kMaxThreadsPerBlock;
    prop->maxThreadsDim[2] = kMaxBlockZ;
    prop->maxGridSize[0] = static_cast<int>(kMaxGridX);
    prop->maxGridSize[1] = prop->maxGridSize[2] = kMaxGridYZ;
    prop->multiProcessorCount = 132;
    prop->major = 9;
    prop->minor = 0;
  });
}
