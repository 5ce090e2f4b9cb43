//===- optgen-translate.cpp - Generated code from optgen IR ---------------===//
//
// For tests that start from IR: `optgen-translate --optgen-to-cpu FILE.mlir`
// prints the files `optgen compile --target=cpu` generates for that IR (the
// kernel stage, `optgen compile --emit=kernels`), each after a line
// `// ----- NAME`.
//
//===----------------------------------------------------------------------===//

#include "optgen/Driver/Emission.h"

#include "mlir/Support/LogicalResult.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  optgen::registerToCpuTranslation();
  optgen::registerToCudaTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "optgen IR to generated code\n"));
}
