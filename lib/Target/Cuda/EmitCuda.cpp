//===- EmitCuda.cpp - CUDA C++ from executable optgen IR ------------------===//
//
// A read-only walk over executable IR, the CPU printer's peer. Host code
// (state shapes, `where` conditions, workspace layouts, the spec tables the
// runtime runs, the class header) is the CPU printer's host part, shared
// (EmitCpu.h); this file prints what runs on the GPU: each rule as one
// `launch_RULE(const DeviceCall &)` that enqueues one kernel per
// `optgen.kernel` on the caller's stream, every kernel covering every
// parameter of the call at once (blockIdx.y is the member), with 16-byte
// vector loads where each member's pointers allow them.
//
// Scalar math outside kernels (hyperparameters, step counts, bias
// corrections) reads device memory, so that a step captured in a CUDA graph
// sees new values: each kernel computes the scalars it uses in its own
// prologue, per thread, from `call.hypers` and `call.steps`.
//
// This first CUDA printer prints elementwise rules: kernels of elementwise
// math over whole tensors, written in place into the parameter and its
// states. A rule needing more (reductions, matrix products, shape queries,
// control flow, workspace) is an error at the op that needs it.
//
//===----------------------------------------------------------------------===//

#include "optgen/Target/Cuda/EmitCuda.h"

#include "optgen/Target/CFamily/Expressions.h"
#include "optgen/Target/CFamily/Names.h"
#include "optgen/Target/CFamily/SourceInfo.h"
#include "optgen/Target/Cpu/EmitCpu.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace optgen;

namespace {

/// Threads per block of an elementwise kernel, and the elements each thread
/// handles per pass (a 16-byte vector of f32).
constexpr int kBlockThreads = 256;
constexpr int kVectorWidth = 4;
/// At most this many blocks per member: past it threads loop (grid-stride),
/// which keeps the grid bounded for huge tensors.
constexpr int kMaxBlocksPerMember = 1024;

bool isTensor(Value v) { return isa<SymbolicTensorType>(v.getType()); }

/// The error for IR this printer does not print yet, at `op`.
InFlightDiagnostic unsupported(Operation *op, const Twine &what) {
  return op->emitError("the CUDA printer does not print ")
         << what
         << " yet: it prints elementwise rules (kernels of elementwise math "
            "written in place into the parameter and its states)";
}

class CudaRuleEmitter {
public:
  CudaRuleEmitter(raw_ostream &os, const CpuEmitOptions &options, RuleOp rule)
      : os(os), options(options), rule(rule),
        ident(legalIdentifier(rule.getSymName())) {}

  /// Prints the rule's kernels and its launch function, and names the
  /// latter in `step`.
  LogicalResult emit(RuleStepFunctions &step);

private:
  raw_ostream &os;
  const CpuEmitOptions &options;
  RuleOp rule;
  std::string ident;
  SmallVector<KernelOp> kernels;
  SmallVector<std::string> kernelNames;

  LogicalResult check();
  LogicalResult checkKernel(KernelOp kernel);
  LogicalResult emitKernel(KernelOp kernel, StringRef kernelName);
  void emitLaunch();
};

LogicalResult CudaRuleEmitter::check() {
  auto workspace = rule->getAttrOfType<ArrayAttr>("optgen.workspace");
  if (!workspace)
    return rule.emitError("the CUDA printer needs the rule's buffers; run "
                          "--optgen-assign-buffers first");
  for (Operation &op : rule.getBlock()) {
    LogicalResult result =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](HyperOp hyper) -> LogicalResult {
              if (!hyper.getOffset())
                return hyper.emitError(
                    "the CUDA printer needs the hyperparameters' offsets; "
                    "run --optgen-assign-hyper-offsets first");
              return success();
            })
            .Case([&](StateOp state) -> LogicalResult {
              if (!isTensor(state) || state.getAxis())
                return unsupported(state, "a scalar or reduced state");
              return success();
            })
            .Case<TupleGetOp, ConstantOp, StepOp>(
                [](Operation *) { return success(); })
            .Case([&](KernelOp kernel) { return checkKernel(kernel); })
            .Case([&](UpdateOp update) -> LogicalResult {
              // In place: each new value already lives where it is kept.
              SmallVector<StateOp> states = getRuleStates(rule);
              if (getBuffer(update.getParam()) !=
                  BufferAttr::get(rule.getContext(), BufferKind::param, 0))
                return unsupported(update, "a parameter update that is not "
                                           "written in place");
              for (auto [i, value] : llvm::enumerate(update.getStates()))
                if (getBuffer(value) !=
                    BufferAttr::get(rule.getContext(), BufferKind::state, i))
                  return unsupported(update, "a state update that is not "
                                             "written in place");
              return success();
            })
            .Default([&](Operation *other) -> LogicalResult {
              if (other->hasTrait<ElementwiseMath>() &&
                  !isTensor(other->getResult(0)))
                return success();
              return unsupported(other, "'" + other->getName().getStringRef() +
                                            "' outside a kernel");
            });
    if (failed(result))
      return failure();
  }
  if (!workspace.empty())
    return unsupported(rule, "a rule with workspace temporaries");
  return success();
}

