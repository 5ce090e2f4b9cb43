//===- MpiTestReport.h - Checks of programs run under mpirun ----*- C++ -*-===//
//
// The MPI tests are programs run on 1..N ranks: each rank counts its checks,
// prints the failed ones, and the counts are summed over the ranks.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_TEST_MPITESTREPORT_H
#define OPTGEN_RUNTIME_TEST_MPITESTREPORT_H

#include <mpi.h>

#include <cstdio>
#include <string>

namespace optgen::runtime::test {

inline int passed = 0, failed = 0;

/// Counts a check of `rank`, printing it when it failed.
inline void expect(bool ok, const std::string &what, int rank) {
  if (ok) {
    ++passed;
    return;
  }
  ++failed;
  std::fprintf(stderr, "rank %d: FAIL %s\n", rank, what.c_str());
}

/// Prints "N passed, M failed" over all ranks on rank 0; the exit status of
/// every rank: non-zero if any rank failed.
inline int report(int rank) {
  int failures = failed, passes = passed;
  MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &passes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}

} // namespace optgen::runtime::test

#endif // OPTGEN_RUNTIME_TEST_MPITESTREPORT_H
