//===- optgen.cpp - The optgen compiler driver ----------------------------===//
//
// `optgen compile SPEC --emit=ast|mlir [-o FILE]`: reads a spec, reports any
// error at its location with the source line and a caret, and prints the
// requested stage.
//
//===----------------------------------------------------------------------===//

#include "dialect/OptgenDialect.h"
#include "optgen/Frontend/MLIRGen.h"
#include "optgen/Frontend/Parser.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
using namespace optgen;

namespace {

cl::OptionCategory optgenCategory("optgen options");

cl::SubCommand compileCommand(
    "compile", "Compile an optimizer spec (check it, and print a stage)");

cl::opt<std::string> specFile(cl::Positional, cl::desc("<spec.opt>"),
                              cl::Required, cl::sub(compileCommand), cl::cat(optgenCategory));

cl::opt<std::string> outputFile("o", cl::desc("Write the output to FILE "
                                              "(default: standard output)"),
                                cl::value_desc("FILE"), cl::init("-"),
                                cl::sub(compileCommand), cl::cat(optgenCategory));

enum class Stage { AST, MLIR };
cl::opt<Stage> emit(
    "emit", cl::desc("What to print:"), cl::init(Stage::MLIR),
    cl::values(clEnumValN(Stage::AST, "ast", "the syntax tree of the spec"),
               clEnumValN(Stage::MLIR, "mlir",
                          "the spec in the optgen dialect (the default)")),
    cl::sub(compileCommand), cl::cat(optgenCategory));

cl::list<std::string>
    defines("D",
            cl::desc("Set the spec's constant NAME to VALUE (an expression of "
                     "literals, e.g. -D compute=f32)"),
            cl::value_desc("NAME=VALUE"), cl::Prefix, cl::sub(compileCommand), cl::cat(optgenCategory));

cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Treat each part of the spec between '// -----' lines as a "
             "separate spec (for tests)"),
    cl::sub(compileCommand), cl::cat(optgenCategory));

cl::opt<bool> verifyDiagnostics(
    "verify-diagnostics",
    cl::desc("Check the reported errors against the spec's "
             "'// expected-error {{...}}' comments (for tests)"),
    cl::sub(compileCommand), cl::cat(optgenCategory));

/// Adds each -D NAME=VALUE to `sourceMgr` as a one-constant spec and parses
/// it, so values are written, and their errors reported, as in a spec.
LogicalResult parseDefines(SourceMgr &sourceMgr,
                           std::vector<std::unique_ptr<ast::Module>> &parsed,
                           std::vector<const ast::ConstDecl *> &overrides,
                           const SyntaxErrorFn &onError) {
  for (const std::string &define : defines) {
    size_t equals = define.find('=');
    if (equals == std::string::npos || equals == 0) {
      WithColor::error(errs(), "optgen")
          << "-D expects NAME=VALUE, got '" << define << "'\n";
      return failure();
    }
    std::string text = "optimizer command_line const " +
                       define.substr(0, equals) + " = " +
                       define.substr(equals + 1) + "\n";
    unsigned id = sourceMgr.AddNewSourceBuffer(
        MemoryBuffer::getMemBufferCopy(text, "-D " + define), SMLoc());
    std::unique_ptr<ast::Module> module = parseSpec(sourceMgr, id, onError);
    if (!module)
      return failure();
    if (module->getDecls().size() != 1 ||
        !isa<ast::ConstDecl>(module->getDecls().front().get())) {
      WithColor::error(errs(), "optgen")
          << "-D expects NAME=VALUE, got '" << define << "'\n";
      return failure();
    }
    overrides.push_back(cast<ast::ConstDecl>(module->getDecls().front().get()));
    parsed.push_back(std::move(module));
  }
  return success();
}

/// Compiles one spec buffer (the whole file, or one part of a split file).
LogicalResult compileBuffer(std::unique_ptr<MemoryBuffer> buffer,
                            raw_ostream &os) {
  mlir::MLIRContext context;
  context.getOrLoadDialect<OptgenDialect>();
  SourceMgr sourceMgr;
  unsigned specId = sourceMgr.AddNewSourceBuffer(std::move(buffer), SMLoc());

  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> handler;
  mlir::SourceMgrDiagnosticVerifierHandler *verifier = nullptr;
  if (verifyDiagnostics) {
    auto v = std::make_unique<mlir::SourceMgrDiagnosticVerifierHandler>(
        sourceMgr, &context);
    verifier = v.get();
    handler = std::move(v);
  } else {
    handler =
        std::make_unique<mlir::SourceMgrDiagnosticHandler>(sourceMgr, &context);
  }

  // Syntax errors become MLIR diagnostics too, with the same form and the
  // same --verify-diagnostics checks as every later error.
  auto onSyntaxError = [&](SMLoc at, const Twine &message) {
    unsigned id = sourceMgr.FindBufferContainingLoc(at);
    auto [line, col] = sourceMgr.getLineAndColumn(at, id);
    mlir::emitError(mlir::FileLineColLoc::get(
        &context, sourceMgr.getMemoryBuffer(id)->getBufferIdentifier(), line,
        col))
        << message;
  };

  auto finish = [&](LogicalResult result) {
    return verifier ? verifier->verify() : result;
  };

  std::unique_ptr<ast::Module> spec =
      parseSpec(sourceMgr, specId, onSyntaxError);
  if (!spec)
    return finish(failure());
  if (emit == Stage::AST) {
    ast::dump(*spec, os, [&](SMLoc at) {
      return sourceMgr.getLineAndColumn(at, specId);
    });
    return finish(success());
  }

  std::vector<std::unique_ptr<ast::Module>> defineModules;
  std::vector<const ast::ConstDecl *> overrides;
  if (failed(parseDefines(sourceMgr, defineModules, overrides, onSyntaxError)))
    return finish(failure());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlirGen(context, sourceMgr, *spec, overrides);
  if (!module)
    return finish(failure());
  module->print(os);
  return finish(success());
}

int compile() {
  std::string message;
  std::unique_ptr<MemoryBuffer> input = mlir::openInputFile(specFile, &message);
  if (!input) {
    WithColor::error(errs(), "optgen") << message << "\n";
    return 1;
  }
  std::unique_ptr<ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &message);
  if (!output) {
    WithColor::error(errs(), "optgen") << message << "\n";
    return 1;
  }
  LogicalResult result =
      splitInputFile
          ? mlir::splitAndProcessBuffer(std::move(input), compileBuffer,
                                        output->os(), "// -----", "// -----")
          : compileBuffer(std::move(input), output->os());
  if (failed(result))
    return 1;
  output->keep();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(optgenCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "optgen: a compiler for optimizer steps\n\n"
      "  optgen compile SPEC [--emit=ast|mlir] [-o FILE] [-D NAME=VALUE]\n\n"
      "Run 'optgen compile --help' for the options of a command.\n");
  if (compileCommand)
    return compile();
  errs() << "optgen: no command given; run 'optgen --help'\n";
  return 1;
}