LogicalResult CudaRuleEmitter::checkKernel(KernelOp kernel) {
  SymbolicTensorType space = kernel.getIterationSpace();
  auto param = cast<SymbolicTensorType>(rule.getParam().getType());
  if (space != param)
    return unsupported(kernel, "a kernel over other than the parameter's "
                               "elements");
  for (Operation &op : kernel.getBody().front()) {
    if (isa<YieldOp>(op))
      continue;
    if (!op.hasTrait<ElementwiseMath>())
      return unsupported(&op, "'" + op.getName().getStringRef() +
                                  "' inside a kernel");
    for (Value operand : op.getOperands())
      if (isTensor(operand) && operand.getType() != space)
        return unsupported(&op, "a broadcast operand");
  }
  for (auto [result, buffer] :
       llvm::zip(kernel.getResults(),
                 kernel->getAttrOfType<ArrayAttr>("optgen.buffers"))) {
    auto memory = dyn_cast<BufferAttr>(buffer);
    if (!memory || memory.getKind() == BufferKind::workspace ||
        memory.getKind() == BufferKind::grad)
      return unsupported(kernel, "a kernel result outside the parameter and "
                                 "its states");
  }
  kernels.push_back(kernel);
  return success();
}

/// The device expression of the memory `buffer` names for the call's
/// `member`.
std::string pointerOf(BufferAttr buffer) {
  switch (buffer.getKind()) {
  case BufferKind::param:
    return "call.params[member]";
  case BufferKind::grad:
    return "call.grads[member]";
  case BufferKind::state:
    return "call.states[call.members * " +
           std::to_string(buffer.getIndex()) + " + member]";
  case BufferKind::workspace:
    break;
  }
  return "";
}

