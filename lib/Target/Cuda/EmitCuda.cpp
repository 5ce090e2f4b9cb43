//===- EmitCuda.cpp - CUDA C++ from executable optgen IR ------------------===//
//
// A read-only walk over executable IR, the CPU printer's peer. Host code
// (state shapes, `where` conditions, workspace layouts, the spec tables the
// runtime runs, the class header, the runner) is every target's
// (Target/Host/HostCode.h); this file prints what runs on the GPU: each rule
// as one `launch_RULE(const DeviceCall &)` that enqueues, on the caller's
// stream, the launches of each `optgen.kernel`, every launch covering every
// parameter of the call at once (the grid's y and z index the members:
// DeviceCall.h's memberGrid).
//
// Scalar math outside kernels (hyperparameters, step counts, bias
// corrections, values derived from reductions) reads device memory, so that
// a step captured in a CUDA graph sees new values: each kernel computes the
// scalars it uses in its own prologue, per thread.
//
// Two kinds of rules:
//  - elementwise rules (`*` parameters) step members of any shapes: one
//    grid-stride loop per kernel over each member's elements, with 16-byte
//    vectors where the member's pointers allow them;
//  - other rules step members of one shape (rows x cols on the host): each
//    `optgen.launch` of a kernel (optgen-split-launches decided them, and
//    optgen-assign-launch-shapes their grids) is a CUDA kernel over its
//    space, its rows or its columns that reads broadcast inputs by index,
//    keeps its temporaries in the workspace slots the IR gave them, and
//    reduces deterministically (a full reduction as one partial sum per
//    block, finished in a fixed order by its `finish` launch).
// The host part prints the rule's matrix products, table loops and branches
// around the launches; what the printer does not print is an error at the
// op that needs it.
//
//===----------------------------------------------------------------------===//

#include "optgen/Target/Cuda/EmitCuda.h"

#include "dialect/TargetDescription.h"
#include "optgen/Target/CFamily/Expressions.h"
#include "optgen/Target/CFamily/Globals.h"
#include "optgen/Target/CFamily/Names.h"
#include "optgen/Target/CFamily/SourceInfo.h"
#include "optgen/Target/CFamily/StatementPrinter.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace optgen;

namespace {

bool isTensor(Value v) { return isa<SymbolicTensorType>(v.getType()); }

/// A kernel's first statement: the member its block steps (memberGrid puts
/// members beyond gridDim.y's limit in z), and the end of a block of the
/// last slab of members that has none.
void printMember(raw_ostream &os) {
  os << "const int member = static_cast<int>(blockIdx.z * gridDim.y + "
        "blockIdx.y);\n";
  os << "  if (member >= call.members)\n    return;\n";
}

/// The error for IR this printer does not print yet, at `op`.
InFlightDiagnostic unsupported(Operation *op, const Twine &what) {
  return op->emitError("the CUDA printer does not print ")
         << what
         << " yet: it prints kernels of elementwise math and reductions, "
            "matrix products of workspace tensors, table loops and branches "
            "decided on the host";
}

/// Which launch of a kernel: over its whole space (tensor results, full
/// reductions), or once per reduced row or column.
enum class Pass { Space, Rows, Cols };

class CudaRuleEmitter {
public:
  CudaRuleEmitter(raw_ostream &os, const EmitOptions &options, RuleOp rule,
                  std::vector<std::string> &tables)
      : os(os), options(options), rule(rule),
        ident(legalIdentifier(rule.getSymName())),
        elementwise(isElementwiseRule(rule)), tables(tables),
        host(os, options.specName, options.sourceLine) {}

  /// Prints the rule's kernels and its launch function, and names the
  /// latter in `step`.
  LogicalResult emit(RuleStepFunctions &step);

private:
  raw_ostream &os;
  const EmitOptions &options;
  RuleOp rule;
  std::string ident;
  /// Members of any shapes (elementwise), or of one shape.
  bool elementwise;
  ArrayAttr workspace;
  SmallVector<KernelOp> kernels;
  /// File-scope constants (loop tables), printed before the functions.
  std::vector<std::string> &tables;
  /// An elementwise rule's kernels' launches, built while they are printed.
  llvm::DenseMap<Operation *, std::string> launches;
  /// A rule of one shape's launches as the host program launches them: the
  /// name of each launch's kernel (a `lines` launch's two append _rows and
  /// _cols), and each kernel's inputs broadcast along extents only the host
  /// knows (their rows and columns follow R and C among the parameters).
  llvm::DenseMap<Operation *, std::string> launchNames;
  llvm::DenseMap<Operation *, SmallVector<Value>> kernelOpenInputs;
  /// The host expressions of the scalars the launch function computes
  /// (those optgen-place-scalars marked optgen.on_host).
  llvm::DenseMap<Value, std::string> hostExprs;
  /// The launch function's statements: its names, indentation and spec
  /// lines.
  StatementPrinter host;

  LogicalResult check();
  LogicalResult checkBlock(Block &block);
  LogicalResult checkKernel(KernelOp kernel);
  LogicalResult checkHostScalars();

  // Shapes: a dimension of a type as a C++ expression over `call`, valid on
  // host and device alike (DeviceCall's rows and cols are the members').
  std::string extent(Attribute dim);
  std::pair<std::string, std::string> rowsCols(SymbolicTensorType type);

  /// The pointer to `buffer`'s memory for the current member, in a kernel.
  std::string pointerOf(BufferAttr buffer);
  /// The element type memory of `buffer` holds: float, or a workspace
  /// slot's storage (double, __nv_bfloat16, __half).
  std::string storageOf(BufferAttr buffer);

  LogicalResult emitKernel(KernelOp kernel, unsigned index);
  LogicalResult emitElementwiseKernel(KernelOp kernel, StringRef name);
  LogicalResult emitShapedKernel(KernelOp kernel, StringRef name);
  /// A finish launch: the full reductions' partial sums combined.
  void emitFinish(LaunchOp finish, StringRef name, StringRef extentParams);
  /// A store launch: a new parameter or state copied where it is kept.
  void emitStore(LaunchOp store, StringRef name);

