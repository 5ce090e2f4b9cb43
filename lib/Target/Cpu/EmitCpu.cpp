//===- EmitCpu.cpp - C++ for the CPU from fused optgen IR -----------------===//
//
// A read-only walk over a prepared optimizer (kernels formed by
// optgen-fuse-kernels). Each rule becomes one function over a RuleCall:
// scalar math as C++ statements, each kernel as one loop nest reading every
// input element once, matrix products as BLAS calls, compile-time `if` and
// table loops as C++ control flow. Groups and rules become the tables that
// optgen::runtime::Optimizer runs.
//
// Names in the output come from the spec (`let x`, hyperparameters, states);
// every spec-derived identifier or string goes through legalIdentifier() or
// cppString(), so no spec can inject code.
//
//===----------------------------------------------------------------------===//

#include "optgen/Target/Cpu/EmitCpu.h"

#include "dialect/TargetDescription.h"
#include "optgen/Target/CFamily/Expressions.h"
#include "optgen/Target/CFamily/Globals.h"
#include "optgen/Target/CFamily/Names.h"
#include "optgen/Target/CFamily/SourceInfo.h"
#include "optgen/Target/CFamily/StatementPrinter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace optgen;

namespace {

bool isTensor(Value v) { return isa<SymbolicTensorType>(v.getType()); }

//===----------------------------------------------------------------------===//
// One rule (or a `where` condition, a state-shape function, the globals)
//===----------------------------------------------------------------------===//

class RuleEmitter : StatementPrinter {
public:
  RuleEmitter(llvm::raw_ostream &os, const EmitOptions &options,
              TargetAttr target, std::vector<std::string> &tables)
      : StatementPrinter(os, options.specName, options.sourceLine),
        options(options), maxVersions(target.getMaxLoopVersions()),
        parallelElements(target.getParallelElements()), tables(tables) {}

  LogicalResult emitRule(RuleOp rule);
  /// GlobalsSpec::contribution and GlobalsSpec::finish of the optimizer's
  /// globals, as `function`.
  LogicalResult emitGlobalContribution(OptimizerOp optimizer,
                                       StringRef function);
  LogicalResult emitGlobalFinish(OptimizerOp optimizer, StringRef function);

private:
  const EmitOptions &options;
  /// The target description's: the most versions of a loop nest, and the
  /// elements from which a loop runs on OpenMP's threads.
  int64_t maxVersions, parallelElements;
  std::vector<std::string> &tables; ///< file-scope constant tables
  llvm::DenseMap<Value, std::string> exprs; ///< scalars: a C++ expression
  llvm::DenseMap<Value, std::string> tiles; ///< tensors: a Tile variable
  RuleOp currentRule;

  std::string scalar(Value v) { return exprs.lookup(v); }
  std::string tile(Value v) { return tiles.lookup(v); }

  LogicalResult emitBlock(Block &block);
  LogicalResult emitOp(Operation *op);
  LogicalResult emitScalarMath(Operation *op);
  LogicalResult emitKernel(KernelOp kernel);
  LogicalResult emitGemm(GemmOp op);
  LogicalResult emitTranspose(TransposeOp op);
  LogicalResult emitIf(IfOp op);
  LogicalResult emitForTable(ForTableOp op);
  LogicalResult emitUpdate(UpdateOp op);

  /// The size of `tensor` along `axis` (an expression).
  std::string dimExpr(Value tensor, Value axis);
  /// A tile variable of rows x cols over the memory the IR gave `value`.
  std::string placeTile(Value value, const std::string &rows,
                        const std::string &cols, StringRef fallback);
  /// The memory (a float pointer expression) of `buffer`.
  std::string memoryOf(BufferAttr buffer);
  /// Declares the workspace slots' pointers for the rule's body.
  void emitWorkspacePointers(RuleOp rule);

  std::vector<std::string> slotNames; ///< per workspace slot, its pointer
};

std::string RuleEmitter::memoryOf(BufferAttr buffer) {
  switch (buffer.getKind()) {
  case BufferKind::param:
    return "call.param";
  case BufferKind::grad:
    return "const_cast<float *>(call.grad)";
  case BufferKind::state:
    return "call.states[" + std::to_string(buffer.getIndex()) + "]";
  case BufferKind::workspace:
    return slotNames.at(buffer.getIndex());
  }
  return "";
}

std::string RuleEmitter::placeTile(Value value, const std::string &rows,
                                   const std::string &cols,
                                   StringRef fallback) {
  std::string name = nameFor(value, fallback);
  line() << "optgen::runtime::Tile " << name << "{"
         << memoryOf(getBuffer(value)) << ", " << rows << ", " << cols
         << "};\n";
  tiles[value] = name;
  return name;
}

std::string RuleEmitter::dimExpr(Value tensor, Value axis) {
  auto type = cast<SymbolicTensorType>(tensor.getType());
  std::string axisExpr = scalar(axis);
  if (type.getAnyRank())
    return llvm::formatv("call.shape[{0} < 0 ? {0} + call.rank : {0}]",
                         axisExpr)
        .str();
  std::string t = tile(tensor);
  if (type.getRank() == 1)
    return t + ".cols";
  return extentAlong(constantInt(axis), axisExpr, t + ".rows", t + ".cols");
}

LogicalResult RuleEmitter::emitScalarMath(Operation *op) {
  SmallVector<std::string> operands;
  for (Value v : op->getOperands())
    operands.push_back(scalar(v));
  std::string name = printMath(op, operands, "s");
  if (name.empty())
    return op->emitError("the CPU emitter cannot print this op");
  exprs[op->getResult(0)] = name;
  return success();
}

LogicalResult RuleEmitter::emitBlock(Block &block) {
  for (Operation &op : block)
    if (failed(emitOp(&op)))
      return failure();
  return success();
}

LogicalResult RuleEmitter::emitOp(Operation *op) {
  if (isa<YieldOp>(op))
    return success();
  // An update comments the copies it prints, if any.
  if (!isa<UpdateOp>(op))
    noteSource(op);
  std::optional<std::string> read = printScalarRead(op);
  if (!read)
    return failure();
  if (!read->empty()) {
    exprs[op->getResult(0)] = *read;
    return success();
  }
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](StateOp state) {
        SmallVector<StateOp> all = getRuleStates(currentRule);
        size_t index = llvm::find(all, state) - all.begin();
        std::string name = names.unique(state.getName());
        if (isTensor(state)) {
          line() << "optgen::runtime::Tile " << name << "{call.states["
                 << index << "], call.stateRows[" << index
                 << "], call.stateCols[" << index << "]};\n";
          tiles[state] = name;
        } else {
          line() << cType(state.getType()) << " " << name
                 << " = call.states[" << index << "][0];\n";
          exprs[state] = name;
        }
        return success();
      })
      .Case([&](StepOp step) {
        exprs[step] = "call.step";
        return success();
      })
      .Case([&](DimOp dim) {
        std::string name = nameFor(dim, "size");
        line() << "const int64_t " << name << " = "
               << dimExpr(dim.getInput(), dim.getAxis()) << ";\n";
        exprs[dim] = name;
        return success();
      })
      .Case([&](NDimOp ndim) {
        auto type = cast<SymbolicTensorType>(ndim.getInput().getType());
        exprs[ndim] = type.getAnyRank()
                          ? std::string("int64_t{call.rank}")
                          : "int64_t{" + std::to_string(type.getRank()) + "}";
        return success();
      })
      .Case([&](NumelOp numel) {
        exprs[numel] = "(" + tile(numel.getInput()) + ".size())";
        return success();
      })
      .Case([&](KernelOp kernel) { return emitKernel(kernel); })
      .Case([&](GemmOp gemm) { return emitGemm(gemm); })
      .Case([&](TransposeOp transpose) { return emitTranspose(transpose); })
      .Case([&](IfOp ifOp) { return emitIf(ifOp); })
      .Case([&](ForTableOp loop) { return emitForTable(loop); })
      .Case([&](UpdateOp update) { return emitUpdate(update); })
      .Default([&](Operation *other) -> LogicalResult {
        if (other->hasTrait<ElementwiseMath>() && !isTensor(other->getResult(0)))
          return emitScalarMath(other);
        return other->emitError("the CPU emitter needs this op inside a "
                                "kernel; run --optgen-fuse-kernels first");
      });
}