LogicalResult CudaRuleEmitter::emitKernel(KernelOp kernel,
                                          StringRef kernelName) {
  NameTable names;
  llvm::DenseMap<Value, std::string> exprs;
  unsigned indent = 1;
  auto line = [&]() -> raw_ostream & {
    for (unsigned i = 0; i < indent; ++i)
      os << "  ";
    return os;
  };
  unsigned lastLine = 0;
  auto noteSource = [&](Operation *op) {
    std::optional<FileLineColLoc> file = fileLocation(op->getLoc());
    if (!file || file->getLine() == lastLine)
      return;
    lastLine = file->getLine();
    std::string text =
        options.sourceLine ? options.sourceLine(lastLine) : std::string();
    line() << "// " << options.specName << ":" << lastLine;
    if (!text.empty())
      os << ": " << commentText(text);
    os << "\n";
  };
  auto nameFor = [&](Value value, StringRef fallback) {
    std::optional<StringRef> spec = specName(value);
    return names.unique(spec ? *spec : fallback);
  };

  // The scalars the kernel reads, and the scalars those are computed from,
  // in the rule's order.
  llvm::SetVector<Operation *> scalarOps;
  SmallVector<Value> worklist;
  kernel.walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (!isTensor(operand) && !kernel->isAncestor(operand.getParentRegion()->getParentOp()))
        worklist.push_back(operand);
  });
  llvm::SmallPtrSet<Operation *, 16> needed;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (!def || !needed.insert(def).second)
      continue;
    for (Value operand : def->getOperands())
      worklist.push_back(operand);
  }
  for (Operation &op : rule.getBlock())
    if (needed.contains(&op))
      scalarOps.insert(&op);

  // Tensors read from above, in order of first use, and where they live.
  llvm::SetVector<Value> inputs;
  kernel.walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (isTensor(operand) &&
          !kernel->isAncestor(operand.getParentRegion()->getParentOp()))
        inputs.insert(operand);
  });

  std::vector<unsigned> lines = specLines(kernel.getLoc());
  os << "// Kernel of rule '" << commentText(rule.getSymName())
     << "': one pass over every element of every member, from spec line"
     << (lines.size() > 1 ? "s" : "");
  for (unsigned l : lines)
    os << " " << l;
  os << ".\n";
  os << "__global__ void __launch_bounds__(" << kBlockThreads << ") "
     << kernelName << "(const optgen::runtime::DeviceCall call) {\n";
  line() << "const int member = static_cast<int>(blockIdx.y);\n";
  line() << "const int64_t n = call.numels[member];\n";

  // Prologue: the scalars, per thread, from device memory.
  for (Operation *op : scalarOps) {
    LogicalResult result =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](ConstantOp constant) {
              exprs[constant] = constantExpression(constant.getValue());
              return success();
            })
            .Case([&](HyperOp hyper) {
              if (isa<TupleType>(hyper.getType())) {
                exprs[hyper] = std::to_string(*hyper.getOffset());
                return success();
              }
              noteSource(hyper);
              std::string name = names.unique(hyper.getName());
              line() << "const " << cType(hyper.getType()) << " " << name
                     << " = static_cast<" << cType(hyper.getType())
                     << ">(call.hypers[" << *hyper.getOffset() << "]);\n";
              exprs[hyper] = name;
              return success();
            })
            .Case([&](TupleGetOp get) {
              auto hyper = get.getTuple().getDefiningOp<HyperOp>();
              noteSource(hyper);
              int64_t offset = *hyper.getOffset() + get.getIndex();
              std::string name = names.unique(hyper.getName().str() + "_" +
                                              std::to_string(get.getIndex()));
              line() << "const " << cType(get.getType()) << " " << name
                     << " = static_cast<" << cType(get.getType())
                     << ">(call.hypers[" << offset << "]);\n";
              exprs[get] = name;
              return success();
            })
            .Case([&](StepOp step) {
              std::string name = names.unique("step");
              line() << "const int64_t " << name
                     << " = call.steps[member];\n";
              exprs[step] = name;
              return success();
            })
            .Default([&](Operation *math) -> LogicalResult {
              noteSource(math);
              SmallVector<std::string> operands;
              for (Value v : math->getOperands())
                operands.push_back(exprs.lookup(v));
              std::string expr = elementExpression(math, operands);
              if (expr.empty())
                return unsupported(math, "this scalar op");
              Value result = math->getResult(0);
              std::string name = nameFor(result, "s");
              line() << "const " << cType(result.getType()) << " " << name
                     << " = " << expr << ";\n";
              exprs[result] = name;
              return success();
            });
    if (failed(result))
      return failure();
  }

  // The members' memory: each input, and each result's buffer.
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
  auto buffers = kernel->getAttrOfType<ArrayAttr>("optgen.buffers");
  llvm::DenseMap<Attribute, std::string> pointers; // buffer -> variable
  SmallVector<std::string> inputPointers, outputPointers;
  auto pointerFor = [&](BufferAttr buffer, StringRef base, bool written) {
    auto [it, inserted] = pointers.try_emplace(buffer, "");
    if (inserted) {
      it->second = names.unique(base);
      line() << (written || buffer.getKind() != BufferKind::grad
                     ? "float *const "
                     : "const float *const ")
             << it->second << " = " << pointerOf(buffer) << ";\n";
    }
    return it->second;
  };
  // A member's memory is named after what the rule calls it: its inputs'
  // names for the parameter and gradient, the states' own names.
  auto bufferName = [&](BufferAttr buffer) -> std::string {
    switch (buffer.getKind()) {
    case BufferKind::param:
      return cast<StringAttr>(rule.getInputs()[0]).getValue().str();
    case BufferKind::grad:
      return cast<StringAttr>(rule.getInputs()[1]).getValue().str();
    case BufferKind::state:
      return getRuleStates(rule)[buffer.getIndex()].getName().str();
    case BufferKind::workspace:
      break;
    }
    return "workspace";
  };
  for (Value input : inputs) {
    BufferAttr buffer = getBuffer(input);
    inputPointers.push_back(pointerFor(buffer, bufferName(buffer), false));
  }
  for (Attribute buffer : buffers) {
    auto memory = cast<BufferAttr>(buffer);
    outputPointers.push_back(
        pointerFor(memory, bufferName(memory), /*written=*/true));
  }

  // One element: inputs by value, results by reference, so that the vector
  // loop and the remainder share one body.
  line() << "// One element: the inputs' values in, the results out.\n";
  line() << "auto element = [&](";
  SmallVector<std::string> inputNames, outputNames;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    inputNames.push_back(names.unique(inputPointers[i] + "_in"));
    os << (i ? ", " : "") << "const float " << inputNames.back();
    exprs[input] = inputNames.back();
  }
  for (auto [i, pointer] : llvm::enumerate(outputPointers)) {
    outputNames.push_back(names.unique(pointer + "_out"));
    os << ", float &" << outputNames.back();
  }
  os << ") {\n";
  ++indent;
  lastLine = 0;
  for (Operation &op : kernel.getBody().front()) {
    if (isa<YieldOp>(op))
      continue;
    noteSource(&op);
    SmallVector<std::string> operands;
    for (Value v : op.getOperands())
      operands.push_back(exprs.lookup(v));
    std::string expr = elementExpression(&op, operands);
    if (expr.empty())
      return unsupported(&op, "this op inside a kernel");
    Value result = op.getResult(0);
    std::string name = nameFor(result, "e");
    Type element = getElementTypeOrSelf(result.getType());
    line() << "const " << cType(element) << " " << name << " = " << expr
           << ";\n";
    exprs[result] = name;
  }
  for (auto [name, value] : llvm::zip(outputNames, yield.getValues()))
    line() << name << " = " << exprs.lookup(value) << ";\n";
  --indent;
  line() << "};\n";

  // Every member's elements: 16-byte vectors where every pointer of the
  // member is aligned to them, then the remainder one at a time.
  SmallVector<std::string> allPointers;
  for (auto [buffer, pointer] : pointers)
    allPointers.push_back(pointer);
  llvm::sort(allPointers);
  line() << "const int64_t first = int64_t{blockIdx.x} * blockDim.x + "
            "threadIdx.x;\n";
  line() << "const int64_t stride = int64_t{gridDim.x} * blockDim.x;\n";
  line() << "const bool aligned = ((";
  llvm::interleave(
      allPointers, os,
      [&](const std::string &p) { os << "reinterpret_cast<uintptr_t>(" << p << ")"; },
      " | ");
  os << ") % 16) == 0;\n";
  line() << "const int64_t vectors = aligned ? n / " << kVectorWidth
         << " : 0;\n";
  line() << "for (int64_t q = first; q < vectors; q += stride) {\n";
  ++indent;
  SmallVector<std::string> inputVectors, outputVectors;
  for (const std::string &pointer : inputPointers) {
    inputVectors.push_back(names.unique(pointer + "4"));
    line() << "const float4 " << inputVectors.back()
           << " = reinterpret_cast<const float4 *>(" << pointer << ")[q];\n";
  }
  line() << "float4 ";
  for (auto [i, pointer] : llvm::enumerate(outputPointers)) {
    outputVectors.push_back(names.unique(pointer + "4_out"));
    os << (i ? ", " : "") << outputVectors.back();
  }
  os << ";\n";
  for (const char *lane : {"x", "y", "z", "w"}) {
    line() << "element(";
    bool first = true;
    for (const std::string &v : inputVectors) {
      os << (first ? "" : ", ") << v << "." << lane;
      first = false;
    }
    for (const std::string &v : outputVectors)
      os << ", " << v << "." << lane;
    os << ");\n";
  }
  for (auto [pointer, vector] : llvm::zip(outputPointers, outputVectors))
    line() << "reinterpret_cast<float4 *>(" << pointer << ")[q] = " << vector
           << ";\n";
  --indent;
  line() << "}\n";
  line() << "for (int64_t k = vectors * " << kVectorWidth
         << " + first; k < n; k += stride) {\n";
  ++indent;
  SmallVector<std::string> outputScalars;
  line() << "float ";
  for (auto [i, pointer] : llvm::enumerate(outputPointers)) {
    outputScalars.push_back(names.unique(pointer + "_k"));
    os << (i ? ", " : "") << outputScalars.back();
  }
  os << ";\n";
  line() << "element(";
  bool first = true;
  for (const std::string &pointer : inputPointers) {
    os << (first ? "" : ", ") << pointer << "[k]";
    first = false;
  }
  for (const std::string &v : outputScalars)
    os << ", " << v;
  os << ");\n";
  for (auto [pointer, value] : llvm::zip(outputPointers, outputScalars))
    line() << pointer << "[k] = " << value << ";\n";
  --indent;
  line() << "}\n";
  os << "}\n\n";
  return success();
}

