//===- HostCode.h - The host code every target generates --------*- C++ -*-===//
//
// What a generated optimizer is besides its math, the same for every
// target: the header with its class and factory, the tables of its source
// file (rules with their hyperparameter layout, workspace layouts and state
// shapes, groups with their `where`, planned parameters, globals, the
// compiled schedule), the runner that replays cases on it, and its
// CMakeLists.txt. A target supplies how it spells its runtime (a
// TargetSpelling) and prints its own step functions; everything else is
// printed here, once.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TARGET_HOST_HOSTCODE_H
#define OPTGEN_TARGET_HOST_HOSTCODE_H

#include "dialect/OptgenDialect.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace optgen {

/// What every printer is told besides the IR.
struct EmitOptions {
  /// The spec's file name, for comments.
  std::string specName;
  /// The text of line `line` of the spec (for comments), or empty.
  std::function<std::string(unsigned line)> sourceLine;
};

/// How a target's generated files name its part of the runtime.
struct TargetSpelling {
  /// The header declaring `baseClass`, which the optimizer's class derives
  /// from.
  llvm::StringRef runtimeHeader;
  llvm::StringRef baseClass;
  /// The header declaring `runnerMain`, the main() of the case runner.
  llvm::StringRef runnerHeader;
  llvm::StringRef runnerMain;
  /// The extension of the source file with the step functions (".cpp",
  /// ".cu").
  llvm::StringRef sourceExtension;
};

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

/// The first lines of every generated file: what it was generated from, and
/// the command (`optgen compile SPEC --target=TARGET`, the module's target)
/// that makes it again.
std::string generatedBanner(OptimizerOp optimizer, const EmitOptions &options);

/// The files of `optimizer` for the module's target, spelt as `spelling`
/// says (name -> contents):
/// - NAME.h: the optimizer's class, with its groups and compiled buckets in
///   its comment, and its factory;
/// - NAME + sourceExtension: each rule's workspace layout, state shapes and
///   (through `printStep`) step functions; the groups' `where` conditions;
///   the globals' functions (through `printGlobals`, when the optimizer has
///   globals); a compiled schedule; and makeSpec(), the tables the runtime
///   runs, then the class's constructor and its factory;
/// - NAME_runner.cpp: a main() replaying case files on the optimizer;
/// - CMakeLists.txt: the optimizer as a library (and its runner,
///   optionally) linking optgen's runtime as its CMake package finds it,
///   or its sources where the caller says (OPTGEN_RUNTIME_DIR).
/// Fails with a diagnostic at the op that cannot be printed.
mlir::LogicalResult emitHostFiles(OptimizerOp optimizer,
                                  const EmitOptions &options,
                                  const TargetSpelling &spelling,
                                  RuleStepPrinter printStep,
                                  GlobalsFunctionPrinter printGlobals,
                                  std::map<std::string, std::string> &files);

} // namespace optgen

#endif // OPTGEN_TARGET_HOST_HOSTCODE_H
