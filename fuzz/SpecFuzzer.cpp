//===- SpecFuzzer.cpp - The spec front end on arbitrary input -------------===//
//
// libFuzzer target: any bytes as a spec, through the lexer, the parser and
// MLIRGen, and the module verified. Errors are diagnostics (discarded);
// what must never happen is a crash, a hang, or what ASan and UBSan catch.
//
//===----------------------------------------------------------------------===//

#include "dialect/OptgenDialect.h"
#include "optgen/Frontend/AST.h"
#include "optgen/Frontend/MLIRGen.h"
#include "optgen/Frontend/Parser.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sourceMgr;
  unsigned id = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.opt"),
      llvm::SMLoc());
  mlir::MLIRContext context;
  context.loadDialect<optgen::OptgenDialect>();
  // Every diagnostic is handled here: nothing printed, nothing aborts.
  mlir::ScopedDiagnosticHandler quiet(&context,
                                      [](mlir::Diagnostic &) { return mlir::success(); });
  std::unique_ptr<optgen::ast::Module> spec = optgen::parseSpec(
      sourceMgr, id, [](llvm::SMLoc, const llvm::Twine &) {});
  if (!spec)
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      optgen::mlirGen(context, sourceMgr, *spec);
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