void CudaRuleEmitter::emitLaunch() {
  std::optional<FileLineColLoc> file = fileLocation(rule.getLoc());
  os << "// Rule '" << commentText(rule.getSymName()) << "'";
  if (file)
    os << ", " << options.specName << ":" << file->getLine();
  os << ": every member of the call, one launch per kernel.\n";
  os << "void launch_" << ident
     << "(const optgen::runtime::DeviceCall &call) {\n";
  os << "  if (call.members == 0)\n    return;\n";
  os << "  const int64_t perBlock = int64_t{" << kBlockThreads << "} * "
     << kVectorWidth << ";\n";
  os << "  const dim3 grid(static_cast<unsigned>(std::clamp<int64_t>("
        "(call.maxNumel + perBlock - 1) / perBlock, 1, "
     << kMaxBlocksPerMember << ")),\n"
     << "                 static_cast<unsigned>(call.members));\n";
  for (const std::string &kernel : kernelNames) {
    os << "  " << kernel << "<<<grid, " << kBlockThreads
       << ", 0, call.stream>>>(call);\n";
    os << "  OPTGEN_CUDA_CHECK(cudaGetLastError(), "
       << cppString("launching " + kernel) << ");\n";
  }
  os << "}\n\n";
}

LogicalResult CudaRuleEmitter::emit(RuleStepFunctions &step) {
  if (failed(check()))
    return failure();
  for (auto [i, kernel] : llvm::enumerate(kernels)) {
    kernelNames.push_back(ident + "_kernel" + std::to_string(i));
    if (failed(emitKernel(kernel, kernelNames.back())))
      return failure();
  }
  emitLaunch();
  step.launch = "launch_" + ident;
  return success();
}

} // namespace