LogicalResult RuleEmitter::emitKernel(KernelOp kernel) {
  if (kernel.isSplitIntoLaunches())
    return kernel.emitError("the CPU printer prints a kernel as one loop, "
                            "not split into a device's launches");
  Block &body = kernel.getBody().front();
  SymbolicTensorType space = kernel.getIterationSpace();

  // Inputs: tensors from above, in order of first use.
  llvm::SetVector<Value> inputs;
  kernel.walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (isTensor(operand) && !kernel->isAncestor(operand.getParentBlock()->getParentOp()))
        inputs.insert(operand);
  });
  if (inputs.empty())
    return kernel.emitError("a kernel with no tensor input");
  auto isFull = [&](Value v) {
    auto t = cast<SymbolicTensorType>(v.getType());
    return t.getAnyRank() == space.getAnyRank() && t.getDims() == space.getDims() &&
           llvm::none_of(t.getDims(), [](Attribute d) { return isa<UnitAttr>(d); });
  };

  std::vector<unsigned> lines = specLines(kernel.getLoc());
  // describeType gives "[m, n] f32": the shape is all but the element type.
  std::string spaceText = describeType(space);
  line() << "// Kernel: one pass over "
         << spaceText.substr(0, spaceText.rfind(' ')) << ", from spec line" << (lines.size() > 1 ? "s" : "");
  for (unsigned l : lines)
    os << " " << l;
  os << ".\n";

  std::string R = names.unique("R"), C = names.unique("C");
  line() << "const int64_t " << R << " = ";
  if (inputs.size() == 1)
    os << tile(inputs[0]) << ".rows;\n";
  else {
    os << "std::max({";
    llvm::interleave(inputs, os, [&](Value v) { os << tile(v) << ".rows"; },
                     ", ");
    os << "});\n";
  }
  line() << "const int64_t " << C << " = ";
  if (inputs.size() == 1)
    os << tile(inputs[0]) << ".cols;\n";
  else {
    os << "std::max({";
    llvm::interleave(inputs, os, [&](Value v) { os << tile(v) << ".cols"; },
                     ", ");
    os << "});\n";
  }
  for (Value input : inputs)
    if (!isFull(input))
      line() << "optgen::runtime::checkBroadcast(" << cppString(tile(input))
             << ", " << tile(input) << ".rows, " << tile(input) << ".cols, "
             << R << ", " << C << ");\n";

  // Results: tensors written over the space (in place where allowed),
  // reductions into accumulators.
  auto yield = cast<YieldOp>(body.getTerminator());
  llvm::DenseMap<Value, std::string> outputTile; // body value -> tile
  llvm::SmallDenseSet<Value, 4> claimed;
  struct Reduction {
    mutable ReduceOp op;
    std::string acc;  // accumulator (a scalar, or a vector for axes)
    std::string type; // the accumulator's C++ type, as the IR names it
    std::string out;  // result: a scalar name or a tile
    bool alongAxis;
    std::string axisRows, axisCols; // the reduced tile's extent
    std::string count;              // elements summed into each result
    std::string slot;               // the result element of element (i, j)
    std::string size;               // the accumulator's elements
    std::string onRows; // along an axis the types leave open: the test
                        // that it is the rows (slot j)
  };
  SmallVector<Reduction, 2> reductions;
  for (auto [value, result] : llvm::zip(yield.getValues(), kernel.getResults())) {
    if (auto reduce = value.getDefiningOp<ReduceOp>())
      continue; // below
    // Written in place when the IR put the result in an input's buffer.
    std::string target;
    for (Value input : inputs)
      if (!claimed.contains(input) && tiles.count(input) &&
          getBuffer(input) == getBuffer(result)) {
        claimed.insert(input);
        target = tile(input);
        break;
      }
    if (target.empty()) {
      target = placeTile(result, R, C, "t");
    } else {
      std::string name = nameFor(value, "t");
      line() << "optgen::runtime::Tile " << name << " = " << target
             << "; // written in place\n";
      target = name;
      tiles[result] = name;
    }
    tiles[result] = target;
    outputTile[value] = target;
  }
  for (Operation &op : body) {
    auto reduce = dyn_cast<ReduceOp>(op);
    if (!reduce)
      continue;
    if (!reduce.getAccumulator())
      return reduce.emitError("the CPU emitter needs the accumulator type; "
                              "run --optgen-set-accumulators first");
    Type accumulator = *reduce.getAccumulator();
    Reduction r;
    r.op = reduce;
    r.acc = names.unique("acc");
    r.type = cType(accumulator).str();
    r.alongAxis = static_cast<bool>(reduce.getAxis());
    std::string init = reduce.getKind() == ReduceKind::max
                           ? "-std::numeric_limits<" + r.type + ">::infinity()"
                           : floatLiteral(0, accumulator.isF64());
    Value result = kernel.getResult(
        llvm::find(yield.getValues(), reduce.getResult()) - yield.getValues().begin());
    if (!r.alongAxis) {
      line() << r.type << " " << r.acc << " = " << init << ";\n";
    } else {
      auto inputType = cast<SymbolicTensorType>(reduce.getInput().getType());
      std::string axis = scalar(reduce.getAxis());
      // The 2-D axis: a vector's only axis is its columns; a known axis is
      // printed as the extent it gives.
      std::optional<int64_t> known = constantInt(reduce.getAxis());
      if (inputType.getRank() == 1 || known) {
        bool onRows = inputType.getRank() != 1 && isFirstAxis(*known);
        r.axisRows = onRows ? std::string("int64_t{1}") : R;
        r.axisCols = onRows ? C : std::string("int64_t{1}");
        r.count = onRows ? R : C;
        r.slot = onRows ? "j" : "i";
      } else {
        std::string onRows = firstAxisTest(axis);
        r.axisRows = "(" + onRows + " ? int64_t{1} : " + R + ")";
        r.axisCols = "(" + onRows + " ? " + C + " : int64_t{1})";
        r.count = "(" + onRows + " ? " + R + " : " + C + ")";
        r.slot = "(" + onRows + " ? j : i)";
        r.onRows = onRows;
      }
      // The accumulator lives in the workspace slot the IR gave it.
      auto buffers = reduce->getAttrOfType<ArrayAttr>(kBuffersAttr);
      if (!buffers)
        return reduce.emitError("the CPU emitter needs the reduction's "
                                "buffer; run --optgen-assign-buffers first");
      std::string memory = memoryOf(cast<BufferAttr>(buffers[0]));
      r.size = r.axisRows + " * " + r.axisCols;
      line() << r.type << " *const " << r.acc << " = "
             << (accumulator.isF32()
                     ? memory
                     : "reinterpret_cast<" + r.type + " *>(" + memory + ")")
             << ";\n";
      line() << "std::fill(" << r.acc << ", " << r.acc << " + " << r.size
             << ", " << init << ");\n";
      r.out = placeTile(result, r.axisRows, r.axisCols, "reduced");
    }
    reductions.push_back(r);
  }

  bool flat = llvm::all_of(inputs, isFull) &&
              llvm::none_of(reductions, [](const Reduction &r) { return r.alongAxis; });
  std::string index = flat ? "k" : "i * " + C + " + j";

  // A loop nest (not flat) reads a broadcast input through a pointer to its
  // row, hoisted out of the inner loop, and its column either at j or at 0.
  // Where the types do not say which (a `?` extent), the inner loop is
  // printed once per case under a test made before the nest (at most the
  // target's max_loop_versions versions), so that each version is a unit-stride loop the
  // compiler vectorises: a broadcast load or a select in a loop it cannot
  // vectorise costs a branch per element (a mispredicted one for a data-
  // dependent select). Reductions along an unknown axis are versioned
  // likewise; one along the columns sums each row into a register.
  // Text printed per version: a placeholder "\x01<n>\x02" stands for
  // alternative[n][flag], where flag is the value of its test.
  struct Variant {
    int test;
    std::string whenFalse, whenTrue;
  };
  SmallVector<Variant> variants;
  SmallVector<std::string> tests; // C++ conditions, computed before the nest
  auto variant = [&](int test, std::string whenFalse, std::string whenTrue) {
    variants.push_back({test, std::move(whenFalse), std::move(whenTrue)});
    return "\x01" + std::to_string(variants.size() - 1) + "\x02";
  };
  // Per non-full input: its row pointer, and how its column is indexed.
  llvm::DenseMap<Value, std::string> rowOf;
  llvm::DenseMap<Value, int> columnTest; // -1: the type decides
  llvm::DenseMap<Value, bool> columnBroadcast;
  auto lastDim = [](SymbolicTensorType t) -> Attribute {
    if (t.getAnyRank() || t.getRank() == 0)
      return {};
    return t.getDims().back();
  };
  auto isOne = [](Attribute d) {
    auto size = dyn_cast_or_null<IntegerAttr>(d);
    return size && size.getInt() == 1;
  };
  unsigned dynamicCount = 0;
  if (!flat) {
    for (Value v : inputs) {
      if (isFull(v))
        continue;
      auto type = cast<SymbolicTensorType>(v.getType());
      Attribute dim = lastDim(type), spaceDim = lastDim(space);
      bool scalarColumn =
          (!type.getAnyRank() && type.getRank() == 0) || isOne(dim);
      bool fullColumn = !scalarColumn && dim && spaceDim && dim == spaceDim &&
                        !isa<UnitAttr>(dim);
      if (!scalarColumn && !fullColumn)
        ++dynamicCount;
      columnBroadcast[v] = scalarColumn;
      columnTest[v] = scalarColumn || fullColumn ? -1 : -2; // -2: set below
    }
    for (const Reduction &r : reductions)
      if (r.alongAxis && !r.onRows.empty())
        ++dynamicCount;
  }
  // A lerp whose weight is one scalar for the whole kernel takes the same
  // side of its branch at every element: versioned too, each version calls
  // the side it takes (the branch, per element, kept loops scalar).
  // A constant weight decides the side here.
  SmallVector<LerpOp> lerps;
  llvm::DenseMap<Operation *, bool> lerpLowerKnown;
  for (LerpOp lerp : body.getOps<LerpOp>()) {
    Value weight = lerp.getOperand(2);
    if (isTensor(weight) || weight.getParentBlock() == &body ||
        !getElementTypeOrSelf(lerp.getType()).isF32())
      continue;
    auto constant = weight.getDefiningOp<ConstantOp>();
    auto value = constant ? dyn_cast<FloatAttr>(constant.getValue()) : nullptr;
    if (value) {
      // As the f32 weight the lerp gets compares.
      float w = static_cast<float>(value.getValueAsDouble());
      lerpLowerKnown[lerp] = w < 0.5f;
      continue;
    }
    lerps.push_back(lerp);
  }
  unsigned lerpCount = lerps.size();
  if ((int64_t{1} << (dynamicCount + lerpCount)) > maxVersions)
    lerpCount = 0;
  bool versioned =
      dynamicCount > 0 && (int64_t{1} << dynamicCount) <= maxVersions;
  // Reductions along an axis: per reduction, -1 when the types say whether
  // each row has a slot (then summed in a register per row), a test's index
  // when a version says, -2 when the slot is computed per element (too many
  // versions).
  llvm::DenseMap<ReduceOp, int> rowSlotTest;
  llvm::DenseMap<ReduceOp, std::string> rowAcc;
  if (!flat) {
    for (Value v : inputs) {
      if (isFull(v))
        continue;
      std::string t = tile(v);
      if (columnTest[v] == -2 && versioned) {
        tests.push_back(t + ".cols == 1");
        columnTest[v] = tests.size() - 1;
      }
    }
    for (const Reduction &r : reductions) {
      if (!r.alongAxis)
        continue;
      if (r.onRows.empty()) {
        rowSlotTest[r.op] = -1;
        continue;
      }
      if (versioned) {
        tests.push_back("!" + r.onRows);
        rowSlotTest[r.op] = tests.size() - 1;
      } else {
        rowSlotTest[r.op] = -2; // indexed as it comes
      }
    }
  }
  llvm::DenseMap<Operation *, int> lerpTest;
  for (LerpOp lerp : ArrayRef<LerpOp>(lerps).take_front(lerpCount)) {
    Type f32 = getElementTypeOrSelf(lerp.getType());
    Value weight = lerp.getOperand(2);
    tests.push_back("(" +
                    convert(scalar(weight),
                            getElementTypeOrSelf(weight.getType()), f32) +
                    ") < 0.5f");
    lerpTest[lerp] = tests.size() - 1;
  }

  // Loads of inputs at the current element.
  auto load = [&](Value v) -> std::string {
    std::string t = tile(v);
    std::string at;
    if (flat || isFull(v)) {
      at = t + ".data[" + index + "]";
    } else {
      std::string row = rowOf.lookup(v);
      int test = columnTest.lookup(v);
      if (test >= 0)
        at = variant(test, row + "[j]", row + "[0]");
      else if (test == -1)
        at = row + (columnBroadcast.lookup(v) ? "[0]" : "[j]");
      else
        at = row + "[" + t + ".cols == 1 ? 0 : j]";
    }
    if (getElementTypeOrSelf(v.getType()).isInteger(1))
      return "(" + at + " != 0.0f)";
    return at;
  };

  bool parallel = reductions.empty() || flat;
  // The inner loop's statements are gathered as text (with placeholders)
  // and printed once per version.
  std::string bodyText;
  llvm::raw_string_ostream bodyOs(bodyText);
  auto bodyLine = [&]() -> llvm::raw_ostream & { return bodyOs; };
  if (!flat) {
    for (Value v : inputs)
      if (!isFull(v))
        rowOf[v] = names.unique(tile(v) + "_row");
    for (const Reduction &r : reductions)
      if (r.alongAxis && rowSlotTest.lookup(r.op) != -2 &&
          (rowSlotTest.lookup(r.op) >= 0 || r.slot == "i"))
        rowAcc[r.op] = names.unique(r.acc + "_row");
  }
  llvm::DenseMap<Value, std::string> element; // body values at this element
  auto elementOf = [&](Value v) -> std::string {
    auto it = element.find(v);
    if (it != element.end())
      return it->second;
    if (isTensor(v))
      return load(v);
    return scalar(v);
  };
  auto accumulate = [&](ReduceKind kind, const std::string &slot,
                        const std::string &v) {
    switch (kind) {
    case ReduceKind::sum:
    case ReduceKind::mean:
      return slot + " += " + v + ";";
    case ReduceKind::norm:
      return slot + " += " + v + " * " + v + ";";
    case ReduceKind::max:
      return slot + " = std::max(" + slot + ", " + v + ");";
    }
    return std::string();
  };
  unsigned counter = 0;
  SmallVector<std::string> stores;
  for (Operation &op : body) {
    if (isa<YieldOp>(op))
      continue;
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      const Reduction &r = *llvm::find_if(
          reductions, [&](const Reduction &x) { return x.op == reduce; });
      std::string v = "static_cast<" + r.type + ">(" +
                      elementOf(reduce.getInput()) + ")";
      std::string column = r.acc + "[static_cast<size_t>(j)]";
      std::string statement;
      if (!r.alongAxis) {
        statement = accumulate(reduce.getKind(), r.acc, v);
      } else if (flat || rowSlotTest.lookup(reduce) == -2) {
        statement = accumulate(reduce.getKind(),
                               r.acc + "[static_cast<size_t>(" + r.slot + ")]",
                               v);
      } else if (int test = rowSlotTest.lookup(reduce); test >= 0) {
        statement = variant(test, accumulate(reduce.getKind(), column, v),
                            accumulate(reduce.getKind(), rowAcc[reduce], v));
      } else {
        statement = accumulate(reduce.getKind(),
                               r.slot == "i" ? rowAcc[reduce] : column, v);
      }
      bodyLine() << statement << "\n";
      continue;
    }
    SmallVector<std::string> operands;
    for (Value operand : op.getOperands())
      operands.push_back(elementOf(operand));
    std::string expr = elementExpression(&op, operands);
    if (expr.empty())
      return op.emitError("the CPU emitter cannot print this op in a kernel");
    Value result = op.getResult(0);
    auto known = lerpLowerKnown.find(&op);
    if (lerpTest.count(&op) || known != lerpLowerKnown.end()) {
      // lerp(start, end, weight) as optgen::runtime::lerp computes it, its
      // branch decided by the version.
      Type f32 = getElementTypeOrSelf(result.getType());
      SmallVector<std::string> in;
      for (auto [operand, text] : llvm::zip(op.getOperands(), operands))
        in.push_back(
            convert(text, getElementTypeOrSelf(operand.getType()), f32));
      std::string args = "(" + in[0] + ", " + in[1] + ", " + in[2] + ")";
      std::string lower = "optgen::runtime::lerpLower" + args;
      std::string upper = "optgen::runtime::lerpUpper" + args;
      expr = known != lerpLowerKnown.end()
                 ? (known->second ? lower : upper)
                 : variant(lerpTest[&op], upper, lower);
    }
    // A boolean in arithmetic is printed as `(b ? 1.0f : 0.0f)`; GCC turns
    // `x * (b ? 1.0f : 0.0f)` into a branch around the multiply, which it
    // then cannot vectorise (the multiply may trap). Through an integer the
    // conversion vectorises, with the same values.
    Type resultElement = getElementTypeOrSelf(result.getType());
    if (!resultElement.isInteger(1) && !isa<CmpOp>(op)) {
      for (auto [operand, text] : llvm::zip(op.getOperands(), operands)) {
        if (!getElementTypeOrSelf(operand.getType()).isInteger(1))
          continue;
        std::string branchy = convert(
            text, getElementTypeOrSelf(operand.getType()), resultElement);
        std::string flat = "static_cast<" + cType(resultElement).str() +
                           ">(static_cast<int32_t>(" + text + "))";
        if (branchy == text)
          continue;
        for (size_t at = 0;
             (at = expr.find(branchy, at)) != std::string::npos;
             at += flat.size())
          expr.replace(at, branchy.size(), flat);
      }
    }
    std::optional<StringRef> spec = specName(result);
    std::string name = names.unique(
        (spec ? *spec : StringRef("e")).str() + "_" + std::to_string(counter++));
    bodyLine() << "const " << cType(getElementTypeOrSelf(result.getType()))
               << " " << name << " = " << expr << ";\n";
    element[result] = name;
    auto out = outputTile.find(result);
    if (out != outputTile.end()) {
      std::string stored = getElementTypeOrSelf(result.getType()).isInteger(1)
                               ? "static_cast<float>(static_cast<int32_t>(" +
                                     name + "))"
                               : name;
      stores.push_back(out->second + ".data[" + index + "] = " + stored + ";");
    }
  }
  // Stores last: a result written in place must not clobber an input
  // element that a later op of this iteration still reads.
  for (const std::string &store : stores)
    bodyLine() << store << "\n";

  // The body of one version: the placeholders replaced by the alternatives
  // the tests' values `flags` choose (repeatedly: an alternative may hold
  // loads).
  auto instantiate = [&](unsigned flags) {
    std::string text = bodyText;
    for (size_t at; (at = text.find('\x01')) != std::string::npos;) {
      size_t close = text.find('\x02', at);
      const Variant &v = variants[std::stoul(text.substr(at + 1, close - at - 1))];
      text.replace(at, close - at + 1,
                   (flags >> v.test) & 1 ? v.whenTrue : v.whenFalse);
    }
    SmallVector<StringRef> lines;
    StringRef(text).split(lines, '\n', -1, /*KeepEmpty=*/false);
    for (StringRef statement : lines)
      line() << statement << "\n";
  };
  SmallVector<std::string> testNames;
  for (const std::string &test : tests) {
    testNames.push_back(names.unique("case"));
    line() << "const bool " << testNames.back() << " = " << test << ";\n";
  }
  // if (case0) { if (case1) ... } else ...: `leaf` per combination.
  std::function<void(unsigned, unsigned, function_ref<void(unsigned)>)>
      branch = [&](unsigned test, unsigned flags,
                   function_ref<void(unsigned)> leaf) {
        if (test == tests.size()) {
          leaf(flags);
          return;
        }
        line() << "if (" << testNames[test] << ") {\n";
        ++indent;
        branch(test + 1, flags | (1u << test), leaf);
        --indent;
        line() << "} else {\n";
        ++indent;
        branch(test + 1, flags, leaf);
        --indent;
        line() << "}\n";
      };
  if (flat) {
    branch(0, 0, [&](unsigned flags) {
      line() << "OPTGEN_PARALLEL_FOR(simd if (parallel : " << R << " * " << C
             << " >= " << parallelElements << ")";
      for (const Reduction &r : reductions)
        os << " reduction("
           << (r.op.getKind() == ReduceKind::max ? "max" : "+") << " : "
           << r.acc << ")";
      os << ")\n";
      line() << "for (int64_t k = 0; k < " << R << " * " << C
             << "; ++k) {\n";
      ++indent;
      instantiate(flags);
      --indent;
      line() << "}\n";
    });
  } else {
    if (parallel)
      line() << "OPTGEN_PARALLEL_FOR(if (" << R << " * " << C
             << " >= " << parallelElements << "))\n";
    line() << "for (int64_t i = 0; i < " << R << "; ++i) {\n";
    ++indent;
    for (Value v : inputs) {
      if (isFull(v))
        continue;
      std::string t = tile(v);
      auto type = cast<SymbolicTensorType>(v.getType());
      bool oneRow = !type.getAnyRank() && type.getRank() <= 1;
      line() << "const float *const " << rowOf[v] << " = " << t << ".data"
             << (oneRow ? std::string()
                        : " + (" + t + ".rows == 1 ? 0 : i) * " + t + ".cols")
             << ";\n";
    }
    for (const Reduction &r : reductions)
      if (rowAcc.count(r.op))
        line() << r.type << " " << rowAcc[r.op] << " = "
               << (r.op.getKind() == ReduceKind::max
                       ? "-std::numeric_limits<" + r.type + ">::infinity()"
                       : floatLiteral(0, r.type == "double"))
               << ";\n";
    // The inner loop of version `flags`, vectorised with the reductions it
    // makes in registers.
    auto innerLoop = [&](unsigned flags) {
      line() << "OPTGEN_SIMD(";
      bool first = true;
      for (const Reduction &r : reductions) {
        std::string name;
        if (!r.alongAxis)
          name = r.acc;
        else if (rowAcc.count(r.op)) {
          int test = rowSlotTest.lookup(r.op);
          if (test >= 0 && !((flags >> test) & 1))
            continue;
          name = rowAcc[r.op];
        } else
          continue;
        os << (first ? "" : " ") << "reduction("
           << (r.op.getKind() == ReduceKind::max ? "max" : "+") << " : "
           << name << ")";
        first = false;
      }
      os << ")\n";
      line() << "for (int64_t j = 0; j < " << C << "; ++j) {\n";
      ++indent;
      instantiate(flags);
      --indent;
      line() << "}\n";
    };
    branch(0, 0, innerLoop);
    for (const Reduction &r : reductions) {
      if (!rowAcc.count(r.op))
        continue;
      std::string slot = r.acc + "[static_cast<size_t>(i)]";
      std::string combine =
          r.op.getKind() == ReduceKind::max
              ? slot + " = std::max(" + slot + ", " + rowAcc[r.op] + ");"
              : slot + " += " + rowAcc[r.op] + ";";
      int test = rowSlotTest.lookup(r.op);
      if (test >= 0)
        line() << "if (" << testNames[test] << ")\n";
      line() << (test >= 0 ? "  " : "") << combine << "\n";
    }
    --indent;
    line() << "}\n";
  }

  // Finish the reductions: mean divides, norm takes the root; each result
  // rounds to its element type.
  for (Reduction &r : reductions) {
    Type element = getElementTypeOrSelf(r.op.getResult().getType());
    auto finish = [&](const std::string &acc, const std::string &count) {
      std::string v = acc;
      if (r.op.getKind() == ReduceKind::mean)
        v = "(" + acc + " / static_cast<" + r.type + ">(" + count + "))";
      if (r.op.getKind() == ReduceKind::norm)
        v = "std::sqrt(" + acc + ")";
      return rounded("static_cast<float>(" + v + ")", element);
    };
    Value result = kernel.getResult(
        llvm::find(yield.getValues(), r.op.getResult()) - yield.getValues().begin());
    if (!r.alongAxis) {
      std::string name = nameFor(r.op.getResult(), r.op.getKind() == ReduceKind::norm ? "norm" : "total");
      line() << "const float " << name << " = "
             << finish(r.acc, R + " * " + C) << ";\n";
      exprs[result] = name;
      continue;
    }
    line() << "for (int64_t k = 0; k < " << r.size << "; ++k)\n";
    line() << "  " << r.out << ".data[k] = " << finish(r.acc + "[k]", r.count)
           << ";\n";
  }
  return success();
}

