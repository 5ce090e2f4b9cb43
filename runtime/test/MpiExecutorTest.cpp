//===- MpiExecutorTest.cpp - The distributed step on 1..N ranks -----------===//
//
// Run under mpirun: each rank steps a ZeRO-2 optimizer over MPI (small,
// flat and owned units) and, alone, the same optimizer on its own; the
// parameters must end with the same bits, for F32 and for BF16 parameters
// (whose collectives carry bf16), as DistributedScenario.h sets them up.
// Prints "N passed, M failed" on rank 0 and exits non-zero if any rank
// failed.
//
//===----------------------------------------------------------------------===//

#include "DistributedScenario.h"
#include "MpiTestReport.h"

#include "optgen/runtime/MpiCommunicator.h"
#include "optgen/runtime/Optimizer.h"

#include <string>
#include <vector>

using namespace optgen::runtime;
using namespace optgen::runtime::test;

int main() {
  std::unique_ptr<Communicator> comm = makeMpiCommunicator();
  int rank = comm->rank(), size = comm->size();
  for (DType dtype : {DType::F32, DType::BF16}) {
    std::vector<Param> shared = model(dtype), alone = model(dtype);
    Optimizer distributed(spec()), reference(spec());
    distributed.setCommunicator(makeMpiCommunicator());
    addAll(distributed, shared, dtype);
    addAll(reference, alone, dtype);
    distributed.finalize();
    reference.finalize();
    std::string name = std::string(dtypeName(dtype));
    std::string kinds;
    for (const StepUnit &unit : distributed.schedule().units)
      kinds += std::string(unitKindName(unit.kind)) + " ";
    expect(kinds == expectedUnits(size),
           "the units (" + name + "): " + kinds, rank);
    for (int s = 0; s < 3; ++s) {
      setGrads(shared, dtype, s, rankOffset(rank, size));
      setGrads(alone, dtype, s, 0.0f);
      distributed.step();
      reference.step();
    }
    for (size_t p = 0; p < shared.size(); ++p)
      expect(shared[p].value == alone[p].value,
             "'" + shared[p].name + "' (" + name + ") as on one rank", rank);
  }

  return report(rank);
}
