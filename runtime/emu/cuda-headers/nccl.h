//===- nccl.h - NCCL of the emulated device ---------------------*- C++ -*-===//
//
// The subset of NCCL optgen's communicator calls (NcclCommunicator.cpp),
// for ranks that are threads of one process, each on its own emulated
// device (NCCL puts one rank on a GPU: two ranks of a communicator on one
// device are an error). Blocking communicators only.
//
// A collective is an operation on its stream (captured into a graph like
// any other): when it runs, it waits for the same collective of every
// other rank (the k-th a communicator runs on each rank meets the k-th of
// the others) and checks that the ranks agree on what it is (kind, count,
// type, reduction, root): ranks that disagree, a rank that aborts, or one
// that does not arrive within OPTGEN_EMU_NCCL_TIMEOUT seconds (default 60)
// fail the collective on every rank, as ncclCommGetAsyncError then says,
// where a GPU would hang or compute garbage. Sums run in rank order, a
// bf16 or f16 sum rounding after each addition (NCCL's order is its own:
// results agree to rounding). ncclCommDestroy and ncclCommAbort wait, as
// NCCL (2.26 and later) does, while a live CUDA graph executable holds a
// collective of the communicator; where NCCL would hang, the emulator ends
// the process after the timeout, saying why.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_EMU_NCCL_H
#define OPTGEN_EMU_NCCL_H

#include <cuda_runtime.h>

#include <cstddef>

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 0
#define NCCL_UNIQUE_ID_BYTES 128

enum ncclResult_t {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};

enum ncclDataType_t {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
};

enum ncclRedOp_t { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };

struct ncclUniqueId {
  char internal[NCCL_UNIQUE_ID_BYTES];
};

struct ncclComm;
typedef ncclComm *ncclComm_t;

const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclGetVersion(int *version);

ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);

ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
                               size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff,
                           size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream);

#endif // OPTGEN_EMU_NCCL_H