LogicalResult RuleEmitter::emitGemm(GemmOp op) {
  std::string a = tile(op.getA()), b = tile(op.getB());
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  std::string rows = a + (ta ? ".cols" : ".rows");
  std::string cols = b + (tb ? ".rows" : ".cols");
  std::string out = placeTile(op, rows, cols, "product");
  Type f32 = Builder(op.getContext()).getF32Type();
  auto scale = [&](Value value, const char *absent) {
    return value ? convert(scalar(value), value.getType(), f32)
                 : std::string(absent);
  };
  line() << "optgen::runtime::gemm(" << a << ", " << (ta ? "true" : "false")
         << ", " << b << ", " << (tb ? "true" : "false") << ", "
         << scale(op.getAlpha(), "1.0f") << ", "
         << (op.getC() ? "&" + tile(op.getC()) : std::string("nullptr"))
         << ", " << scale(op.getBeta(), "0.0f") << ", "
         << (op.getSymmetric() ? "true" : "false") << ", " << out << ");\n";
  Type element = getElementTypeOrSelf(op.getType());
  if (element.isBF16())
    line() << "optgen::runtime::roundTileToBF16(" << out << ");\n";
  else if (element.isF16())
    line() << "optgen::runtime::roundTileToF16(" << out << ");\n";
  return success();
}

