//===- MpiCollectivesTest.cpp - MPI collectives on 1..N ranks -------------===//
//
// Run under mpirun: every rank contributes known values, and each
// collective's result, in F32 and in BF16, is checked against the formula it
// must give. The values are small integers, so that every partial sum is
// exact in bf16 and only the mean rounds: once, after one division. Prints
// "N passed, M failed" on rank 0 and exits non-zero if any rank failed.
//
//===----------------------------------------------------------------------===//

#include "MpiTestReport.h"

#include "optgen/runtime/Error.h"
#include "optgen/runtime/Float16.h"
#include "optgen/runtime/MpiCommunicator.h"

#include <string>
#include <vector>

using namespace optgen::runtime;
using optgen::runtime::test::expect;
using optgen::runtime::test::report;

namespace {

/// Elements of `dtype` (F32 or BF16) in bytes.
struct Buffer {
  DType dtype;
  std::vector<unsigned char> bytes;
  Buffer(DType dtype, int64_t count, float fill = 0.0f)
      : dtype(dtype), bytes(static_cast<size_t>(count) * dtypeSize(dtype)) {
    for (int64_t i = 0; i < count; ++i)
      set(i, fill);
  }
  void *data() { return bytes.data(); }
  void set(int64_t i, float value) {
    convertElements(&value, DType::F32, bytes.data() + i * dtypeSize(dtype),
                    dtype, 1);
  }
  float get(int64_t i) const {
    float value;
    convertElements(bytes.data() + i * dtypeSize(dtype), dtype, &value,
                    DType::F32, 1);
    return value;
  }
};

/// The mean the collectives must give of an exact integer sum: divided
/// once in f32, then, for BF16, rounded once.
float mean(int64_t sum, int size, DType dtype) {
  float value = static_cast<float>(sum) / static_cast<float>(size);
  return dtype == DType::BF16 ? roundToBF16(value) : value;
}

void testDType(Communicator &comm, DType dtype) {
  int rank = comm.rank(), size = comm.size();
  std::string name = " (" + std::string(dtypeName(dtype)) + ")";

  // All-reduce: element i of rank r is r * r + i; the sum over ranks is
  // sum(r * r) + size * i, whose mean rounds for 3 ranks.
  int64_t squares = 0;
  for (int r = 0; r < size; ++r)
    squares += r * r;
  Buffer data(dtype, 7);
  for (int i = 0; i < 7; ++i)
    data.set(i, static_cast<float>(rank * rank + i));
  comm.allReduceMean(data.data(), 7, dtype)->wait();
  bool ok = true;
  for (int i = 0; i < 7; ++i)
    ok &= data.get(i) == mean(squares + size * i, size, dtype);
  expect(ok, "allReduceMean" + name, rank);

  // Reduce-scatter with uneven counts (rank r receives r + 1 values, and a
  // rank may receive none when counts say so).
  std::vector<int64_t> counts(size);
  int64_t total = 0;
  for (int r = 0; r < size; ++r)
    total += counts[r] = (r == size - 1 && size > 1) ? 0 : r + 1;
  Buffer send(dtype, total);
  for (int64_t i = 0; i < total; ++i)
    send.set(i, static_cast<float>(rank * 10 + i));
  Buffer recv(dtype, counts[rank] + 1, -1.0f);
  comm.reduceScatterMean(send.data(), recv.data(), counts, dtype)->wait();
  int64_t offset = 0;
  for (int r = 0; r < rank; ++r)
    offset += counts[r];
  ok = true;
  for (int64_t i = 0; i < counts[rank]; ++i)
    ok &= recv.get(i) ==
          mean(10 * size * (size - 1) / 2 + size * (offset + i), size, dtype);
  ok &= recv.get(counts[rank]) == -1.0f; // nothing written past its part
  expect(ok, "reduceScatterMean" + name, rank);

  // All-gather the parts back: rank r contributes its counts[r] values.
  Buffer mine(dtype, counts[rank]);
  for (int64_t i = 0; i < counts[rank]; ++i)
    mine.set(i, static_cast<float>(10 * rank + i));
  Buffer all(dtype, total);
  comm.allGather(mine.data(), all.data(), counts, dtype)->wait();
  ok = true;
  int64_t at = 0;
  for (int r = 0; r < size; ++r)
    for (int64_t i = 0; i < counts[r]; ++i)
      ok &= all.get(at++) == static_cast<float>(10 * r + i);
  expect(ok, "allGather" + name, rank);

  // Several collectives in flight at once complete independently.
  Buffer a(dtype, 3, static_cast<float>(rank)), b(dtype, 5, 2.0f * rank);
  RequestPtr first = comm.allReduceMean(a.data(), 3, dtype);
  RequestPtr second = comm.allReduceMean(b.data(), 5, dtype);
  second->wait();
  first->wait();
  first->wait(); // idempotent: divides once
  expect(a.get(2) == mean(size * (size - 1) / 2, size, dtype) &&
             b.get(4) == mean(size * (size - 1), size, dtype),
         "overlapping collectives" + name, rank);
}

template <typename F> bool throwsError(F &&f) {
  try {
    f();
  } catch (const Error &) {
    return true;
  }
  return false;
}

} // namespace

int main() {
  std::unique_ptr<Communicator> comm = makeMpiCommunicator();
  int rank = comm->rank();
  for (DType dtype : {DType::F32, DType::BF16})
    testDType(*comm, dtype);

  // Only F32 and BF16 travel; a host communicator takes no stream.
  double wide = 1.0;
  expect(throwsError([&] { comm->allReduceMean(&wide, 1, DType::F64); }),
         "an F64 all-reduce is an error", rank);
  comm->bindStream(nullptr);
  int stream = 0;
  expect(throwsError([&] { comm->bindStream(&stream); }),
         "binding a stream to MPI is an error", rank);

  return report(rank);
}
