//===- optgen-opt.cpp - The optgen dialect and passes under mlir-opt ------===//
//
// For lit tests of the dialect and of each pass: parses optgen IR, runs the
// passes (or the pipelines of optgen compile's stages, optgen-plan and
// optgen-lower-to-kernels) named on the command line, prints the result.
//
//===----------------------------------------------------------------------===//

#include "dialect/OptgenDialect.h"
#include "optgen/Pipelines/Pipelines.h"
#include "optgen/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  optgen::registerOptgenPasses();
  optgen::registerOptgenPipelines();
  mlir::DialectRegistry registry;
  registry.insert<optgen::OptgenDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "optgen optimizer-step compiler: IR driver\n", registry));
}