LogicalResult RuleEmitter::emitTranspose(TransposeOp op) {
  std::string src = tile(op.getInput());
  std::string dst = placeTile(op, src + ".cols", src + ".rows", "transposed");
  line() << "optgen::runtime::transpose(" << src << ", " << dst << ");\n";
  return success();
}

LogicalResult RuleEmitter::emitIf(IfOp op) {
  SmallVector<std::string> results;
  for (Value result : op.getResults()) {
    std::string name = nameFor(result, "chosen");
    if (isTensor(result)) {
      line() << "optgen::runtime::Tile " << name << ";\n";
      tiles[result] = name;
    } else {
      line() << cType(result.getType()) << " " << name << "{};\n";
      exprs[result] = name;
    }
    results.push_back(name);
  }
  auto branch = [&](Region &region) -> LogicalResult {
    ++indent;
    if (failed(emitBlock(region.front())))
      return failure();
    auto yield = cast<YieldOp>(region.front().getTerminator());
    for (auto [value, result, name] :
         llvm::zip(yield.getValues(), op.getResults(), results)) {
      if (isTensor(value)) {
        std::string t = tile(value);
        line() << name << " = {" << memoryOf(getBuffer(result)) << ", " << t
               << ".rows, " << t << ".cols};\n";
        if (getBuffer(value) != getBuffer(result))
          line() << "optgen::runtime::copyTile(" << t << ", " << name
                 << ".data);\n";
      } else {
        line() << name << " = " << scalar(value) << ";\n";
      }
    }
    --indent;
    return success();
  };
  line() << "if (" << scalar(op.getCondition()) << ") {\n";
  if (failed(branch(op.getThenRegion())))
    return failure();
  line() << "} else {\n";
  if (failed(branch(op.getElseRegion())))
    return failure();
  line() << "}\n";
  return success();
}