  void emitLaunch();
  /// The launch function's statements for `block`: host scalars, kernel
  /// launches, matrix products, loops, branches, copies between buffers.
  void emitHostBlock(Block &block, unsigned indent);
  /// The batch of `value`'s matrices as a DeviceMatrices initializer.
  std::string matricesOf(Value value);
  /// `value`'s rows and columns as host expressions of the launch function,
  /// also where its type leaves them open (a reduction along an axis the
  /// host computes).
  std::pair<std::string, std::string> hostExtents(Value value);
  std::pair<std::string, std::string> spaceExtents(KernelOp kernel);
  /// A scalar's expression in the launch function.
  std::string hostScalar(Value value);
  void printLaunches(KernelOp kernel, unsigned indent);
};

LogicalResult CudaRuleEmitter::check() {
  workspace = rule->getAttrOfType<ArrayAttr>(kWorkspaceAttr);
  if (!workspace)
    return rule.emitError("the CUDA printer needs the rule's buffers; run "
                          "--optgen-assign-buffers first");
  if (failed(checkBlock(rule.getBlock())))
    return failure();
  if (elementwise && !workspace.empty())
    return unsupported(rule, "an elementwise rule with workspace temporaries");
  return checkHostScalars();
}

LogicalResult CudaRuleEmitter::checkBlock(Block &block) {
  bool top = &block == &rule.getBlock();
  for (Operation &op : block) {
    LogicalResult result =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](StateOp state) -> LogicalResult {
              if (!isTensor(state))
                return unsupported(state, "a scalar state");
              return success();
            })
            .Case<HyperOp, TupleGetOp, ConstantOp, StepOp, GlobalValueOp,
                  YieldOp>(
                [](Operation *) { return success(); })
            .Case<DimOp, NumelOp, NDimOp>([&](Operation *query) {
              if (elementwise)
                return LogicalResult(unsupported(
                    query, "a shape query in an elementwise rule"));
              return success();
            })
            .Case([&](KernelOp kernel) -> LogicalResult {
              // A kernel reads its scalars from device memory: those of the
              // rule's body, not a loop's table row or a branch's value.
              if (!top) {
                bool nestedScalar = false;
                kernel.walk([&](Operation *inner) {
                  for (Value operand : inner->getOperands())
                    if (!isTensor(operand) &&
                        !kernel->isAncestor(
                            operand.getParentRegion()->getParentOp()) &&
                        operand.getParentBlock() != &rule.getBlock())
                      nestedScalar = true;
                });
                if (nestedScalar)
                  return unsupported(kernel, "a kernel inside a loop or "
                                             "branch reading its scalars");
              }
              return checkKernel(kernel);
            })
            .Case([&](GemmOp gemm) -> LogicalResult {
              for (Value operand : gemm->getOperands())
                if (isTensor(operand) &&
                    getBuffer(operand).getKind() != BufferKind::workspace)
                  return unsupported(gemm, "a matrix product of memory other "
                                           "than the workspace");
              if (getBuffer(gemm).getKind() != BufferKind::workspace)
                return unsupported(gemm, "a matrix product into memory other "
                                         "than the workspace");
              return success();
            })
            .Case([&](ForTableOp loop) -> LogicalResult {
              for (Value result : loop.getResults())
                if (!isTensor(result) ||
                    getBuffer(result).getKind() != BufferKind::workspace)
                  return unsupported(loop, "a loop carrying other than "
                                           "workspace tensors");
              return checkBlock(loop.getBody().front());
            })
            .Case([&](IfOp branch) -> LogicalResult {
              for (Value result : branch.getResults())
                if (!isTensor(result) ||
                    getBuffer(result).getKind() != BufferKind::workspace)
                  return unsupported(branch, "a branch giving other than "
                                             "workspace tensors");
              if (failed(checkBlock(branch.getThenRegion().front())))
                return failure();
              return checkBlock(branch.getElseRegion().front());
            })
            .Case([&](UpdateOp update) -> LogicalResult {
              // Each new value is stored where it is kept: in place, or
              // (a rule of one shape) by a copy.
              if (!elementwise)
                return success();
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
  return success();
}

LogicalResult CudaRuleEmitter::checkHostScalars() {
  // The host computes what optgen-place-scalars marked, and nothing else.
  LogicalResult placed = success();
  forEachHostDecision(rule, [&](Value value) {
    Operation *def = value.getDefiningOp();
    if (succeeded(placed) && def && !def->hasAttr(kOnHostAttr))
      placed = def->emitError("the CUDA printer needs the host's scalars "
                              "placed; run --optgen-place-scalars first");
  });
  return placed;
}

LogicalResult CudaRuleEmitter::checkKernel(KernelOp kernel) {
  SymbolicTensorType space = kernel.getIterationSpace();
  auto param = cast<SymbolicTensorType>(rule.getParam().getType());
  if (elementwise && space != param)
    return unsupported(kernel, "a kernel over other than the parameter's "
                               "elements in an elementwise rule");
  auto buffers = kernel->getAttrOfType<ArrayAttr>(kBuffersAttr);
  if (!buffers)
    return kernel.emitError("the CUDA printer needs the kernel's buffers; run "
                            "--optgen-assign-buffers first");
  // A parameter of any rank is seen as rows x cols; a ranked tensor has at
  // most two dimensions.
  if (!space.getAnyRank() && space.getRank() > 2)
    return unsupported(kernel, "a kernel over more than two dimensions");
  if (!kernel.isSplitIntoLaunches())
    return kernel.emitError("the CUDA printer needs the kernel's launches; "
                            "run --optgen-split-launches first");
  auto launches = kernel.getBody().front().getOps<LaunchOp>();
  if (elementwise &&
      (std::distance(launches.begin(), launches.end()) != 1 ||
       (*launches.begin()).getKind() != LaunchKind::space))
    return unsupported(kernel, "an elementwise rule's kernel in other than "
                               "one launch over its space");

  for (LaunchOp launch : launches) {
    LaunchShapeAttr shape = launch.getShapeAttr();
    if (!shape)
      return launch.emitError("the CUDA printer needs the launch's shape; run "
                              "--optgen-assign-launch-shapes first");
    // An elementwise kernel moves float4 vectors (and its remainder one
    // float at a time).
    if (elementwise && shape.getPerThread() != 4)
      return unsupported(launch, "an elementwise kernel moving other than 4 "
                                 "floats per thread");
    for (Operation &op : launch.getBody().front()) {
      if (isa<YieldOp>(op))
        continue;
      if (auto reduce = dyn_cast<ReduceOp>(op)) {
        if (elementwise)
          return unsupported(reduce, "a reduction in an elementwise rule");
        // The kernels and blockReduce accumulate in float: a wider
        // accumulator (a host target's) would be computed narrower than the
        // IR says.
        if (!reduce.getAccumulator() || !reduce.getAccumulator()->isF32())
          return reduce.emitError("the CUDA printer accumulates reductions in "
                                  "f32; run --optgen-set-accumulators for a "
                                  "target whose accumulator is f32");
        if (reduce.getAxis() && !constantInt(reduce.getAxis()) &&
            reduce.getAxis().getParentBlock() != &rule.getBlock())
          return unsupported(reduce, "a reduction along an axis computed inside "
                                     "a loop or branch");
        if (!reduce.getAxis() &&
            !dyn_cast_or_null<BufferAttr>(
                reduce->getAttrOfType<ArrayAttr>(kBuffersAttr)
                    ? reduce->getAttrOfType<ArrayAttr>(kBuffersAttr)[0]
                    : Attribute()))
          return reduce.emitError("the CUDA printer needs the partial sums' "
                                  "slot; run --optgen-assign-device-scalars "
                                  "first");
        for (Operation *user : reduce->getUsers())
          if (!isa<YieldOp>(user))
            return unsupported(user, "a reduction's value used inside its "
                                     "kernel");
        continue;
      }
      if (!op.hasTrait<ElementwiseMath>())
        return unsupported(&op, "'" + op.getName().getStringRef() +
                                    "' inside a kernel");
      for (Value operand : op.getOperands())
        if (isTensor(operand) && elementwise && operand.getType() != space)
          return unsupported(&op, "a broadcast operand in an elementwise rule");
    }
  }
  for (auto [result, buffer] : llvm::zip(kernel.getResults(), buffers)) {
    auto memory = dyn_cast<BufferAttr>(buffer);
    if (!memory)
      return kernel.emitError("the CUDA printer needs every kernel result in "
                              "memory; run --optgen-assign-device-scalars "
                              "first");
    if (memory.getKind() == BufferKind::grad)
      return kernel.emitError("a kernel result in the gradient");
  }
  kernels.push_back(kernel);
  return success();
}

std::string CudaRuleEmitter::extent(Attribute dim) {
  if (auto size = dyn_cast<IntegerAttr>(dim))
    return "int64_t{" + std::to_string(size.getInt()) + "}";
  // A symbol is one of the parameter's dimensions: the members' rows, or
  // their columns (a vector's only dimension is its columns).
  auto param = cast<SymbolicTensorType>(rule.getParam().getType());
  ArrayRef<Attribute> dims = param.getDims();
  auto at = llvm::find(dims, dim);
  return dims.size() == 2 && at == dims.begin() ? "call.rows" : "call.cols";
}

std::pair<std::string, std::string>
CudaRuleEmitter::rowsCols(SymbolicTensorType type) {
  if (type.getAnyRank())
    return {"call.rows", "call.cols"};
  ArrayRef<Attribute> dims = type.getDims();
  if (dims.empty())
    return {"int64_t{1}", "int64_t{1}"};
  if (dims.size() == 1)
    return {"int64_t{1}", extent(dims[0])};
  return {extent(dims[0]), extent(dims[1])};
}

std::string CudaRuleEmitter::pointerOf(BufferAttr buffer) {
  std::string index = std::to_string(buffer.getIndex());
  switch (buffer.getKind()) {
  case BufferKind::param:
    return "call.params[member]";
  case BufferKind::grad:
    return "call.grads[member]";
  case BufferKind::state:
    return "call.states[call.members * " + index + " + member]";
  case BufferKind::workspace: {
    std::string storage = storageOf(buffer);
    if (storage != "float")
      return "reinterpret_cast<" + storage + " *>(workspace + slots.at[" +
             index + "])";
    return "(workspace + slots.at[" + index + "])";
  }
  }
  return "";
}

std::string CudaRuleEmitter::storageOf(BufferAttr buffer) {
  if (buffer.getKind() != BufferKind::workspace)
    return "float";
  Type storage = cast<SlotAttr>(workspace[buffer.getIndex()]).getStorage();
  if (storage.isF64())
    return "double";
  if (storage.isBF16())
    return "__nv_bfloat16";
  if (storage.isF16())
    return "__half";
  return "float";
}

/// `element`, an element of memory holding `storage` (storageOf), as a
/// float.
std::string loadedAs(StringRef storage, const std::string &element) {
  if (storage == "__nv_bfloat16")
    return "__bfloat162float(" + element + ")";
  if (storage == "__half")
    return "__half2float(" + element + ")";
  return "static_cast<float>(" + element + ")";
}

/// `value`, a float, as an element of memory holding `storage`: exact for
/// a value of the storage's type (held rounded in f32).
std::string storedAs(StringRef storage, const std::string &value) {
  if (storage == "__nv_bfloat16")
    return "__float2bfloat16_rn(" + value + ")";
  if (storage == "__half")
    return "__float2half_rn(" + value + ")";
  return value;
}

/// A kernel's body printed as statements (StatementPrinter) with the
/// expressions of its values.
struct BodyPrinter : StatementPrinter {
  BodyPrinter(raw_ostream &os, const EmitOptions &options)
      : StatementPrinter(os, options.specName, options.sourceLine) {}

  llvm::DenseMap<Value, std::string> exprs;

  /// Prints elementwise `op` of a kernel body on `operands` (its operands'
  /// expressions at the current element) as a named constant; returns the
  /// name, or empty after a diagnostic.
  std::string element(Operation &op, ArrayRef<std::string> operands) {
    noteSource(&op);
    std::string name = printMath(&op, operands, "e");
    if (name.empty())
      unsupported(&op, "this op inside a kernel");
    return name;
  }
};

/// The rule-level ops whose scalar values the kernel ops `ops` read, and
/// those they are computed from, in the rule's order; a kernel's result is
/// read from its slot, not recomputed.
SmallVector<Operation *> scalarSlice(RuleOp rule, KernelOp kernel,
                                     const llvm::SmallPtrSetImpl<Operation *> &ops) {
  SmallVector<Value> worklist;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (!isTensor(operand) &&
          !kernel->isAncestor(operand.getParentRegion()->getParentOp()))
        worklist.push_back(operand);
  llvm::SmallPtrSet<Operation *, 16> needed;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (!def || !needed.insert(def).second || isa<KernelOp>(def))
      continue;
    for (Value operand : def->getOperands())
      if (!isTensor(operand) || isa<DimOp, NumelOp, NDimOp>(def))
        worklist.push_back(operand);
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : rule.getBlock())
    if (needed.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

LogicalResult CudaRuleEmitter::emitKernel(KernelOp kernel, unsigned index) {
  std::string name = ident + "_kernel" + std::to_string(index);
  std::vector<unsigned> lines = specLines(kernel.getLoc());
  os << "// Kernel " << index << " of rule '" << commentText(rule.getSymName())
     << "', from spec line" << (lines.size() > 1 ? "s" : "");
  for (unsigned l : lines)
    os << " " << l;
  os << ".\n";
  return elementwise ? emitElementwiseKernel(kernel, name)
                     : emitShapedKernel(kernel, name);
}

/// Prints the prologue of a kernel: its scalars, per thread, from device
/// memory (hyperparameters, step counts, globals, earlier kernels' results)
/// and the members' shapes.
LogicalResult emitPrologue(BodyPrinter &p, RuleOp rule, KernelOp kernel,
                           const llvm::SmallPtrSetImpl<Operation *> &ops,
                           llvm::function_ref<std::string(Value)> slotOf,
                           llvm::function_ref<std::string(Value, Value)> dim,
                           llvm::function_ref<std::string(Value)> numel) {
  for (Operation *op : scalarSlice(rule, kernel, ops)) {
    std::optional<std::string> read = p.printScalarRead(op);
    if (!read)
      return failure();
    if (!read->empty()) {
      p.exprs[op->getResult(0)] = *read;
      continue;
    }
    LogicalResult result =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](StepOp step) {
              std::string name = p.names.unique("step");
              p.line() << "const int64_t " << name
                       << " = call.steps[member];\n";
              p.exprs[step] = name;
              return success();
            })
            .Case([&](KernelOp earlier) {
              // Its scalar results, from the slots they were stored in.
              for (Value result : earlier.getResults()) {
                if (isTensor(result))
                  continue;
                std::string name = p.nameFor(result, "r");
                p.line() << "const " << cType(result.getType()) << " " << name
                         << " = static_cast<" << cType(result.getType())
                         << ">(*" << slotOf(result) << ");\n";
                p.exprs[result] = name;
              }
              return success();
            })
            .Case([&](DimOp query) -> LogicalResult {
              p.noteSource(query);
              std::string name = p.nameFor(query, "size");
              p.line() << "const int64_t " << name << " = "
                       << dim(query.getInput(), query.getAxis()) << ";\n";
              p.exprs[query] = name;
              return success();
            })
            .Case([&](NumelOp query) {
              p.exprs[query] = "(" + numel(query.getInput()) + ")";
              return success();
            })
            .Case([&](NDimOp query) {
              auto type = cast<SymbolicTensorType>(query.getInput().getType());
              p.exprs[query] =
                  "int64_t{" + std::to_string(type.getRank()) + "}";
              return success();
            })
            .Default([&](Operation *math) -> LogicalResult {
              p.noteSource(math);
              SmallVector<std::string> operands;
              for (Value v : math->getOperands())
                operands.push_back(p.exprs.lookup(v));
              std::string name = p.printMath(math, operands, "s");
              if (name.empty())
                return unsupported(math, "this scalar op");
              p.exprs[math->getResult(0)] = name;
              return success();
            });
    if (failed(result))
      return failure();
  }
  return success();
}

/// The name a member's memory has in kernels: the rule's names for the
/// parameter and gradient, the states' own, the slot's number.
std::string bufferName(RuleOp rule, BufferAttr buffer) {
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
  return "slot" + std::to_string(buffer.getIndex());
}

/// The blocks per member of a launch over `elements` elements with
/// `shape`'s grid over the elements, as an expression on host and device.
static std::string strideBlocks(LaunchShapeAttr shape,
                                const std::string &elements) {
  return "optgen::runtime::strideBlocks(" + elements + ", " +
         std::to_string(shape.getThreads() * shape.getPerThread()) + ", " +
         std::to_string(shape.getMaxBlocks()) + ")";
}

/// The host's grid for a launch of `shape` (optgen-assign-launch-shapes')
/// running `grid` (its own, or one of a `lines` launch's two) over members
/// of `rows` x `cols` elements.
static std::string gridOf(LaunchShapeAttr shape, GridKind grid,
                          const std::string &rows, const std::string &cols) {
  std::string blocks;
  switch (grid) {
  case GridKind::elements:
    blocks = strideBlocks(shape, rows + " * " + cols);
    break;
  case GridKind::rows:
    blocks = rows;
    break;
  case GridKind::column_blocks: {
    int64_t threads = shape.getThreads();
    blocks = "(" + cols + " + " + std::to_string(threads - 1) + ") / " +
             std::to_string(threads);
    break;
  }
  case GridKind::lines:
    llvm_unreachable("a lines launch runs a rows or a column_blocks grid");
  case GridKind::members:
    blocks = "1";
    break;
  }
  return "optgen::runtime::memberGrid(static_cast<unsigned>(" + blocks +
         "), call.members)";
}

/// Tensors a kernel reads from above, in order of first use.
llvm::SetVector<Value> kernelInputs(KernelOp kernel) {
  llvm::SetVector<Value> inputs;
  kernel.walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (isTensor(operand) &&
          !kernel->isAncestor(operand.getParentRegion()->getParentOp()))
        inputs.insert(operand);
  });
  return inputs;
}

