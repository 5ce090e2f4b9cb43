//===- MpiCollectivesTest.cpp - MPI collectives on 1..N ranks -------------===//
//
// Run under mpirun: every rank contributes known values, and each
// collective's result is checked against the formula it must give. Prints
// "N passed, M failed" on rank 0 and exits non-zero if any rank failed.
//
//===----------------------------------------------------------------------===//

#include "optgen/runtime/MpiCommunicator.h"

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace optgen::runtime;

namespace {

int passed = 0, failed = 0;

void expect(bool ok, const std::string &what, int rank) {
  if (ok) {
    ++passed;
    return;
  }
  ++failed;
  std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
}

bool close(float a, float b) { return std::fabs(a - b) <= 1e-5f * (1 + std::fabs(b)); }

} // namespace

int main() {
  std::unique_ptr<Communicator> comm = makeMpiCommunicator();
  int rank = comm->rank(), size = comm->size();

  // All-reduce: element i of rank r is r + i; the mean is (size-1)/2 + i.
  std::vector<float> data(7);
  for (int i = 0; i < 7; ++i)
    data[i] = static_cast<float>(rank + i);
  comm->allReduceMean(data.data(), 7)->wait();
  bool ok = true;
  for (int i = 0; i < 7; ++i)
    ok &= close(data[i], (size - 1) / 2.0f + i);
  expect(ok, "allReduceMean", rank);

  // Reduce-scatter with uneven counts (rank r receives r + 1 values, and a
  // rank may receive none when counts say so).
  std::vector<int64_t> counts(size);
  int64_t total = 0;
  for (int r = 0; r < size; ++r)
    total += counts[r] = (r == size - 1 && size > 1) ? 0 : r + 1;
  std::vector<float> send(total);
  for (int64_t i = 0; i < total; ++i)
    send[i] = static_cast<float>(rank * 100 + i);
  std::vector<float> recv(counts[rank] + 1, -1.0f);
  comm->reduceScatterMean(send.data(), recv.data(), counts)->wait();
  int64_t offset = 0;
  for (int r = 0; r < rank; ++r)
    offset += counts[r];
  ok = true;
  for (int64_t i = 0; i < counts[rank]; ++i)
    ok &= close(recv[i], 100.0f * (size - 1) / 2.0f + offset + i);
  ok &= recv[counts[rank]] == -1.0f; // nothing written past its part
  expect(ok, "reduceScatterMean", rank);

  // All-gather the parts back: rank r contributes its counts[r] values.
  std::vector<float> mine(counts[rank]);
  for (int64_t i = 0; i < counts[rank]; ++i)
    mine[i] = static_cast<float>(1000 * rank + i);
  std::vector<float> all(total);
  comm->allGather(mine.data(), all.data(), counts)->wait();
  ok = true;
  int64_t at = 0;
  for (int r = 0; r < size; ++r)
    for (int64_t i = 0; i < counts[r]; ++i)
      ok &= all[at++] == static_cast<float>(1000 * r + i);
  expect(ok, "allGather", rank);

  // Several collectives in flight at once complete independently.
  std::vector<float> a(3, static_cast<float>(rank)), b(5, 2.0f * rank);
  RequestPtr first = comm->allReduceMean(a.data(), 3);
  RequestPtr second = comm->allReduceMean(b.data(), 5);
  second->wait();
  first->wait();
  expect(close(a[2], (size - 1) / 2.0f) && close(b[4], size - 1.0f),
         "overlapping collectives", rank);

  int failures = failed;
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int passes = passed;
  MPI_Allreduce(MPI_IN_PLACE, &passes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