LogicalResult RuleEmitter::emitForTable(ForTableOp op) {
  int64_t rows = cast<ShapedType>(op.getTable().getType()).getDimSize(0);
  int64_t width = op.getRowLength();
  std::string tableName = "kTable" + std::to_string(tables.size());
  tables.push_back(tableDefinition(op, tableName, options.specName));

  Block &body = op.getBody().front();
  SmallVector<std::string> carried;
  for (auto [init, arg, result] :
       llvm::zip(op.getInits(), body.getArguments().drop_front(width),
                 op.getResults())) {
    std::string name = nameFor(result, "carried");
    if (isTensor(init)) {
      std::string src = tile(init);
      line() << "optgen::runtime::Tile " << name << "{"
             << memoryOf(getBuffer(result)) << ", " << src << ".rows, " << src
             << ".cols};\n";
      if (getBuffer(init) != getBuffer(result))
        line() << "optgen::runtime::copyTile(" << src << ", " << name
               << ".data);\n";
      tiles[arg] = name;
      tiles[result] = name;
    } else {
      line() << cType(init.getType()) << " " << name << " = "
             << scalar(init) << ";\n";
      exprs[arg] = name;
      exprs[result] = name;
    }
    carried.push_back(name);
  }
  std::string row = names.unique("row");
  line() << "for (int64_t " << row << " = 0; " << row << " < std::min<int64_t>("
         << scalar(op.getCount()) << ", " << rows << "); ++" << row << ") {\n";
  ++indent;
  for (int64_t c = 0; c < width; ++c) {
    std::string name = names.unique(std::string(1, static_cast<char>('a' + c % 26)));
    line() << "const float " << name << " = " << tableName << "[" << row
           << "][" << c << "];\n";
    exprs[body.getArgument(c)] = name;
  }
  if (failed(emitBlock(body)))
    return failure();
  auto yield = cast<YieldOp>(body.getTerminator());
  auto next = op->getAttrOfType<ArrayAttr>(kNextBuffersAttr);
  for (auto [index, value, result, name] :
       llvm::enumerate(yield.getValues(), op.getResults(), carried)) {
    if (isTensor(value)) {
      BufferAttr made = getBuffer(value), slot = getBuffer(result);
      if (next && next[index] == made) {
        // Double buffered: the slots trade places, the carried tile
        // follows.
        std::string a = memoryOf(slot), b = memoryOf(made);
        line() << name << ".data = " << b << ";\n";
        line() << b << " = " << a << ";\n";
        line() << a << " = " << name << ".data;\n";
      } else if (made != slot) {
        line() << "optgen::runtime::copyTile(" << tile(value) << ", " << name
               << ".data);\n";
      }
    } else {
      line() << name << " = " << scalar(value) << ";\n";
    }
  }
  --indent;
  line() << "}\n";
  return success();
}