LogicalResult CudaRuleEmitter::emitElementwiseKernel(KernelOp kernel,
                                                     StringRef kernelName) {
  // Its one launch, over the members' elements (checkKernel).
  LaunchOp launch = *kernel.getBody().front().getOps<LaunchOp>().begin();
  Block &body = launch.getBody().front();
  LaunchShapeAttr shape = launch.getShapeAttr();
  const int64_t vectorWidth = shape.getPerThread();
  BodyPrinter p(os, options);
  os << "__global__ void __launch_bounds__(" << shape.getThreads() << ") "
     << kernelName << "(const optgen::runtime::DeviceCall call) {\n";
  printMember(p.line());
  p.line() << "const int64_t n = call.numels[member];\n";
  llvm::SmallPtrSet<Operation *, 16> everyOp;
  for (Operation &op : body)
    everyOp.insert(&op);
  if (failed(emitPrologue(
          p, rule, kernel, everyOp, [](Value) { return std::string(); },
          [](Value, Value) { return std::string(); },
          [](Value) { return std::string(); })))
    return failure();

  // The members' memory: each input, and each result's buffer, named as
  // the rule names it.
  llvm::SetVector<Value> inputs = kernelInputs(kernel);
  auto yield = cast<YieldOp>(body.getTerminator());
  auto buffers = kernel->getAttrOfType<ArrayAttr>(kBuffersAttr);
  llvm::DenseMap<Attribute, std::string> pointers; // buffer -> variable
  SmallVector<std::string> inputPointers, outputPointers;
  auto pointerFor = [&](BufferAttr buffer) {
    auto [it, inserted] = pointers.try_emplace(buffer, "");
    if (inserted) {
      it->second = p.names.unique(bufferName(rule, buffer));
      p.line() << (buffer.getKind() == BufferKind::grad ? "const float *const "
                                                        : "float *const ")
               << it->second << " = " << pointerOf(buffer) << ";\n";
    }
    return it->second;
  };
  for (Value input : inputs)
    inputPointers.push_back(pointerFor(getBuffer(input)));
  for (Attribute buffer : buffers)
    outputPointers.push_back(pointerFor(cast<BufferAttr>(buffer)));

  // One element: inputs by value, results by reference, so that the vector
  // loop and the remainder share one body.
  p.line() << "// One element: the inputs' values in, the results out.\n";
  p.line() << "auto element = [&](";
  SmallVector<std::string> outputNames;
  for (auto [i, input] : llvm::enumerate(inputs)) {
    std::string name = p.names.unique(inputPointers[i] + "_in");
    os << (i ? ", " : "") << "const float " << name;
    p.exprs[input] = name;
  }
  for (const std::string &pointer : outputPointers) {
    outputNames.push_back(p.names.unique(pointer + "_out"));
    os << ", float &" << outputNames.back();
  }
  os << ") {\n";
  ++p.indent;
  p.lastLine = 0;
  for (Operation &op : body) {
    if (isa<YieldOp>(op))
      continue;
    SmallVector<std::string> operands;
    for (Value v : op.getOperands())
      operands.push_back(p.exprs.lookup(v));
    std::string name = p.element(op, operands);
    if (name.empty())
      return failure();
    p.exprs[op.getResult(0)] = name;
  }
  for (auto [name, value] : llvm::zip(outputNames, yield.getValues()))
    p.line() << name << " = " << p.exprs.lookup(value) << ";\n";
  --p.indent;
  p.line() << "};\n";

  // Every member's elements: 16-byte vectors where every pointer of the
  // member is aligned to them, then the remainder one at a time.
  SmallVector<std::string> allPointers;
  for (auto [buffer, pointer] : pointers)
    allPointers.push_back(pointer);
  llvm::sort(allPointers);
  p.line() << "const int64_t first = int64_t{blockIdx.x} * blockDim.x + "
              "threadIdx.x;\n";
  p.line() << "const int64_t stride = int64_t{gridDim.x} * blockDim.x;\n";
  p.line() << "const bool aligned = ((";
  llvm::interleave(
      allPointers, os,
      [&](const std::string &ptr) {
        os << "reinterpret_cast<uintptr_t>(" << ptr << ")";
      },
      " | ");
  os << ") % 16) == 0;\n";
  p.line() << "const int64_t vectors = aligned ? n / " << vectorWidth
           << " : 0;\n";
  p.line() << "for (int64_t q = first; q < vectors; q += stride) {\n";
  ++p.indent;
  SmallVector<std::string> inputVectors, outputVectors;
  for (const std::string &pointer : inputPointers) {
    inputVectors.push_back(p.names.unique(pointer + "4"));
    p.line() << "const float4 " << inputVectors.back()
             << " = reinterpret_cast<const float4 *>(" << pointer
             << ")[q];\n";
  }
  p.line() << "float4 ";
  for (auto [i, pointer] : llvm::enumerate(outputPointers)) {
    outputVectors.push_back(p.names.unique(pointer + "4_out"));
    os << (i ? ", " : "") << outputVectors.back();
  }
  os << ";\n";
  for (const char *lane : {"x", "y", "z", "w"}) {
    p.line() << "element(";
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
    p.line() << "reinterpret_cast<float4 *>(" << pointer << ")[q] = " << vector
             << ";\n";
  --p.indent;
  p.line() << "}\n";
  p.line() << "for (int64_t k = vectors * " << vectorWidth
           << " + first; k < n; k += stride) {\n";
  ++p.indent;
  SmallVector<std::string> outputScalars;
  p.line() << "float ";
  for (auto [i, pointer] : llvm::enumerate(outputPointers)) {
    outputScalars.push_back(p.names.unique(pointer + "_k"));
    os << (i ? ", " : "") << outputScalars.back();
  }
  os << ";\n";
  p.line() << "element(";
  bool first = true;
  for (const std::string &pointer : inputPointers) {
    os << (first ? "" : ", ") << pointer << "[k]";
    first = false;
  }
  for (const std::string &v : outputScalars)
    os << ", " << v;
  os << ");\n";
  for (auto [pointer, value] : llvm::zip(outputPointers, outputScalars))
    p.line() << pointer << "[k] = " << value << ";\n";
  --p.indent;
  p.line() << "}\n";
  os << "}\n\n";

  llvm::raw_string_ostream ls(launches[kernel]);
  ls << "  optgen::runtime::launchKernel<" << kernelName
     << ">(optgen::runtime::memberGrid(static_cast<unsigned>("
     << strideBlocks(shape, "call.maxNumel") << "), call.members), "
     << shape.getThreads() << ", 0, call.stream, call);\n";
  ls << "  OPTGEN_CUDA_CHECK(cudaGetLastError(), "
     << cppString(("launching " + kernelName).str()) << ");\n";
  return success();
}

LogicalResult CudaRuleEmitter::emitShapedKernel(KernelOp kernel,
                                                StringRef kernelName) {
  SymbolicTensorType space = kernel.getIterationSpace();
  auto [R, C] = rowsCols(space);
  llvm::SetVector<Value> inputs = kernelInputs(kernel);
  auto slotOfResult = [&](Value result) {
    auto k = cast<KernelOp>(result.getDefiningOp());
    auto buffer = cast<BufferAttr>(k->getAttrOfType<ArrayAttr>(
        kBuffersAttr)[cast<OpResult>(result).getResultNumber()]);
    return pointerOf(buffer);
  };

  // Inputs broadcast along extents the host computes: theirs are
  // parameters of every launch of the kernel.
  SmallVector<Value> &openInputs = kernelOpenInputs[kernel];
  for (Value input : inputs) {
    auto type = cast<SymbolicTensorType>(input.getType());
    if (type != space && !type.getAnyRank() &&
        llvm::any_of(type.getDims(),
                     [](Attribute d) { return isa<UnitAttr>(d); }))
      openInputs.push_back(input);
  }
  std::string extentParams;
  for (size_t k = 0; k < openInputs.size(); ++k)
    extentParams += ", const int64_t rows" + std::to_string(k) +
                    ", const int64_t cols" + std::to_string(k);

  // Prints `launch` as a kernel: `pass` decides which elements a thread
  // visits and what it does with them.
  auto emitPass = [&](LaunchOp launch, Pass pass,
                      StringRef name) -> LogicalResult {
    Block &body = launch.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    auto buffers = launch->getAttrOfType<ArrayAttr>(kBuffersAttr);
    auto bufferOf = [&](Value yielded) {
      return cast<BufferAttr>(
          buffers[llvm::find(yield.getValues(), yielded) -
                  yield.getValues().begin()]);
    };
    const int64_t threads = launch.getShapeAttr().getThreads();
    BodyPrinter p(os, options);
    os << "__global__ void __launch_bounds__(" << threads << ") " << name
       << "(const optgen::runtime::DeviceCall call, const " << ident
       << "_slots slots,\n    const int64_t R, const int64_t C" << extentParams
       << ") {\n";
    for (size_t k = 0; k < openInputs.size(); ++k)
      p.line() << "static_cast<void>(rows" << k << ");\n";
    printMember(p.line());
    p.line() << "float *const workspace = call.workspace + member * "
                "call.workspacePerMember;\n";
    p.line() << "static_cast<void>(workspace);\n";
    auto dim = [&](Value tensor, Value axis) -> std::string {
      auto type = cast<SymbolicTensorType>(tensor.getType());
      auto [r, c] = type == space ? std::make_pair(std::string("R"),
                                                   std::string("C"))
                                  : rowsCols(type);
      if (type.getRank() != 2)
        return c;
      return extentAlong(constantInt(axis), p.exprs.lookup(axis), r, c);
    };
    auto numel = [&](Value tensor) {
      if (tensor.getType() == space)
        return std::string("R * C");
      auto [r, c] = rowsCols(cast<SymbolicTensorType>(tensor.getType()));
      return r + " * " + c;
    };
    // What this launch computes: the stores of the tensors it yields and
    // its reductions, from the slice of the kernel's body it holds.
    SmallVector<ReduceOp> mine;
    for (Value value : yield.getValues())
      if (auto reduce = value.getDefiningOp<ReduceOp>())
        mine.push_back(reduce);
    // (A reduction's axis is the launch's kind, not a scalar it reads.)
    llvm::SmallPtrSet<Operation *, 16> needed;
    for (Operation &op : body)
      if (!isa<ReduceOp>(op))
        needed.insert(&op);
    if (failed(emitPrologue(p, rule, kernel, needed, slotOfResult, dim,
                            numel)))
      return failure();
    p.line() << "static_cast<void>(R);\n";
    p.line() << "static_cast<void>(C);\n";

    // Memory: inputs and outputs as pointers of their storage.
    llvm::DenseMap<Attribute, std::string> pointers;
    auto pointerFor = [&](BufferAttr buffer) {
      auto [it, inserted] = pointers.try_emplace(buffer, "");
      if (inserted) {
        it->second = p.names.unique(bufferName(rule, buffer));
        std::string type = storageOf(buffer);
        p.line() << (buffer.getKind() == BufferKind::grad ? "const " : "")
                 << type << " *const " << it->second << " = "
                 << pointerOf(buffer) << ";\n";
      }
      return it->second;
    };
    // The element of `v` at (i, j) of the space: itself, or a broadcast
    // row or column, as its type says.
    auto load = [&](Value v) {
      std::string ptr = pointerFor(getBuffer(v));
      auto type = cast<SymbolicTensorType>(v.getType());
      auto [r, c] = rowsCols(type);
      bool rowsOne = r == "int64_t{1}", colsOne = c == "int64_t{1}";
      // A broadcast tensor is a column ([R, 1]), a row ([1, C]) or one
      // value: its type says which, or its extents do at run time.
      std::string at;
      auto open = llvm::find(openInputs, v);
      if (type == space || (r == R && c == C))
        at = ptr + "[i * C + j]";
      else if (open != openInputs.end()) {
        std::string k = std::to_string(open - openInputs.begin());
        at = ptr + "[(rows" + k + " == 1 ? 0 : i) * cols" + k + " + (cols" +
             k + " == 1 ? 0 : j)]";
      }
      else if (rowsOne && colsOne)
        at = ptr + "[0]";
      else if (colsOne)
        at = ptr + "[i]";
      else if (rowsOne)
        at = ptr + "[j]";
      else
        at = ptr + "[i * " + c + " + j]";
      if (getElementTypeOrSelf(type).isInteger(1))
        return "(" + at + " != 0.0f)";
      return loadedAs(storageOf(getBuffer(v)), at);
    };
    // Every pointer this launch reads or writes, declared before its loop.
    for (Value input : inputs)
      if (llvm::any_of(input.getUsers(), [&](Operation *user) {
            return needed.contains(user) ||
                   llvm::is_contained(mine, dyn_cast<ReduceOp>(user));
          }))
        pointerFor(getBuffer(input));
    struct Store {
      Value value;
      std::string pointer, storage;
    };
    SmallVector<Store> stores;
    if (pass == Pass::Space)
      for (auto [value, buffer] : llvm::zip(yield.getValues(), buffers))
        if (!value.getDefiningOp<ReduceOp>() && isTensor(value))
          stores.push_back({value, pointerFor(cast<BufferAttr>(buffer)),
                            storageOf(cast<BufferAttr>(buffer))});

    SmallVector<std::string> accs;
    for (ReduceOp reduce : mine) {
      std::string acc = p.names.unique("acc");
      std::string init = reduce.getKind() == ReduceKind::max
                             ? "-INFINITY"
                             : "0.0f";
      p.line() << "float " << acc << " = " << init << ";\n";
      accs.push_back(acc);
    }

    // The loop over this thread's elements.
    switch (pass) {
    case Pass::Space:
      // The row and column of the thread's first element, and how far a
      // step of the grid moves them: a GPU divides 64-bit integers in
      // software, so the loop adds instead (test/Target/Cuda/ptx.test).
      p.line() << "const int64_t stride = int64_t{gridDim.x} * blockDim.x;\n";
      p.line() << "const int64_t rowStep = C > 0 ? stride / C : 0, "
                  "colStep = stride - rowStep * C;\n";
      p.line() << "int64_t k = int64_t{blockIdx.x} * blockDim.x + "
                  "threadIdx.x;\n";
      p.line() << "int64_t i = C > 0 ? k / C : 0, j = k - i * C;\n";
      p.line() << "for (; k < R * C; k += stride, i += rowStep, "
                  "j += colStep) {\n";
      ++p.indent;
      p.line() << "if (j >= C) {\n";
      p.line() << "  j -= C;\n";
      p.line() << "  ++i;\n";
      p.line() << "}\n";
      break;
    case Pass::Rows:
      p.line() << "const int64_t i = blockIdx.x;\n";
      p.line() << "for (int64_t j = threadIdx.x; j < C; j += blockDim.x) {\n";
      ++p.indent;
      break;
    case Pass::Cols:
      p.line() << "const int64_t j = int64_t{blockIdx.x} * blockDim.x + "
                  "threadIdx.x;\n";
      p.line() << "for (int64_t i = 0; j < C && i < R; ++i) {\n";
      ++p.indent;
      break;
    }
    llvm::DenseMap<Value, std::string> element;
    auto elementOf = [&](Value v) -> std::string {
      auto it = element.find(v);
      if (it != element.end())
        return it->second;
      if (isTensor(v))
        return load(v);
      return p.exprs.lookup(v);
    };
    p.lastLine = 0;
    for (Operation &op : body) {
      if (isa<YieldOp>(op) ||
          (!needed.contains(&op) && !isa<ReduceOp>(op)))
        continue;
      if (auto reduce = dyn_cast<ReduceOp>(op)) {
        auto at = llvm::find(mine, reduce);
        if (at == mine.end())
          continue;
        const std::string &acc = accs[at - mine.begin()];
        std::string v = elementOf(reduce.getInput());
        switch (reduce.getKind()) {
        case ReduceKind::sum:
        case ReduceKind::mean:
          p.line() << acc << " += " << v << ";\n";
          break;
        case ReduceKind::norm:
          p.line() << acc << " += " << v << " * " << v << ";\n";
          break;
        case ReduceKind::max:
          p.line() << acc << " = " << acc << " < " << v << " ? " << v << " : "
                   << acc << ";\n";
          break;
        }
        continue;
      }
      SmallVector<std::string> operands;
      for (Value operand : op.getOperands())
        operands.push_back(elementOf(operand));
      std::string name = p.element(op, operands);
      if (name.empty())
        return failure();
      element[op.getResult(0)] = name;
    }
    // Stores last: a result written in place must not clobber an input
    // element that a later op of this element still reads.
    for (const Store &store : stores) {
      std::string v = elementOf(store.value);
      if (getElementTypeOrSelf(store.value.getType()).isInteger(1))
        v = "(" + v + " ? 1.0f : 0.0f)";
      p.line() << store.pointer << "[i * C + j] = " << storedAs(store.storage, v)
               << ";\n";
    }
    --p.indent;
    p.line() << "}\n";

    // Each reduction's value: a block's partial sum, a row's or a column's.
    auto combine = [](ReduceOp reduce) {
      return reduce.getKind() == ReduceKind::max ? "optgen::runtime::Max"
                                                 : "optgen::runtime::Sum";
    };
    auto finish = [&](ReduceOp reduce, const std::string &acc,
                      const std::string &count) {
      std::string v = acc;
      if (reduce.getKind() == ReduceKind::mean)
        v = "(" + acc + " / static_cast<float>(" + count + "))";
      if (reduce.getKind() == ReduceKind::norm)
        v = "std::sqrt(" + acc + ")";
      return rounded(v, getElementTypeOrSelf(reduce.getType()));
    };
    for (auto [reduce, acc] : llvm::zip(mine, accs)) {
      switch (pass) {
      case Pass::Space: {
        std::string partial = pointerOf(bufferOf(reduce.getResult()));
        p.line() << acc << " = optgen::runtime::blockReduce<" << threads
                 << ">(" << acc << ", " << combine(reduce) << "());\n";
        p.line() << "if (threadIdx.x == 0)\n";
        p.line() << "  " << partial << "[blockIdx.x] = " << acc << ";\n";
        break;
      }
      case Pass::Rows: {
        BufferAttr buffer = bufferOf(reduce.getResult());
        std::string out = pointerFor(buffer);
        p.line() << acc << " = optgen::runtime::blockReduce<" << threads
                 << ">(" << acc << ", " << combine(reduce) << "());\n";
        p.line() << "if (threadIdx.x == 0)\n";
        p.line() << "  " << out << "[i] = "
                 << storedAs(storageOf(buffer), finish(reduce, acc, "C"))
                 << ";\n";
        break;
      }
      case Pass::Cols: {
        BufferAttr buffer = bufferOf(reduce.getResult());
        std::string out = pointerFor(buffer);
        p.line() << "if (j < C)\n";
        p.line() << "  " << out << "[j] = "
                 << storedAs(storageOf(buffer), finish(reduce, acc, "R"))
                 << ";\n";
        break;
      }
      }
    }
    os << "}\n\n";

    return success();
  };

  // Each launch as a kernel of its own, named after its kind; a `lines`
  // launch as both, for the host to choose.
  unsigned linesCount = 0;
  for (LaunchOp launch : kernel.getBody().front().getOps<LaunchOp>()) {
    std::string name = kernelName.str();
    switch (launch.getKind()) {
    case LaunchKind::space:
      launchNames[launch] = name;
      if (failed(emitPass(launch, Pass::Space, name)))
        return failure();
      break;
    case LaunchKind::rows:
      launchNames[launch] = name += "_rows";
      if (failed(emitPass(launch, Pass::Rows, name)))
        return failure();
      break;
    case LaunchKind::cols:
      launchNames[launch] = name += "_cols";
      if (failed(emitPass(launch, Pass::Cols, name)))
        return failure();
      break;
    case LaunchKind::lines:
      if (linesCount++)
        name += "_lines" + std::to_string(linesCount - 1);
      launchNames[launch] = name;
      if (failed(emitPass(launch, Pass::Rows, name + "_rows")) ||
          failed(emitPass(launch, Pass::Cols, name + "_cols")))
        return failure();
      break;
    case LaunchKind::finish:
      launchNames[launch] = name += "_finish";
      emitFinish(launch, name, extentParams);
      break;
    case LaunchKind::store:
      launchNames[launch] = name;
      emitStore(launch, name);
      break;
    }
  }
  return success();
}

/// The space launch that `finish` combines the partial sums of.
static LaunchOp spaceLaunchOf(LaunchOp finish) {
  return cast<LaunchOp>(
      finish.getBody().front().getTerminator()->getOperand(0).getDefiningOp());
}

void CudaRuleEmitter::emitFinish(LaunchOp finish, StringRef name,
                                 StringRef extentParams) {
  // Per member, the partial sums of the blocks the space launch ran (as
  // many as its grid over R x C elements had), in a fixed order, finished
  // into the result's slot.
  LaunchOp space = spaceLaunchOf(finish);
  int64_t threads = finish.getShapeAttr().getThreads();
  auto spaceBuffers = space->getAttrOfType<ArrayAttr>(kBuffersAttr);
  auto buffers = finish->getAttrOfType<ArrayAttr>(kBuffersAttr);
  os << "__global__ void __launch_bounds__(" << threads << ") " << name
     << "(const optgen::runtime::DeviceCall call, const " << ident
     << "_slots slots,\n    const int64_t R, const int64_t C" << extentParams
     << ") {\n";
  printMember(os << "  ");
  os << "  float *const workspace = call.workspace + member * "
        "call.workspacePerMember;\n";
  os << "  const int64_t blocks = "
     << strideBlocks(space.getShapeAttr(), "R * C") << ";\n";
  Operation *yield = finish.getBody().front().getTerminator();
  for (auto [index, value] : llvm::enumerate(yield->getOperands())) {
    unsigned at = cast<OpResult>(value).getResultNumber();
    auto reduce = cast<ReduceOp>(
        space.getBody().front().getTerminator()->getOperand(at).getDefiningOp());
    std::string partial = pointerOf(cast<BufferAttr>(spaceBuffers[at]));
    std::string combineWith = reduce.getKind() == ReduceKind::max
                                  ? "optgen::runtime::Max"
                                  : "optgen::runtime::Sum";
    std::string out = pointerOf(cast<BufferAttr>(buffers[index]));
    std::string acc = "acc" + std::to_string(index);
    os << "  {\n";
    os << "    float " << acc << " = "
       << (reduce.getKind() == ReduceKind::max ? "-INFINITY" : "0.0f")
       << ";\n";
    os << "    for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x)\n";
    os << "      " << acc << " = " << combineWith << "()(" << acc << ", "
       << partial << "[b]);\n";
    os << "    " << acc << " = optgen::runtime::blockReduce<" << threads
       << ">(" << acc << ", " << combineWith << "());\n";
    std::string v = acc;
    if (reduce.getKind() == ReduceKind::mean)
      v = "(" + acc + " / static_cast<float>(R * C))";
    if (reduce.getKind() == ReduceKind::norm)
      v = "std::sqrt(" + acc + ")";
    os << "    if (threadIdx.x == 0)\n";
    os << "      *" << out << " = "
       << rounded(v, getElementTypeOrSelf(reduce.getType())) << ";\n";
    os << "  }\n";
  }
  os << "}\n\n";
}

void CudaRuleEmitter::emitStore(LaunchOp store, StringRef name) {
  Value value = store.getBody().front().getTerminator()->getOperand(0);
  auto home = cast<BufferAttr>(
      cast<ArrayAttr>(store->getAttr(kBuffersAttr))[0]);
  os << "// Stores the new " << bufferName(rule, home) << " of rule '"
     << commentText(rule.getSymName()) << "' where it is kept.\n";
  os << "__global__ void __launch_bounds__("
     << store.getShapeAttr().getThreads() << ") " << name
     << "(const optgen::runtime::DeviceCall call, const " << ident
     << "_slots slots,\n    const int64_t count) {\n";
  printMember(os << "  ");
  os << "  float *const workspace = call.workspace + member * "
        "call.workspacePerMember;\n";
  os << "  static_cast<void>(workspace);\n";
  os << "  static_cast<void>(slots);\n";
  std::string storage = storageOf(getBuffer(value));
  os << "  const " << storage << " *const from = "
     << pointerOf(getBuffer(value)) << ";\n";
  os << "  float *const to = " << pointerOf(home) << ";\n";
  os << "  for (int64_t k = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; "
        "k < count;\n";
  os << "       k += int64_t{gridDim.x} * blockDim.x)\n";
  os << "    to[k] = "
     << (storage == "float" ? std::string("from[k]")
                            : loadedAs(storage, "from[k]"))
     << ";\n";
  os << "}\n\n";
}

std::string CudaRuleEmitter::hostScalar(Value value) {
  if (std::optional<int64_t> known = constantInt(value))
    return "int64_t{" + std::to_string(*known) + "}";
  return hostExprs.lookup(value);
}

/// `extents` reduced along `axis` (a host expression) to one row or column.
static std::pair<std::string, std::string>
reducedAlong(std::pair<std::string, std::string> extents,
             const std::string &axis) {
  std::string onRows = firstAxisTest(axis);
  return {"(" + onRows + " ? int64_t{1} : " + extents.first + ")",
          "(" + onRows + " ? " + extents.second + " : int64_t{1})"};
}

std::pair<std::string, std::string>
CudaRuleEmitter::hostExtents(Value value) {
  auto type = cast<SymbolicTensorType>(value.getType());
  bool open = !type.getAnyRank() &&
              llvm::any_of(type.getDims(),
                           [](Attribute d) { return isa<UnitAttr>(d); });
  if (!open)
    return rowsCols(type);
  if (auto state = value.getDefiningOp<StateOp>())
    return reducedAlong(hostExtents(state.getLike()),
                        hostScalar(state.getAxis()));
  if (auto kernel = value.getDefiningOp<KernelOp>()) {
    auto yield =
        cast<YieldOp>(kernel.getBody().front().getTerminator());
    Value yielded = yield.getValues()[cast<OpResult>(value).getResultNumber()];
    // What the launch computing it yields.
    if (auto launch = yielded.getDefiningOp<LaunchOp>())
      yielded = launch.getBody().front().getTerminator()->getOperand(
          cast<OpResult>(yielded).getResultNumber());
    if (auto reduce = yielded.getDefiningOp<ReduceOp>())
      return reducedAlong(hostExtents(reduce.getInput()),
                          hostScalar(reduce.getAxis()));
    return spaceExtents(kernel);
  }
  return rowsCols(type);
}

std::pair<std::string, std::string>
CudaRuleEmitter::spaceExtents(KernelOp kernel) {
  SymbolicTensorType space = kernel.getIterationSpace();
  for (Value input : kernelInputs(kernel))
    if (input.getType() == space)
      return hostExtents(input);
  return rowsCols(space);
}

void CudaRuleEmitter::printLaunches(KernelOp kernel, unsigned indent) {
  auto line = [&]() -> raw_ostream & {
    host.indent = indent;
    return host.line();
  };
  // An extent the host computes at run time (a ternary on an axis) is named
  // once, before the launches that pass it.
  auto named = [&](const std::string &extent, StringRef base) {
    if (!StringRef(extent).contains('?'))
      return extent;
    std::string name = host.names.unique(base);
    line() << "const int64_t " << name << " = " << extent << ";\n";
    return name;
  };
  // (One statement each: the declarations print in a fixed order.)
  auto [spaceRows, spaceCols] = spaceExtents(kernel);
  std::string R = named(spaceRows, "rows");
  std::string C = named(spaceCols, "cols");
  std::string extents;
  for (Value input : kernelOpenInputs.lookup(kernel)) {
    auto [rows, cols] = hostExtents(input);
    std::string rowsName = named(rows, "rows");
    std::string colsName = named(cols, "cols");
    extents += ", " + rowsName + ", " + colsName;
  }
  std::string shape = R + ", " + C + extents;
  auto launch = [&](LaunchOp op, const std::string &name, GridKind grid) {
    line() << "optgen::runtime::launchKernel<" << name << ">("
           << gridOf(op.getShapeAttr(), grid, R, C) << ", "
           << op.getShapeAttr().getThreads() << ", 0, call.stream, call, "
           << "slots, "
           << (op.getKind() == LaunchKind::store ? R + " * " + C : shape)
           << ");\n";
    line() << "OPTGEN_CUDA_CHECK(cudaGetLastError(), "
           << cppString("launching " + name) << ");\n";
  };
  // In the order optgen-split-launches gave them.
  for (LaunchOp op : kernel.getBody().front().getOps<LaunchOp>()) {
    std::string name = launchNames.lookup(op);
    if (op.getKind() != LaunchKind::lines) {
      launch(op, name, op.getShapeAttr().getGrid());
      continue;
    }
    // Along the first axis a column reduces to one value.
    line() << "if " << firstAxisTest(hostScalar(op.getAxis())) << " {\n";
    ++indent;
    launch(op, name + "_cols", GridKind::column_blocks);
    --indent;
    line() << "} else {\n";
    ++indent;
    launch(op, name + "_rows", GridKind::rows);
    --indent;
    line() << "}\n";
  }
}

void CudaRuleEmitter::emitLaunch() {
  std::optional<FileLineColLoc> file = fileLocation(rule.getLoc());
  os << "// Rule '" << commentText(rule.getSymName()) << "'";
  if (file)
    os << ", " << options.specName << ":" << file->getLine();
  os << ": every member of the call, one launch after another.\n";
  os << "void launch_" << ident
     << "(const optgen::runtime::DeviceCall &call) {\n";
  os << "  if (call.members == 0)\n    return;\n";
  if (!elementwise) {
    os << "  " << ident << "_slots slots{};\n";
    if (!workspace.empty())
      os << "  workspace_layout_" << ident
         << "(call.rows, call.cols, slots.at);\n";
  }
  emitHostBlock(rule.getBlock(), 1);
  os << "}\n\n";
}

std::string CudaRuleEmitter::matricesOf(Value value) {
  auto [rows, cols] = rowsCols(cast<SymbolicTensorType>(value.getType()));
  std::string at = "{call.workspace + slots.at[" +
                   std::to_string(getBuffer(value).getIndex()) + "], " + rows +
                   ", " + cols + ", ";
  std::string storage = storageOf(getBuffer(value));
  if (storage == "float")
    return at + "call.workspacePerMember}";
  // Members are workspacePerMember floats apart: twice as many 16-bit
  // elements.
  return at + "2 * call.workspacePerMember, optgen::runtime::DType::" +
         (storage == "__half" ? "F16" : "BF16") + "}";
}

void CudaRuleEmitter::emitHostBlock(Block &block, unsigned indent) {
  auto line = [&]() -> raw_ostream & {
    host.indent = indent;
    return host.line();
  };
  auto nameFor = [&](Value value, StringRef fallback) {
    return host.nameFor(value, fallback);
  };
  // Copies a batch of `from`'s matrices into `to`'s buffer, unless the IR
  // put them there already.
  auto copy = [&](Value from, Value to) {
    if (getBuffer(from) == getBuffer(to))
      return;
    line() << "optgen::runtime::deviceCopy(" << matricesOf(from) << ", "
           << matricesOf(to) << ", call.members, call.stream);\n";
  };
  for (Operation &op : block) {
    if (op.hasAttr(kOnHostAttr)) {
      // Integer hyperparameters the host reads from its own copy.
      host.indent = indent;
      std::optional<std::string> read =
          host.printScalarRead(&op, "call.hostHypers");
      if (read && !read->empty()) {
        hostExprs[op.getResult(0)] = *read;
        continue;
      }
      llvm::TypeSwitch<Operation *>(&op)
          .Case([&](DimOp query) {
            auto type = cast<SymbolicTensorType>(query.getInput().getType());
            auto [r, c] = hostExtents(query.getInput());
            std::string extent =
                type.getRank() == 2
                    ? extentAlong(constantInt(query.getAxis()),
                                  hostScalar(query.getAxis()), r, c)
                    : c;
            std::string name = nameFor(query, "size");
            line() << "const int64_t " << name << " = " << extent << ";\n";
            hostExprs[query] = name;
          })
          .Case([&](NumelOp query) {
            auto [r, c] =
                rowsCols(cast<SymbolicTensorType>(query.getInput().getType()));
            hostExprs[query] = "(" + r + " * " + c + ")";
          })
          .Default([&](Operation *math) {
            SmallVector<std::string> operands;
            for (Value v : math->getOperands())
              operands.push_back(hostExprs.lookup(v));
            hostExprs[math->getResult(0)] = host.printMath(math, operands, "s");
          });
      continue;
    }
    if (auto kernel = dyn_cast<KernelOp>(op)) {
      if (!elementwise) {
        printLaunches(kernel, indent);
        continue;
      }
      // Launches are printed at the launch function's indentation.
      SmallVector<StringRef> lines;
      StringRef(launches[kernel]).split(lines, '\n', -1, false);
      for (StringRef launch : lines)
        line() << launch.ltrim() << "\n";
      continue;
    }
    if (isa<UpdateOp>(op))
      continue;
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      std::optional<FileLineColLoc> file = fileLocation(gemm.getLoc());
      std::string where = options.specName + ":" +
                          std::to_string(file ? file->getLine() : 0);
      line() << "// " << where << ": a matrix product per member.\n";
      // The operands' names must not hide the spec's scalars (a table's
      // a, b, c are the scales).
      std::string lhs = host.names.unique("lhs"), rhs = host.names.unique("rhs"),
                  addend = host.names.unique("addend"),
                  out = host.names.unique("product");
      line() << "{\n";
      line() << "  const optgen::runtime::DeviceMatrices " << lhs
             << matricesOf(gemm.getA()) << ";\n";
      line() << "  const optgen::runtime::DeviceMatrices " << rhs
             << matricesOf(gemm.getB()) << ";\n";
      if (gemm.getC())
        line() << "  const optgen::runtime::DeviceMatrices " << addend
               << matricesOf(gemm.getC()) << ";\n";
      line() << "  const optgen::runtime::DeviceMatrices " << out
             << matricesOf(gemm) << ";\n";
      auto scale = [&](Value v, const char *absent) {
        return v ? "static_cast<float>(" + hostExprs.lookup(v) + ")"
                 : std::string(absent);
      };
      line() << "  optgen::runtime::deviceGemm(*call.blas, " << lhs << ", "
             << (gemm.getTransposeA() ? "true" : "false") << ", " << rhs
             << ", " << (gemm.getTransposeB() ? "true" : "false") << ", "
             << scale(gemm.getAlpha(), "1.0f") << ", "
             << (gemm.getC() ? "&" + addend : std::string("nullptr")) << ", "
             << scale(gemm.getBeta(), "0.0f") << ", " << out
             << ", call.members, call.stream, "
             << cppString("the product at " + where) << ");\n";
      // A 16-bit product held in f32 is rounded as the spec's type says
      // (one stored as its type was rounded by cuBLASLt).
      Type element = getElementTypeOrSelf(gemm.getType());
      if ((element.isBF16() || element.isF16()) &&
          storageOf(getBuffer(gemm)) == "float")
        line() << "  optgen::runtime::deviceRound(" << out << ".data, " << out
               << ".rows * " << out << ".cols, " << out
               << ".stride, call.members, "
               << (element.isBF16() ? "optgen::runtime::DType::BF16"
                                    : "optgen::runtime::DType::F16")
               << ", call.stream);\n";
      line() << "}\n";
      continue;
    }
    if (auto loop = dyn_cast<ForTableOp>(op)) {
      std::string table = "kTable" + std::to_string(tables.size());
      tables.push_back(tableDefinition(loop, table, options.specName));
      Block &body = loop.getBody().front();
      int64_t width = loop.getRowLength();
      int64_t rows = cast<ShapedType>(loop.getTable().getType()).getDimSize(0);
      for (auto [init, result] : llvm::zip(loop.getInits(), loop.getResults()))
        copy(init, result);
      std::string row = host.names.unique("row");
      line() << "for (int64_t " << row << " = 0; " << row
             << " < std::min<int64_t>(" << hostExprs.lookup(loop.getCount())
             << ", " << rows << "); ++" << row << ") {\n";
      for (int64_t c = 0; c < width; ++c) {
        BlockArgument value = body.getArgument(c);
        if (value.use_empty())
          continue;
        std::string name =
            host.names.unique(std::string(1, static_cast<char>('a' + c % 26)));
        line() << "  const float " << name << " = " << table << "[" << row
               << "][" << c << "];\n";
        hostExprs[value] = name;
      }
      emitHostBlock(body, indent + 1);
      auto yield = cast<YieldOp>(body.getTerminator());
      // A double-buffered value (optgen.next_buffers) was made in the other
      // slot: the two slots trade places for the launches that follow.
      auto next = loop->getAttrOfType<ArrayAttr>(kNextBuffersAttr);
      ++indent;
      for (auto [index, value, result] : llvm::enumerate(
               yield.getValues(), loop.getResults())) {
        auto made = next ? dyn_cast<BufferAttr>(next[index]) : BufferAttr();
        if (made && made == getBuffer(value)) {
          line() << "std::swap(slots.at[" << made.getIndex() << "], slots.at["
                 << getBuffer(result).getIndex() << "]);\n";
          continue;
        }
        copy(value, result);
      }
      --indent;
      line() << "}\n";
      continue;
    }
    if (auto branch = dyn_cast<IfOp>(op)) {
      line() << "if (" << hostExprs.lookup(branch.getCondition()) << ") {\n";
      for (Region *region :
           {&branch.getThenRegion(), &branch.getElseRegion()}) {
        if (region == &branch.getElseRegion())
          line() << "} else {\n";
        Block &body = region->front();
        emitHostBlock(body, indent + 1);
        auto yield = cast<YieldOp>(body.getTerminator());
        for (auto [value, result] :
             llvm::zip(yield.getValues(), branch.getResults())) {
          ++indent;
          copy(value, result);
          --indent;
        }
      }
      line() << "}\n";
      continue;
    }
  }
}