LogicalResult optgen::emitCuda(OptimizerOp optimizer,
                               const CpuEmitOptions &options,
                               std::map<std::string, std::string> &files) {
  std::string name = legalIdentifier(optimizer.getSymName());
  files[name + ".h"] =
      emitOptimizerHeader(optimizer, options, "cuda",
                          "optgen/runtime/CudaOptimizer.h",
                          "optgen::runtime::CudaOptimizer");
  std::string source;
  if (failed(emitHostSource(
          optimizer, options, "cuda", "optgen::runtime::CudaOptimizer",
          [&](RuleOp rule, raw_ostream &os, std::vector<std::string> &,
              RuleStepFunctions &step) {
            return CudaRuleEmitter(os, options, rule).emit(step);
          },
          source)))
    return failure();
  files[name + ".cu"] = source;
  files[name + "_runner.cpp"] = emitRunnerSource(
      optimizer, options, "cuda", "optgen/runtime/CudaCaseRunner.h",
      "optgen::runtime::cudaRunnerMain");

  // The CMake file: a static library of the generated CUDA, linking the
  // runtime's cuda component. sm_90 code and compute_90 PTX unless the
  // project says otherwise; no fused multiply-adds, so that results round
  // as the CPU target's and the reference's do.
  std::string cmake;
  llvm::raw_string_ostream cos(cmake);
  cos << "# Generated by optgen from " << commentText(options.specName)
      << ". Builds the optimizer as the library `" << name << "`:\n"
      << "#   add_subdirectory(this-directory) and link " << name << ".\n"
      << "cmake_minimum_required(VERSION 3.20)\n"
      << "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)\n"
      << "  set(CMAKE_CUDA_ARCHITECTURES 90)\n"
      << "endif()\n"
      << "project(" << name << " LANGUAGES CXX CUDA)\n\n"
      << "set(OPTGEN_RUNTIME_DIR \"" << options.runtimeDir
      << "\"\n    CACHE PATH \"optgen's runtime sources\")\n"
      << "if(NOT TARGET optgen_runtime_cuda_all)\n"
      << "  add_subdirectory(${OPTGEN_RUNTIME_DIR} optgen_runtime)\n"
      << "endif()\n\n"
      << "add_library(" << name << " STATIC " << name << ".cu)\n"
      << "target_include_directories(" << name
      << " PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\n"
      << "target_compile_features(" << name << " PUBLIC cxx_std_17)\n"
      << "target_compile_options(" << name
      << " PRIVATE --fmad=false -Werror=all-warnings\n"
      << "  -Xcompiler=-Wall,-Wextra)\n"
      << "target_link_libraries(" << name
      << " PUBLIC optgen_runtime_cuda_all)\n\n"
      << "option(OPTGEN_BUILD_RUNNER \"Build " << name
      << "_runner, which replays case files on the GPU\" OFF)\n"
      << "if(OPTGEN_BUILD_RUNNER)\n"
      << "  add_executable(" << name << "_runner " << name << "_runner.cpp)\n"
      << "  target_link_libraries(" << name << "_runner PRIVATE " << name
      << ")\n"
      << "endif()\n";
  files["CMakeLists.txt"] = cmake;
  return success();
}