LogicalResult RuleEmitter::emitUpdate(UpdateOp op) {
  // Values the IR did not already put in their storage are copied there.
  MLIRContext *context = op.getContext();
  auto copy = [&](Value value, BufferAttr storage, const std::string &to) {
    if (getBuffer(value) == storage)
      return;
    noteSource(op);
    line() << "optgen::runtime::copyTile(" << tile(value) << ", " << to
           << ");\n";
  };
  copy(op.getParam(), BufferAttr::get(context, BufferKind::param, 0),
       "call.param");
  for (auto [index, value] : llvm::enumerate(op.getStates())) {
    if (isTensor(value)) {
      copy(value, BufferAttr::get(context, BufferKind::state, index),
           "call.states[" + std::to_string(index) + "]");
    } else {
      noteSource(op);
      line() << "call.states[" << index << "][0] = " << scalar(value) << ";\n";
    }
  }
  return success();
}

LogicalResult RuleEmitter::emitRule(RuleOp rule) {
  currentRule = rule;
  if (!rule->getAttrOfType<ArrayAttr>(kWorkspaceAttr))
    return rule.emitError("the CPU emitter needs the rule's buffers; run "
                          "--optgen-assign-buffers first");
  if (Operation *unbuffered = findUnbufferedTensor(rule))
    return unbuffered->emitError("the CPU emitter needs the buffer of every "
                                 "tensor; run --optgen-assign-buffers first");
  for (Attribute slot : rule->getAttrOfType<ArrayAttr>(kWorkspaceAttr)) {
    Type storage = cast<SlotAttr>(slot).getStorage();
    if (storage.isBF16() || storage.isF16())
      return rule.emitError("the CPU emitter stores tensors as f32, not ")
             << storage
             << "; run --optgen-assign-buffers for a host target (wide "
                "storage)";
  }
  std::string ident = legalIdentifier(rule.getSymName());
  std::optional<FileLineColLoc> file = fileLocation(rule.getLoc());
  os << "// Rule '" << commentText(rule.getSymName()) << "', "
     << commentText(options.specName) << ":" << (file ? file->getLine() : 0) << ".\n";
  os << "OPTGEN_STEP_CLONES void step_" << ident
     << "(const optgen::runtime::RuleCall &call) {\n";
  std::string p = names.unique(cast<StringAttr>(rule.getInputs()[0]).getValue());
  std::string g = names.unique(cast<StringAttr>(rule.getInputs()[1]).getValue());
  line() << "optgen::runtime::Tile " << p
         << "{call.param, call.rows, call.cols};\n";
  line() << "const optgen::runtime::Tile " << g
         << "{const_cast<float *>(call.grad), call.rows, call.cols};\n";
  tiles[rule.getParam()] = p;
  tiles[rule.getGrad()] = g;
  emitWorkspacePointers(rule);
  if (failed(emitBlock(rule.getBlock())))
    return failure();
  os << "}\n\n";
  return success();
}