LogicalResult CudaRuleEmitter::emit(RuleStepFunctions &step) {
  if (failed(check()))
    return failure();
  if (!elementwise) {
    // The workspace slots' offsets, which the host computes once per launch
    // and every kernel receives by value.
    os << "// Where each workspace slot of rule '"
       << commentText(rule.getSymName())
       << "' starts, in floats from a member's workspace.\n";
    os << "struct " << ident << "_slots {\n";
    os << "  int64_t at[" << std::max<size_t>(workspace.size(), 1) << "];\n";
    os << "};\n\n";
  }
  for (auto [i, kernel] : llvm::enumerate(kernels))
    if (failed(emitKernel(kernel, i)))
      return failure();
  emitLaunch();
  step.launch = "launch_" + ident;
  return success();
}

/// The globals on the device (GlobalsSpec::launchContribution and
/// launchFinish): per member, the target's reduction_blocks blocks (a fixed
/// grid, whatever the member's size, so that its partials do not depend on
/// scheduling) each folding a grid-stride share of its elements and
/// combining its threads along a fixed tree, then a block per member combining those in block order into
/// the member's partials (as doubles, for the executor to combine); and a
/// one-thread kernel computing each global from the combined partials.
LogicalResult emitDeviceGlobals(OptimizerOp optimizer, raw_ostream &os,
                                const EmitOptions &options,
                                TargetAttr target,
                                GlobalsFunctions &functions) {
  const int64_t blockThreads = target.getThreadsPerBlock();
  const int64_t globalBlocks = target.getReductionBlocks();
  SmallVector<ReduceParamsOp> partials = getGlobalPartials(optimizer);
  for (ReduceParamsOp reduce : partials)
    if (!reduce.getAccumulator() || !reduce.getAccumulator()->isF32())
      return reduce.emitError("the CUDA printer accumulates a global's "
                              "partials in f32; run "
                              "--optgen-set-accumulators for a target whose "
                              "accumulator is f32");
  size_t count = partials.size();
  std::string perMember = std::to_string(count * globalBlocks);
  auto combine = [](ReduceParamsOp reduce) {
    return reduce.getKind() == ReduceKind::max ? "optgen::runtime::Max()"
                                               : "optgen::runtime::Sum()";
  };
  auto identity = [](ReduceParamsOp reduce) {
    return reduce.getKind() == ReduceKind::max ? "-INFINITY" : "0.0f";
  };
  auto launch = [&](const std::string &kernel, const std::string &grid,
                    int64_t threads) {
    os << "  optgen::runtime::launchKernel<" << kernel << ">(" << grid << ", "
       << threads << ", 0, call.stream, call);\n";
    os << "  OPTGEN_CUDA_CHECK(cudaGetLastError(), "
       << cppString("launching " + kernel) << ");\n";
  };

  {
    BodyPrinter p(os, options);
    FailureOr<GlobalsPrinter> globals = GlobalsPrinter::create(optimizer, p);
    if (failed(globals))
      return failure();
    for (StringRef reserved : {"param", "grad", "scratch"})
      (void)p.names.unique(reserved);
    os << "// The globals' partials of every member of a launch (its elements, "
          "or this\n// rank's part), first per block: a grid-stride share of "
          "the member's elements,\n// its threads combined along a fixed "
          "tree.\n";
    os << "__global__ void __launch_bounds__(" << blockThreads
       << ") globalContribution_blocks(\n    const "
          "optgen::runtime::DeviceGlobals call) {\n";
    printMember(p.line());
    p.line() << "const int64_t n = call.numels[member];\n";
    if (globals->readsParam())
      p.line() << "const float *const param = call.params[member];\n";
    if (globals->readsGrad())
      p.line() << "const float *const grad = call.grads[member];\n";
    if (failed(globals->printElementConstants()))
      return failure();
    SmallVector<std::string> accs;
    for (ReduceParamsOp reduce : partials) {
      accs.push_back(p.names.unique("acc"));
      p.line() << "float " << accs.back() << " = " << identity(reduce)
               << ";\n";
    }
    p.line() << "for (int64_t i = static_cast<int64_t>(blockIdx.x) * "
                "blockDim.x + threadIdx.x; i < n;\n";
    p.line() << "     i += static_cast<int64_t>(gridDim.x) * blockDim.x) "
                "{\n";
    ++p.indent;
    if (failed(globals->printElement(
            "param[i]", "grad[i]", [&](size_t k, const std::string &value) {
              p.line() << accs[k] << " = " << combine(partials[k]) << "("
                       << accs[k] << ", static_cast<float>(" << value
                       << "));\n";
            })))
      return failure();
    --p.indent;
    p.line() << "}\n";
    for (auto [reduce, acc] : llvm::zip(partials, accs))
      p.line() << acc << " = optgen::runtime::blockReduce<" << blockThreads
               << ">(" << acc << ", " << combine(reduce) << ");\n";
    p.line() << "if (threadIdx.x == 0) {\n";
    p.line() << "  float *const scratch = call.scratch + member * "
             << perMember << ";\n";
    for (auto [k, acc] : llvm::enumerate(accs))
      p.line() << "  scratch[" << k * globalBlocks << " + blockIdx.x] = "
               << acc << ";\n";
    p.line() << "}\n";
    os << "}\n\n";
  }

  os << "// Then per member, its blocks' partials combined in block order.\n";
  os << "__global__ void __launch_bounds__(" << blockThreads
     << ") globalContribution_members(\n    const "
        "optgen::runtime::DeviceGlobals call) {\n";
  printMember(os << "  ");
  os << "  const float *const scratch = call.scratch + member * " << perMember
     << ";\n";
  for (auto [k, reduce] : llvm::enumerate(partials)) {
    os << "  {\n";
    os << "    float acc = " << identity(reduce) << ";\n";
    os << "    for (int b = threadIdx.x; b < " << globalBlocks
       << "; b += blockDim.x)\n";
    os << "      acc = " << combine(reduce) << "(acc, scratch["
       << k * globalBlocks << " + b]);\n";
    os << "    acc = optgen::runtime::blockReduce<" << blockThreads
       << ">(acc, " << combine(reduce) << ");\n";
    os << "    if (threadIdx.x == 0)\n";
    os << "      call.memberPartials[member * " << count << " + " << k
       << "] = static_cast<double>(acc);\n";
    os << "  }\n";
  }
  os << "}\n\n";

  os << "// The globals' partials of every member of the call.\n";
  os << "void launch_globalContribution(const optgen::runtime::DeviceGlobals "
        "&call) {\n";
  os << "  if (call.members == 0)\n    return;\n";
  launch("globalContribution_blocks",
         "optgen::runtime::memberGrid(" + std::to_string(globalBlocks) +
             ", call.members)",
         blockThreads);
  launch("globalContribution_members",
         "optgen::runtime::memberGrid(1, call.members)", blockThreads);
  os << "}\n\n";

  {
    BodyPrinter p(os, options);
    FailureOr<GlobalsPrinter> globals = GlobalsPrinter::create(optimizer, p);
    if (failed(globals))
      return failure();
    os << "// Each global from its partials, combined over every parameter "
          "and rank.\n";
    os << "__global__ void finishGlobals_kernel(const "
          "optgen::runtime::DeviceGlobals call) {\n";
    if (failed(globals->printFinish(
            [](size_t k) { return "call.partials[" + std::to_string(k) + "]"; },
            [&](size_t global, const std::string &value) {
              p.line() << "call.globals[" << global << "] = " << value
                       << ";\n";
            })))
      return failure();
    os << "}\n\n";
  }
  os << "void launch_finishGlobals(const optgen::runtime::DeviceGlobals "
        "&call) {\n";
  launch("finishGlobals_kernel", "1", 1);
  os << "}\n\n";

  functions.launchContribution = "launch_globalContribution";
  functions.launchFinish = "launch_finishGlobals";
  functions.deviceScratch = static_cast<int64_t>(count) * globalBlocks;
  return success();
}

} // namespace

LogicalResult optgen::emitCuda(OptimizerOp optimizer,
                               const EmitOptions &options,
                               std::map<std::string, std::string> &files) {
  FailureOr<TargetAttr> target =
      requireTargetOfKind(optimizer, "the CUDA printer", TargetKind::device);
  if (failed(target))
    return failure();
  TargetSpelling spelling{"optgen/runtime/CudaOptimizer.h",
                          "optgen::runtime::CudaOptimizer",
                          "optgen/runtime/CudaCaseRunner.h",
                          "optgen::runtime::cudaRunnerMain", ".cu"};
  return emitHostFiles(
      optimizer, options, spelling,
      [&](RuleOp rule, raw_ostream &os, std::vector<std::string> &tables,
          RuleStepFunctions &step) {
        return CudaRuleEmitter(os, options, rule, tables).emit(step);
      },
      [&](OptimizerOp optimizer, raw_ostream &os, std::vector<std::string> &,
          GlobalsFunctions &globals) {
        return emitDeviceGlobals(optimizer, os, options, *target, globals);
      },
      files);
}
