//===- EmitCpu.h - C++ for the CPU from fused optgen IR ---------*- C++ -*-===//
//
// The CPU emitter only reads the IR: passes (canonicalize, cse,
// optgen-fuse-kernels) prepare it, and this prints what it finds as a C++
// header, a source file and a CMake file that build a library linking
// optgen's runtime.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TARGET_CPU_EMITCPU_H
#define OPTGEN_TARGET_CPU_EMITCPU_H

#include "dialect/OptgenDialect.h"
#include "dialect/TargetDescription.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace optgen {

struct CpuEmitOptions {
  /// The spec's file name, for comments.
  std::string specName;
  /// The text of line `line` of the spec (for comments), or empty.
  std::function<std::string(unsigned line)> sourceLine;
};

/// Emits `optimizer` as files (name -> contents): NAME.h, NAME.cpp and
/// CMakeLists.txt. Fails with a diagnostic on IR it cannot emit.
mlir::LogicalResult emitCpu(OptimizerOp optimizer,
                            const CpuEmitOptions &options,
                            std::map<std::string, std::string> &files);

/// The first lines of every generated file: what it was generated from, and
/// the command (`optgen compile SPEC --target=TARGET`, the module's target)
/// that makes it again.
std::string generatedBanner(OptimizerOp optimizer,
                            const CpuEmitOptions &options);

/// The NAME of every generated file (NAME.h, NAME.cpp or NAME.cu,
/// NAME_runner.cpp): the optimizer's name as the spec writes it, so that
/// a build (optgen_add_optimizer()) knows them from the spec alone. Only
/// the identifiers of the code (its class, its CMake targets) are
/// legalised (legalIdentifier).
std::string fileStem(OptimizerOp optimizer);

/// The extern "C" function every target's NAME.h declares and its source
/// defines, which returns a new optimizer (`optgen_new_NAME`, NAME the file
/// stem: the prefix makes any name legal), for the runtime's C ABI
/// (CApi.h).
std::string factoryName(OptimizerOp optimizer);

/// NAME.h: the optimizer's class, deriving from `baseClass` (declared in
/// `runtimeHeader`), with its groups and compiled buckets in its comment,
/// and its factory.
std::string emitOptimizerHeader(OptimizerOp optimizer,
                                const CpuEmitOptions &options,
                                llvm::StringRef runtimeHeader,
                                llvm::StringRef baseClass);

/// NAME_runner.cpp: a main() replaying case files on the optimizer through
/// `runnerMain` (declared in `runnerHeader`), the target's.
std::string emitRunnerSource(OptimizerOp optimizer,
                             const CpuEmitOptions &options,
                             llvm::StringRef runnerHeader,
                             llvm::StringRef runnerMain);

/// CMakeLists.txt: the optimizer as a library (and its runner, optionally)
/// for the module's target, linking optgen's runtime as its CMake package
/// finds it, or its sources where the caller says (OPTGEN_RUNTIME_DIR).
std::string emitCMakeLists(OptimizerOp optimizer,
                           const CpuEmitOptions &options);

/// The functions a rule's RuleSpec entry points to: its host step (or
/// "nullptr") and its device launch (or empty: none).
struct RuleStepFunctions {
  std::string step = "nullptr";
  std::string launch;
};

/// Prints a rule's step functions (a target's own), with file-scope
/// constant tables they need appended to `tables`, and names them.
using RuleStepPrinter = llvm::function_ref<mlir::LogicalResult(
    RuleOp rule, llvm::raw_ostream &os, std::vector<std::string> &tables,
    RuleStepFunctions &step)>;

/// The functions a spec's GlobalsSpec points to, as a target prints them:
/// the host's contribution and finish ("nullptr": none), or a device's
/// launches (empty: none) with the scratch a member they need.
struct GlobalsFunctions {
  std::string contribution = "nullptr", finish = "nullptr";
  std::string launchContribution, launchFinish;
  int64_t deviceScratch = 0;
};

/// Prints the functions of the optimizer's globals (a target's own), with
/// file-scope tables they need appended to `tables`, and names them.
using GlobalsFunctionPrinter = llvm::function_ref<mlir::LogicalResult(
    OptimizerOp optimizer, llvm::raw_ostream &os,
    std::vector<std::string> &tables, GlobalsFunctions &functions)>;

/// The source file of a generated optimizer, host code that every target
/// shares: each rule's workspace layout, state shapes and (through
/// `printStep`) step functions; the groups' `where` conditions; the
/// globals' functions (through `printGlobals`, when the optimizer has
/// globals); a compiled schedule; and makeSpec(), the tables the runtime
/// runs (rules with their hyperparameter layout, groups, planned
/// parameters, globals), then the constructor of the optimizer class,
/// which derives from `baseClass`, and its factory (factoryName()).
mlir::LogicalResult emitHostSource(OptimizerOp optimizer,
                                   const CpuEmitOptions &options,
                                   llvm::StringRef baseClass,
                                   RuleStepPrinter printStep,
                                   GlobalsFunctionPrinter printGlobals,
                                   std::string &text);

} // namespace optgen

#endif // OPTGEN_TARGET_CPU_EMITCPU_H