void RuleEmitter::emitWorkspacePointers(RuleOp rule) {
  auto slots = rule->getAttrOfType<ArrayAttr>(kWorkspaceAttr);
  if (slots.empty())
    return;
  std::string ident = legalIdentifier(rule.getSymName());
  std::string offsets = names.unique("offsets");
  line() << "int64_t " << offsets << "[" << slots.size() << "];\n";
  line() << "workspace_layout_" << ident << "(call.rows, call.cols, "
         << offsets << ");\n";
  // Slots a double-buffered loop exchanges are variables.
  llvm::SmallDenseSet<int64_t> exchanged;
  rule.walk([&](ForTableOp loop) {
    auto next = loop->getAttrOfType<ArrayAttr>(kNextBuffersAttr);
    if (!next)
      return;
    for (auto [result, made] : llvm::zip(loop.getResults(), next))
      if (auto buffer = dyn_cast<BufferAttr>(made)) {
        exchanged.insert(buffer.getIndex());
        exchanged.insert(getBuffer(result).getIndex());
      }
  });
  for (auto [index, slot] : llvm::enumerate(slots)) {
    slotNames.push_back(names.unique("slot" + std::to_string(index)));
    line() << "float *" << (exchanged.count(index) ? "" : "const ")
           << slotNames.back() << " = call.workspace + " << offsets << "["
           << index << "];\n";
  }
}

LogicalResult RuleEmitter::emitGlobalContribution(OptimizerOp optimizer,
                                                  StringRef function) {
  for (StringRef reserved : {"param", "grad", "count", "partials", "k"})
    (void)names.unique(reserved);
  FailureOr<GlobalsPrinter> globals = GlobalsPrinter::create(optimizer, *this);
  if (failed(globals))
    return failure();
  os << "// The globals' partials of `count` elements of one parameter (or of "
        "a part of\n// it), one per reduction across parameters, each "
        "accumulated in the type the IR\n// names.\n";
  os << "OPTGEN_STEP_CLONES void " << function << "(const float *"
     << (globals->readsParam() ? "param" : "") << ", const float *"
     << (globals->readsGrad() ? "grad" : "")
     << ", int64_t count, double *partials) {\n";
  if (failed(globals->printElementConstants()))
    return failure();
  SmallVector<ReduceParamsOp> partials(globals->partials());
  SmallVector<std::string> accumulators, types;
  for (ReduceParamsOp reduce : partials) {
    if (!reduce.getAccumulator())
      return reduce.emitError("the CPU emitter needs the accumulator type; "
                              "run --optgen-set-accumulators first");
    Type type = *reduce.getAccumulator();
    accumulators.push_back(names.unique("acc"));
    types.push_back(cType(type).str());
    line() << types.back() << " " << accumulators.back() << " = "
           << (reduce.getKind() == ReduceKind::max
                   ? "-std::numeric_limits<" + types.back() + ">::infinity()"
                   : floatLiteral(0, type.isF64()))
           << ";\n";
  }
  line() << "OPTGEN_SIMD(";
  for (auto [i, reduce] : llvm::enumerate(partials))
    os << (i ? " " : "") << "reduction("
       << (reduce.getKind() == ReduceKind::max ? "max" : "+") << " : "
       << accumulators[i] << ")";
  os << ")\n";
  line() << "for (int64_t k = 0; k < count; ++k) {\n";
  ++indent;
  if (failed(globals->printElement(
          "param[k]", "grad[k]", [&](size_t k, const std::string &value) {
            std::string acc = accumulators[k];
            std::string v = "static_cast<" + types[k] + ">(" + value + ")";
            line() << (partials[k].getKind() == ReduceKind::max
                           ? acc + " = std::max(" + acc + ", " + v + ");"
                           : acc + " += " + v + ";")
                   << "\n";
          })))
    return failure();
  --indent;
  line() << "}\n";
  for (auto [i, acc] : llvm::enumerate(accumulators))
    line() << "partials[" << i << "] = " << acc << ";\n";
  os << "}\n\n";
  return success();
}

LogicalResult RuleEmitter::emitGlobalFinish(OptimizerOp optimizer,
                                            StringRef function) {
  for (StringRef reserved : {"partials", "globals"})
    (void)names.unique(reserved);
  FailureOr<GlobalsPrinter> globals = GlobalsPrinter::create(optimizer, *this);
  if (failed(globals))
    return failure();
  os << "// Each global from its partials, combined over every parameter "
        "(and rank).\n";
  os << "void " << function
     << "(const double *partials, float *globals) {\n";
  if (failed(globals->printFinish(
          [](size_t k) { return "partials[" + std::to_string(k) + "]"; },
          [&](size_t global, const std::string &value) {
            line() << "globals[" << global << "] = " << value << ";\n";
          })))
    return failure();
  os << "}\n\n";
  return success();
}

} // namespace

LogicalResult optgen::emitCpu(OptimizerOp optimizer, const EmitOptions &options,
                              std::map<std::string, std::string> &files) {
  FailureOr<TargetAttr> target =
      requireTargetOfKind(optimizer, "the CPU printer", TargetKind::host);
  if (failed(target))
    return failure();
  TargetSpelling spelling{"optgen/runtime/Optimizer.h",
                          "optgen::runtime::Optimizer",
                          "optgen/runtime/CaseRunner.h",
                          "optgen::runtime::runnerMain", ".cpp"};
  return emitHostFiles(
      optimizer, options, spelling,
      [&](RuleOp rule, llvm::raw_ostream &os, std::vector<std::string> &tables,
          RuleStepFunctions &step) {
        step.step = "step_" + legalIdentifier(rule.getSymName());
        return RuleEmitter(os, options, *target, tables).emitRule(rule);
      },
      [&](OptimizerOp optimizer, llvm::raw_ostream &os,
          std::vector<std::string> &tables, GlobalsFunctions &globals) {
        globals.contribution = "globalContribution";
        globals.finish = "finishGlobals";
        if (failed(RuleEmitter(os, options, *target, tables)
                       .emitGlobalContribution(optimizer,
                                               globals.contribution)))
          return failure();
        return RuleEmitter(os, options, *target, tables)
            .emitGlobalFinish(optimizer, globals.finish);
      },
      files);
}
