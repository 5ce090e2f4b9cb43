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

#include "optgen/Target/CFamily/Expressions.h"
#include "optgen/Target/CFamily/Globals.h"
#include "optgen/Target/CFamily/Names.h"
#include "optgen/Target/CFamily/SourceInfo.h"
#include "optgen/Target/CFamily/StatementPrinter.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <set>
#include <sstream>

using namespace mlir;
using namespace optgen;

namespace {

bool isTensor(Value v) { return isa<SymbolicTensorType>(v.getType()); }

//===----------------------------------------------------------------------===//
// One rule (or a `where` condition, a state-shape function, the globals)
//===----------------------------------------------------------------------===//

class RuleEmitter : StatementPrinter {
public:
  RuleEmitter(llvm::raw_ostream &os, const CpuEmitOptions &options,
              std::vector<std::string> &tables)
      : StatementPrinter(os, options.specName, options.sourceLine),
        options(options), tables(tables) {}

  LogicalResult emitRule(RuleOp rule);
  LogicalResult emitStateShapes(RuleOp rule);
  LogicalResult emitWhere(GroupOp group, StringRef function);
  /// GlobalsSpec::contribution and GlobalsSpec::finish of the optimizer's
  /// globals, as `function`.
  LogicalResult emitGlobalContribution(OptimizerOp optimizer,
                                       StringRef function);
  LogicalResult emitGlobalFinish(OptimizerOp optimizer, StringRef function);

private:
  const CpuEmitOptions &options;
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
  if (std::optional<int64_t> constant = constantInt(axis))
    return t + ((*constant == 0 || *constant == -2) ? ".rows" : ".cols");
  return llvm::formatv("(({0}) == 0 || ({0}) == -2 ? {1}.rows : {1}.cols)",
                       axisExpr, t)
      .str();
}

LogicalResult RuleEmitter::emitScalarMath(Operation *op) {
  SmallVector<std::string> operands;
  for (Value v : op->getOperands())
    operands.push_back(scalar(v));
  std::string expr = elementExpression(op, operands);
  if (expr.empty())
    return op->emitError("the CPU emitter cannot print this op");
  Value result = op->getResult(0);
  std::string name = nameFor(result, "s");
  line() << "const " << cType(result.getType()) << " " << name << " = "
         << expr << ";\n";
  exprs[result] = name;
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
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](HyperOp hyper) -> LogicalResult {
        std::optional<uint64_t> offset = hyper.getOffset();
        if (!offset)
          return hyper.emitError("the CPU emitter needs the hyperparameters' "
                                 "offsets; run --optgen-assign-hyper-offsets "
                                 "first");
        std::string name = names.unique(hyper.getName());
        if (auto tuple = dyn_cast<TupleType>(hyper.getType())) {
          // Elements are read by tuple_get; remember where they start.
          exprs[hyper] = std::to_string(*offset);
          return success();
        }
        line() << "const " << cType(hyper.getType()) << " " << name
               << " = static_cast<" << cType(hyper.getType())
               << ">(call.hypers[" << *offset << "]);\n";
        exprs[hyper] = name;
        return success();
      })
      .Case([&](TupleGetOp get) -> LogicalResult {
        auto hyper = get.getTuple().getDefiningOp<HyperOp>();
        if (!hyper)
          return get.emitError("the CPU emitter reads tuples of hypers only");
        int64_t offset = std::stoll(scalar(hyper)) + get.getIndex();
        std::string name =
            names.unique(hyper.getName().str() + "_" +
                         std::to_string(get.getIndex()));
        line() << "const " << cType(get.getType()) << " " << name
               << " = static_cast<" << cType(get.getType())
               << ">(call.hypers[" << offset << "]);\n";
        exprs[get] = name;
        return success();
      })
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
      .Case([&](GlobalValueOp global) {
        auto optimizer = global->getParentOfType<OptimizerOp>();
        int64_t index = 0;
        for (GlobalOp g : optimizer.getBlock().getOps<GlobalOp>()) {
          if (g.getSymName() == global.getGlobal())
            break;
          ++index;
        }
        std::string name = nameFor(global, "global");
        line() << "const float " << name << " = call.globals[" << index
               << "];\n";
        exprs[global] = name;
        return success();
      })
      .Case([&](ConstantOp constant) -> LogicalResult {
        std::string expr = constantExpression(constant.getValue());
        if (expr.empty())
          return constant.emitError("the CPU emitter cannot print ")
                 << constant.getValue();
        exprs[constant] = expr;
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
        bool onRows = inputType.getRank() != 1 && (*known == 0 || *known == -2);
        r.axisRows = onRows ? std::string("int64_t{1}") : R;
        r.axisCols = onRows ? C : std::string("int64_t{1}");
        r.count = onRows ? R : C;
        r.slot = onRows ? "j" : "i";
      } else {
        std::string onRows = "((" + axis + ") == 0 || (" + axis + ") == -2)";
        r.axisRows = "(" + onRows + " ? int64_t{1} : " + R + ")";
        r.axisCols = "(" + onRows + " ? " + C + " : int64_t{1})";
        r.count = "(" + onRows + " ? " + R + " : " + C + ")";
        r.slot = "(" + onRows + " ? j : i)";
        r.onRows = onRows;
      }
      // The accumulator lives in the workspace slot the IR gave it.
      auto buffers = reduce->getAttrOfType<ArrayAttr>("optgen.buffers");
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
  // printed once per case under a test made before the nest (at most
  // kMaxVersions versions), so that each version is a unit-stride loop the
  // compiler vectorises: a broadcast load or a select in a loop it cannot
  // vectorise costs a branch per element (a mispredicted one for a data-
  // dependent select). Reductions along an unknown axis are versioned
  // likewise; one along the columns sums each row into a register.
  constexpr unsigned kMaxVersions = 8;
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
  if ((1u << (dynamicCount + lerpCount)) > kMaxVersions)
    lerpCount = 0;
  bool versioned = dynamicCount > 0 && (1u << dynamicCount) <= kMaxVersions;
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
             << " >= 65536)";
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
             << " >= 65536))\n";
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
  auto next = op->getAttrOfType<ArrayAttr>("optgen.next_buffers");
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
  if (!rule->getAttrOfType<ArrayAttr>("optgen.workspace"))
    return rule.emitError("the CPU emitter needs the rule's buffers; run "
                          "--optgen-assign-buffers first");
  if (Operation *unbuffered = findUnbufferedTensor(rule))
    return unbuffered->emitError("the CPU emitter needs the buffer of every "
                                 "tensor; run --optgen-assign-buffers first");
  for (Attribute slot : rule->getAttrOfType<ArrayAttr>("optgen.workspace")) {
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
  auto slots = rule->getAttrOfType<ArrayAttr>("optgen.workspace");
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
    auto next = loop->getAttrOfType<ArrayAttr>("optgen.next_buffers");
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

LogicalResult RuleEmitter::emitStateShapes(RuleOp rule) {
  currentRule = rule;
  std::string ident = legalIdentifier(rule.getSymName());
  if (getRuleStates(rule).empty()) {
    // Nothing to shape: no parameter is named, so none is left unused.
    os << "// Rule '" << commentText(rule.getSymName())
       << "' keeps no state.\n";
    os << "void states_" << ident
       << "(const int64_t *, int, int64_t *, int64_t *) {}\n\n";
    return success();
  }
  os << "// The shapes of rule '" << commentText(rule.getSymName())
     << "''s states for a parameter of `shape`.\n";
  os << "void states_" << ident
     << "(const int64_t *shape, int rank, int64_t *rows, int64_t *cols) {\n";
  line() << "const struct {\n";
  line() << "  const int64_t *shape;\n";
  line() << "  int rank;\n";
  line() << "} call{shape, rank};\n";
  line() << "static_cast<void>(call); // read by the axis math, if any\n";
  line() << "int64_t numel = 1;\n";
  line() << "for (int d = 0; d < rank; ++d)\n";
  line() << "  numel *= shape[d];\n";
  line() << "const optgen::runtime::Tile param{nullptr, rank == 2 ? shape[0] : "
            "1, rank == 2 ? shape[1] : numel};\n";
  tiles[rule.getParam()] = "param";
  tiles[rule.getGrad()] = "param";
  (void)names.unique("param");
  (void)names.unique("numel");
  // Only the scalar math the states' axes depend on.
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> worklist;
  SmallVector<StateOp> states = getRuleStates(rule);
  for (StateOp state : states)
    if (state.getAxis())
      worklist.push_back(state.getAxis());
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !slice.insert(def))
      continue;
    for (Value operand : def->getOperands())
      if (!isTensor(operand))
        worklist.push_back(operand);
  }
  for (Operation &op : rule.getBlock())
    if (slice.contains(&op) && failed(emitOp(&op)))
      return failure();
  for (auto [index, state] : llvm::enumerate(states)) {
    if (!state.getLike()) {
      line() << "rows[" << index << "] = 1;\n";
      line() << "cols[" << index << "] = 1;\n";
      continue;
    }
    if (state.getLike() != rule.getParam() && state.getLike() != rule.getGrad())
      return state.emitError("the CPU emitter shapes states like the "
                             "parameter only");
    if (!state.getAxis()) {
      line() << "rows[" << index << "] = param.rows;\n";
      line() << "cols[" << index << "] = param.cols;\n";
      continue;
    }
    auto type = cast<SymbolicTensorType>(state.getLike().getType());
    std::string axis = scalar(state.getAxis());
    std::string onRows = type.getRank() == 1
                             ? std::string("false")
                             : "((" + axis + ") == 0 || (" + axis + ") == -2)";
    line() << "rows[" << index << "] = " << onRows << " ? 1 : param.rows;\n";
    line() << "cols[" << index << "] = " << onRows << " ? param.cols : 1;\n";
  }
  os << "}\n\n";
  return success();
}

LogicalResult RuleEmitter::emitWhere(GroupOp group, StringRef function) {
  os << "// The 'where' of group '" << commentText(group.getSymName())
     << "'.\n";
  os << "bool " << function << "(const int64_t *shape, int rank) {\n";
  line() << "const struct {\n";
  line() << "  const int64_t *shape;\n";
  line() << "  int rank;\n";
  line() << "} call{shape, rank};\n";
  line() << "static_cast<void>(call); // read by shape queries, if any\n";
  Block &block = group.getPredicate().front();
  // Shape queries read the shape directly; an axis beyond the rank gives
  // -1, so a condition on it is false rather than undefined.
  for (Operation &op : block) {
    if (auto dim = dyn_cast<DimOp>(op)) {
      std::string name = nameFor(dim, "size");
      std::string axis = scalar(dim.getAxis());
      line() << "const int64_t " << name << " = (" << axis << ") >= -rank && ("
             << axis << ") < rank ? shape[(" << axis << ") < 0 ? (" << axis
             << ") + rank : (" << axis << ")] : -1;\n";
      exprs[dim] = name;
      continue;
    }
    if (auto numel = dyn_cast<NumelOp>(op)) {
      std::string name = nameFor(numel, "numel");
      line() << "int64_t " << name << " = 1;\n";
      line() << "for (int d = 0; d < rank; ++d)\n";
      line() << "  " << name << " *= shape[d];\n";
      exprs[numel] = name;
      continue;
    }
    if (auto yield = dyn_cast<YieldOp>(op)) {
      line() << "return " << scalar(yield.getValues()[0]) << ";\n";
      continue;
    }
    if (failed(emitOp(&op)))
      return failure();
  }
  os << "}\n\n";
  return success();
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

//===----------------------------------------------------------------------===//
// The workspace of a rule
//===----------------------------------------------------------------------===//

/// The elements of a slot of `type` for a parameter seen as rows x cols,
/// the rule's parameter being of `param`'s type: its symbols are the rows
/// and columns; a `?` is at most the parameter's extent there.
std::string slotElements(SymbolicTensorType type, SymbolicTensorType param) {
  if (type.getAnyRank())
    return "rows * cols";
  auto extentOf = [&](Attribute dim, size_t axis) -> std::string {
    if (!param.getAnyRank()) {
      ArrayRef<Attribute> dims = param.getDims();
      auto at = llvm::find(dims, dim);
      if (isa<StringAttr>(dim) && at != dims.end())
        return dims.size() == 2 && at == dims.begin() ? "rows" : "cols";
      if (isa<UnitAttr>(dim) && static_cast<int64_t>(dims.size()) == type.getRank())
        return dims.size() == 2 && axis == 0 ? "rows" : "cols";
    }
    return "rows * cols";
  };
  // Known extents multiply into one number.
  int64_t known = 1;
  std::string text;
  for (auto [axis, dim] : llvm::enumerate(type.getDims())) {
    if (auto size = dyn_cast<IntegerAttr>(dim)) {
      known *= size.getInt();
      continue;
    }
    text += (text.empty() ? "" : " * ") + extentOf(dim, axis);
  }
  if (text.empty())
    return std::to_string(known);
  return known == 1 ? text : std::to_string(known) + " * " + text;
}

/// The rule's workspace layout (offsets of its slots, in floats) and the
/// size the runtime allocates. Every slot starts 16 bytes aligned, the
/// width of a vector load and what cuBLASLt's tensor-core products want of
/// their operands; f64 slots come first (the rest of the alignment is the
/// runtime's: a member's workspace starts 256-byte aligned).
void emitWorkspace(RuleOp rule, raw_ostream &os) {
  std::string ident = legalIdentifier(rule.getSymName());
  auto slots = rule->getAttrOfType<ArrayAttr>("optgen.workspace");
  auto param = cast<SymbolicTensorType>(rule.getParam().getType());
  os << "// The workspace of rule '" << commentText(rule.getSymName())
     << "' for a parameter of `shape`, in floats";
  if (slots.empty()) {
    os << ": none.\n";
    os << "int64_t workspace_" << ident << "(const int64_t *, int) {\n";
    os << "  return 0;\n";
    os << "}\n\n";
    return;
  }
  os << ".\n";
  os << "// Slot offsets for a parameter seen as rows x cols (f64 slots "
        "first, each slot\n// 16-byte aligned); returns the total.\n";
  std::string body;
  for (bool wide : {true, false})
    for (auto [index, slot] : llvm::enumerate(slots)) {
      auto type = cast<SlotAttr>(slot);
      Type storage = type.getStorage();
      if (storage.isF64() != wide)
        continue;
      std::string elements = slotElements(type.getShape(), param);
      std::string extent = describeType(type.getShape());
      std::string storageName;
      llvm::raw_string_ostream(storageName) << storage;
      body += "  offsets[" + std::to_string(index) + "] = at; // " +
              extent.substr(0, extent.rfind(' ')) + " " + storageName + "\n";
      // Elements per 16 bytes, and per float.
      int64_t bytes = storage.getIntOrFloatBitWidth() / 8;
      int64_t perVector = 16 / bytes;
      if (llvm::all_of(elements, llvm::isDigit)) {
        int64_t count = std::stoll(elements);
        body += "  at += " +
                std::to_string((count + perVector - 1) / perVector * 4) +
                ";\n";
        continue;
      }
      body += "  at += (" + elements + " + " + std::to_string(perVector - 1) +
              ") / " + std::to_string(perVector) + " * 4;\n";
    }
  // Unnamed when no slot's size depends on them (no unused parameters).
  auto uses = [&](StringRef word) {
    return llvm::StringRef(body).contains((" " + word).str()) ||
           llvm::StringRef(body).contains(("(" + word).str());
  };
  os << "int64_t workspace_layout_" << ident << "(int64_t"
     << (uses("rows") ? " rows" : "") << ", int64_t"
     << (uses("cols") ? " cols" : "") << ", int64_t *offsets) {\n";
  os << "  int64_t at = 0;\n" << body;
  os << "  return at;\n";
  os << "}\n\n";
  os << "int64_t workspace_" << ident << "(const int64_t *shape, int rank) {\n";
  os << "  int64_t numel = 1;\n";
  os << "  for (int d = 0; d < rank; ++d)\n";
  os << "    numel *= shape[d];\n";
  os << "  int64_t offsets[" << slots.size() << "];\n";
  os << "  return workspace_layout_" << ident
     << "(rank == 2 ? shape[0] : 1, rank == 2 ? shape[1] : numel, offsets);\n";
  os << "}\n\n";
}

//===----------------------------------------------------------------------===//
// The compiled step
//===----------------------------------------------------------------------===//

/// "a, b, c and 4 more": a unit's parameters, for a comment.
std::string describeMembers(UnitOp unit) {
  std::string text;
  ArrayAttr params = unit.getParams();
  size_t shown = std::min<size_t>(params.size(), 3);
  for (size_t i = 0; i < shown; ++i)
    text += (i ? ", " : "") +
            commentText(cast<StringAttr>(params[i]).getValue());
  if (params.size() > shown)
    text += " and " + std::to_string(params.size() - shown) + " more";
  return text;
}

/// `schedule` as straight-line code: the executor's primitives in the
/// order the schedule gives, every rank running the same program.
void emitCompiledStep(ScheduleOp schedule, raw_ostream &os) {
  llvm::DenseMap<Value, int> units, tokens;
  os << "// The step on " << schedule.getWorldSize()
     << (schedule.getWorldSize() == 1 ? " rank" : " ranks")
     << ", as compiled (optgen.schedule): every reduction first, each "
        "unit\n// computed once its reduction has landed, its gather "
        "launched at once.\n";
  Block &program = schedule.getBody().front();
  if (!program.getOps<GatherPartialsOp>().empty())
    os << "// The globals first: each unit's partials once its reduction has "
          "landed, the\n// partials gathered and the globals finished, and "
          "only then every update.\n";
  else if (!program.getOps<FinishGlobalsOp>().empty())
    os << "// The globals first: each unit's partials, the globals finished, "
          "and only then\n// every update.\n";
  if (schedule.hasShardGroups())
    os << "// In shard groups of " << schedule.getShardGroupSize()
       << " ranks: a reduce-scatter averages within the group, then its "
          "part\n// across the groups; an all-gather stays in the group.\n";
  os << "void compiledStep(optgen::runtime::Executor &executor) {\n";
  for (Operation &op : schedule.getBody().front()) {
    if (auto unit = dyn_cast<UnitOp>(op)) {
      units[unit] = units.size();
      continue;
    }
    if (auto wait = dyn_cast<WaitOp>(op)) {
      os << "  executor.wait(t" << tokens.lookup(wait.getToken()) << ");\n";
      continue;
    }
    if (isa<ComputeOp, PartialsOp>(op)) {
      Value unit = op.getOperand(0);
      os << "  executor." << (isa<ComputeOp>(op) ? "compute" : "accumulatePartials")
         << "(" << units.lookup(unit) << "); // "
         << describeMembers(unit.getDefiningOp<UnitOp>()) << "\n";
      continue;
    }
    if (isa<FinishGlobalsOp>(op)) {
      os << "  executor.finishGlobals();\n";
      continue;
    }
    StringRef launch =
        llvm::TypeSwitch<Operation *, StringRef>(&op)
            .Case([](AllReduceOp) { return "launchAllReduce"; })
            .Case([](ReduceScatterOp) { return "launchReduceScatter"; })
            .Case([](AllGatherOp) { return "launchAllGather"; })
            .Case([](GatherPartialsOp) { return "launchPartialsGather"; })
            .Default([](Operation *) { return StringRef(); });
    if (launch.empty())
      continue;
    int token = tokens.size();
    tokens[op.getResult(0)] = token;
    os << "  const optgen::runtime::Token t" << token << " = executor."
       << launch << "(";
    if (op.getNumOperands())
      os << units.lookup(op.getOperand(0));
    os << ");\n";
  }
  os << "}\n\n";
}

/// The units of `schedule` as the runtime's tables (CompiledSchedule):
/// members as indices into the planned parameters, in packed order.
std::string compiledScheduleTable(ScheduleOp schedule,
                                  const llvm::StringMap<size_t> &paramIndex,
                                  ArrayRef<RuleOp> rules) {
  // A unit's collectives carry one payload type.
  llvm::DenseMap<Value, Type> payloads;
  schedule.walk([&](Operation *op) {
    if (auto reduce = dyn_cast<AllReduceOp>(op))
      payloads[reduce.getUnit()] = reduce.getPayload();
    else if (auto scatter = dyn_cast<ReduceScatterOp>(op))
      payloads[scatter.getUnit()] = scatter.getPayload();
  });
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  spec.compiledSchedule = optgen::runtime::CompiledSchedule{"
     << schedule.getWorldSize() << ", {\n";
  for (UnitOp unit : schedule.getBody().front().getOps<UnitOp>()) {
    // The rule all members run, or -1 when they differ.
    int rule = -1;
    ArrayAttr memberRules = unit.getRules();
    if (!memberRules.empty() &&
        llvm::all_equal(llvm::map_range(memberRules, [](Attribute r) {
          return cast<FlatSymbolRefAttr>(r).getValue();
        }))) {
      StringRef name = cast<FlatSymbolRefAttr>(memberRules[0]).getValue();
      rule = llvm::find_if(rules, [&](RuleOp r) {
               return r.getSymName() == name;
             }) - rules.begin();
    }
    std::string kind = stringifyUnitKind(unit.getKind()).str();
    kind[0] = llvm::toUpper(kind[0]);
    os << "      {optgen::runtime::UnitKind::" << kind << ", " << rule << ", {";
    llvm::interleaveComma(unit.getParams(), os, [&](Attribute param) {
      os << paramIndex.lookup(cast<StringAttr>(param).getValue());
    });
    os << "}, {";
    if (unit.getOwners())
      llvm::interleaveComma(*unit.getOwners(), os);
    os << "}, {";
    llvm::interleaveComma(unit.getCounts(), os);
    Type payload = payloads.lookup(unit);
    os << "}, optgen::runtime::DType::"
       << (payload && payload.isBF16() ? "BF16" : "F32") << "},\n";
  }
  os << "    }, compiledStep";
  // Shard groups (hybrid sharding): the ranks of a group.
  if (schedule.hasShardGroups())
    os << ", " << schedule.getShardGroupSize();
  os << "};\n";
  return text;
}

//===----------------------------------------------------------------------===//
// The files
//===----------------------------------------------------------------------===//

std::string doubles(ArrayRef<double> values) {
  std::string text = "{";
  for (auto [i, v] : llvm::enumerate(values))
    text += (i ? ", " : "") + floatLiteral(v, true);
  return text + "}";
}

/// A hyperparameter value as the runtime keeps it: doubles, tuples
/// flattened.
std::vector<double> hyperValues(Attribute value) {
  std::vector<double> values;
  if (auto array = dyn_cast<ArrayAttr>(value)) {
    for (Attribute element : array)
      llvm::append_range(values, hyperValues(element));
  } else if (auto f = dyn_cast<FloatAttr>(value)) {
    values.push_back(f.getValueAsDouble());
  } else if (auto i = dyn_cast<IntegerAttr>(value)) {
    values.push_back(static_cast<double>(i.getInt()));
  }
  return values;
}

} // namespace

std::string optgen::fileStem(OptimizerOp optimizer) {
  return optimizer.getSymName().str();
}

std::string optgen::factoryName(OptimizerOp optimizer) {
  return "optgen_new_" + fileStem(optimizer);
}

std::string optgen::generatedBanner(OptimizerOp optimizer,
                                    const CpuEmitOptions &options) {
  std::string spec = commentText(options.specName);
  return "// Generated by optgen from " + spec + " (optimizer '" +
         commentText(optimizer.getSymName()) +
         "'). Do not edit: change the\n// spec and run `optgen compile " +
         spec + " --target=" + getTarget(optimizer).getName().str() +
         "` again.\n";
}

LogicalResult optgen::emitHostSource(OptimizerOp optimizer,
                                     const CpuEmitOptions &options,
                                     StringRef baseClass,
                                     RuleStepPrinter printStep,
                                     GlobalsFunctionPrinter printGlobals,
                                     std::string &text) {
  std::string name = legalIdentifier(optimizer.getSymName());
  SmallVector<RuleOp> rules(optimizer.getBlock().getOps<RuleOp>());
  SmallVector<GroupOp> groups(optimizer.getBlock().getOps<GroupOp>());
  DistributeOp distribute;
  for (DistributeOp d : optimizer.getBlock().getOps<DistributeOp>())
    distribute = d;
  std::string banner = generatedBanner(optimizer, options);

  // Rule functions, then the tables.
  std::string functions;
  llvm::raw_string_ostream fos(functions);
  std::vector<std::string> tables;
  std::vector<RuleStepFunctions> steps;
  for (RuleOp rule : rules) {
    if (rule->getAttrOfType<ArrayAttr>("optgen.workspace"))
      emitWorkspace(rule, fos);
    steps.emplace_back();
    if (failed(printStep(rule, fos, tables, steps.back())) ||
        failed(RuleEmitter(fos, options, tables).emitStateShapes(rule)))
      return failure();
  }
  std::vector<std::string> whereFunctions;
  for (GroupOp group : groups) {
    if (group.getPredicate().empty()) {
      whereFunctions.push_back("nullptr");
      continue;
    }
    std::string function = "where_" + legalIdentifier(group.getSymName());
    if (failed(RuleEmitter(fos, options, tables).emitWhere(group, function)))
      return failure();
    whereFunctions.push_back(function);
  }
  bool hasGlobals = !optimizer.getBlock().getOps<GlobalOp>().empty();
  GlobalsFunctions globals;
  if (hasGlobals && failed(printGlobals(optimizer, fos, tables, globals)))
    return failure();
  for (ScheduleOp schedule : optimizer.getBlock().getOps<ScheduleOp>())
    emitCompiledStep(schedule, fos);

  llvm::raw_string_ostream os(text);
  os << banner << "\n";
  os << "#include \"" << fileStem(optimizer) << ".h\"\n\n";
  if (!optimizer.getBlock().getOps<ScheduleOp>().empty())
    os << "#include \"optgen/runtime/Executor.h\"\n\n";
  os << "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n"
        "#include <limits>\n#include <vector>\n\n";
  os << "namespace {\n\n";
  for (const std::string &table : tables)
    os << table << "\n";
  os << functions;

  os << "optgen::runtime::OptimizerSpec makeSpec() {\n";
  os << "  optgen::runtime::OptimizerSpec spec;\n";
  os << "  spec.name = " << cppString(optimizer.getSymName()) << ";\n";
  for (auto [rule, step] : llvm::zip(rules, steps)) {
    auto param = cast<SymbolicTensorType>(rule.getParam().getType());
    os << "  spec.rules.push_back({" << cppString(rule.getSymName()) << ", "
       << (param.getAnyRank() ? -1 : param.getRank()) << ", {";
    bool first = true;
    for (HyperOp hyper : rule.getBlock().getOps<HyperOp>()) {
      auto tuple = dyn_cast<TupleType>(hyper.getType());
      Type element = tuple ? tuple.getType(0) : hyper.getType();
      std::vector<double> defaults;
      if (hyper.getDefaultValueAttr())
        defaults = hyperValues(hyper.getDefaultValueAttr());
      // An int that bounds a table's slice counts: the runtime refuses a
      // negative value (which would silently run no iteration).
      bool counts = llvm::any_of(hyper->getUsers(), [&](Operation *user) {
        auto loop = dyn_cast<ForTableOp>(user);
        return loop && loop.getCount() == hyper.getResult();
      });
      os << (first ? "" : ", ") << "\n      {" << cppString(hyper.getName())
         << ", " << hyper.getWidth() << ", " << *hyper.getOffset() << ", "
         << (element.isInteger(64) ? "true" : "false") << ", "
         << (hyper.getDefaultValueAttr() ? "true" : "false") << ", "
         << doubles(defaults) << (counts ? ", true" : "") << "}";
      first = false;
    }
    os << "},\n      {";
    for (auto [i, state] : llvm::enumerate(getRuleStates(rule)))
      os << (i ? ", " : "") << cppString(state.getName());
    std::string ident = legalIdentifier(rule.getSymName());
    os << "},\n      states_" << ident << ", " << step.step << ", "
       << (isElementwiseRule(rule) ? "true" : "false") << ", workspace_"
       << ident << (step.launch.empty() ? "" : ", " + step.launch) << "});\n";
  }
  for (auto [group, where] : llvm::zip(groups, whereFunctions)) {
    // (Captured by name: clang before 16 does not capture a structured
    // binding.)
    StringRef ruleName = group.getRule();
    size_t rule = llvm::find_if(rules, [&](RuleOp r) {
                    return r.getSymName() == ruleName;
                  }) - rules.begin();
    os << "  spec.groups.push_back({" << cppString(group.getSymName()) << ", "
       << rule << ", {";
    for (auto [i, pattern] : llvm::enumerate(group.getPatterns()))
      os << (i ? ", " : "")
         << cppString(cast<StringAttr>(pattern).getValue());
    os << "}, " << where << ", {";
    for (auto [i, setting] : llvm::enumerate(group.getSettings()))
      os << (i ? ", " : "") << "{" << cppString(setting.getName().getValue())
         << ", " << doubles(hyperValues(setting.getValue())) << "}";
    os << "}});\n";
  }
  // Compiled with --shapes: the plan's groups, and the rules specialised to
  // each bucket's shape, are fixed here.
  auto ruleIndex = [&](StringRef name) -> int {
    auto it = llvm::find_if(rules, [&](RuleOp r) { return r.getSymName() == name; });
    return it == rules.end() ? -1 : static_cast<int>(it - rules.begin());
  };
  llvm::StringMap<size_t> paramIndex; // in plannedParams' order
  for (BucketOp bucket : optimizer.getBlock().getOps<BucketOp>()) {
    size_t group = llvm::find_if(groups, [&](GroupOp g) {
                     return g.getSymName() == bucket.getGroup();
                   }) - groups.begin();
    int rule = bucket.getRuleAttr() ? ruleIndex(*bucket.getRule()) : -1;
    for (Attribute param : bucket.getParams()) {
      paramIndex[cast<StringAttr>(param).getValue()] = paramIndex.size();
      os << "  spec.plannedParams.push_back({"
         << cppString(cast<StringAttr>(param).getValue()) << ", {";
      llvm::interleaveComma(bucket.getShape(), os);
      os << "}, " << group << ", " << rule << "});\n";
    }
  }
  bool zero2 = distribute && distribute.getStrategy() == DistributeStrategy::zero2;
  os << "  spec.distribution = optgen::runtime::Distribution::"
     << (zero2 ? "Zero2" : "None") << ";\n";
  // Compiled with --world-size too: the step itself.
  for (ScheduleOp schedule : optimizer.getBlock().getOps<ScheduleOp>())
    os << compiledScheduleTable(schedule, paramIndex, rules);
  os << "  spec.smallNumel = "
     << (distribute && distribute.getSmallNumel() ? *distribute.getSmallNumel()
                                                  : 0)
     << ";\n";
  if (distribute && distribute.getShardGroup())
    os << "  spec.shardGroup = " << *distribute.getShardGroup() << ";\n";
  if (hasGlobals) {
    os << "  spec.globals = {{";
    llvm::interleaveComma(optimizer.getBlock().getOps<GlobalOp>(), os,
                          [&](GlobalOp global) {
                            os << cppString(global.getSymName());
                          });
    os << "},\n      {";
    llvm::interleaveComma(getGlobalPartials(optimizer), os,
                          [&](ReduceParamsOp reduce) {
                            os << "optgen::runtime::PartialKind::"
                               << (reduce.getKind() == ReduceKind::max ? "Max"
                                                                       : "Sum");
                          });
    os << "},\n      " << globals.contribution << ", " << globals.finish;
    if (!globals.launchContribution.empty())
      os << ", " << globals.launchContribution << ", " << globals.launchFinish
         << ", " << globals.deviceScratch;
    os << "};\n";
  }
  // The fingerprint of the spec's math, which ranks and checkpoints agree
  // on (absent from IR written without it).
  if (auto math = optimizer->getAttrOfType<StringAttr>(kMathAttr))
    os << "  spec.math = " << cppString(math.getValue()) << ";\n";
  // The spec's `on_nonfinite skip`; without it the runtime's default.
  for (OnNonFiniteOp policy : optimizer.getBlock().getOps<OnNonFiniteOp>())
    if (policy.getPolicy() == NonFinitePolicy::skip)
      os << "  spec.onNonFinite = optgen::runtime::NonFinitePolicy::Skip;\n";
  os << "  return spec;\n";
  os << "}\n\n";
  os << "} // namespace\n\n";
  os << "namespace optgen_generated {\n\n";
  os << name << "::" << name << "() : " << baseClass
     << "(makeSpec()) {}\n\n";
  os << "} // namespace optgen_generated\n\n";
  os << "void *" << factoryName(optimizer) << "() {\n"
     << "  return static_cast<optgen::runtime::OptimizerFront *>(\n"
     << "      new optgen_generated::" << name << "());\n"
     << "}\n";
  return success();
}

std::string optgen::emitOptimizerHeader(OptimizerOp optimizer,
                                        const CpuEmitOptions &options,
                                        StringRef runtimeHeader,
                                        StringRef baseClass) {
  std::string name = legalIdentifier(optimizer.getSymName());
  SmallVector<GroupOp> groups(optimizer.getBlock().getOps<GroupOp>());
  std::string banner = generatedBanner(optimizer, options);
  std::string guard = "OPTGEN_GENERATED_" + llvm::StringRef(name).upper() + "_H";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << banner << "\n#ifndef " << guard << "\n#define " << guard << "\n\n";
  os << "#include \"" << runtimeHeader << "\"\n\n";
  os << "namespace optgen_generated {\n\n";
  os << "/// Groups, in the order a parameter's name is matched:\n";
  for (GroupOp group : groups)
    os << "///   " << commentText(group.getSymName()) << " (rule "
       << commentText(group.getRule()) << ")\n";
  SmallVector<BucketOp> buckets(optimizer.getBlock().getOps<BucketOp>());
  if (!buckets.empty()) {
    os << "///\n/// Compiled for these parameters (one bucket a line):\n";
    for (BucketOp bucket : buckets) {
      os << "///   " << commentText(bucket.getGroup()) << " [";
      llvm::interleaveComma(bucket.getShape(), os);
      os << "]:";
      for (Attribute param : bucket.getParams())
        os << " " << commentText(cast<StringAttr>(param).getValue());
      os << "\n";
    }
  }
  os << "class " << name << " : public " << baseClass << " {\n";
  os << "public:\n";
  os << "  " << name << "();\n";
  os << "};\n\n";
  os << "} // namespace optgen_generated\n\n";
  os << "/// The C ABI's factory (optgen/runtime/CApi.h, optgen_optimizer_create):\n"
     << "/// a new optimizer of this class, for programs that load it by name.\n"
     << "extern \"C\" void *" << factoryName(optimizer) << "();\n\n";
  os << "#endif // " << guard << "\n";
  return text;
}

std::string optgen::emitRunnerSource(OptimizerOp optimizer,
                                     const CpuEmitOptions &options,
                                     StringRef runnerHeader,
                                     StringRef runnerMain) {
  std::string name = legalIdentifier(optimizer.getSymName());
  std::string banner = generatedBanner(optimizer, options);
  std::string runner;
  llvm::raw_string_ostream ros(runner);
  ros << banner << "//\n// Replays a case file on the optimizer: " << name
      << "_runner --case CASE.safetensors\n// [--out OUT.safetensors] "
         "[--repeat R] [--report REPORT.json]\n\n"
      << "#include \"" << fileStem(optimizer) << ".h\"\n\n"
      << "#include \"" << runnerHeader << "\"\n\n"
      << "#include <memory>\n\n"
      << "int main(int argc, char **argv) {\n"
      << "  return " << runnerMain << "(argc, argv, [] {\n"
      << "    return std::make_unique<optgen_generated::" << name << ">();\n"
      << "  });\n"
      << "}\n";
  return runner;
}

std::string optgen::emitCMakeLists(OptimizerOp optimizer,
                                   const CpuEmitOptions &options) {
  std::string name = legalIdentifier(optimizer.getSymName());
  std::string stem = fileStem(optimizer);
  TargetAttr target = getTarget(optimizer);
  // A device target's code is CUDA (the one device target's).
  bool cuda = target.isDevice();
  // The runtime's package, or its sources where the caller names them:
  // nothing here names a folder of the machine that generated the code.
  std::string runtime = cuda ? "optgen::runtime_cuda_all" : "optgen::runtime";
  std::string cmake;
  llvm::raw_string_ostream os(cmake);
  os << "# Generated by optgen from " << commentText(options.specName)
     << ". Builds the optimizer as the library `" << name << "`\n"
     << "# (and, with OPTGEN_BUILD_RUNNER=ON, " << name
     << "_runner, which replays case files)\n"
     << "# against optgen's runtime: its CMake package (CMAKE_PREFIX_PATH or "
        "optgen_DIR\n"
     << "# naming optgen's install), or its sources where OPTGEN_RUNTIME_DIR "
        "names them.\n"
     << "# In a project: add_subdirectory(this-directory) and link " << name
     << ".\n"
     << "cmake_minimum_required(VERSION 3.20)\n";
  if (cuda)
    os << "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)\n"
       << "  set(CMAKE_CUDA_ARCHITECTURES " << target.getArch() << ")\n"
       << "endif()\n";
  os << "project(" << name << " LANGUAGES CXX)\n";
  if (cuda)
    os << "# OPTGEN_CUDA_EMULATED=ON: for optgen's emulated CUDA device (the "
          "C++ compiler,\n"
       << "# no GPU, no CUDA toolkit; optgen's docs/EMULATION.md).\n"
       << "option(OPTGEN_CUDA_EMULATED \"Build for optgen's emulated CUDA "
          "device\" OFF)\n"
       << "if(NOT OPTGEN_CUDA_EMULATED)\n"
       << "  enable_language(CUDA)\n"
       << "endif()\n";
  os << "\n"
     << "set(OPTGEN_RUNTIME_DIR \"\" CACHE PATH\n"
     << "    \"optgen's runtime sources, built here instead of "
        "find_package(optgen)\")\n";
  if (cuda)
    os << "if(OPTGEN_CUDA_EMULATED)\n"
       << "  set(runtime optgen::runtime_cuda_all_emulated)\n"
       << "  set(component emu)\n"
       << "  set(device EMULATED)\n"
       << "else()\n"
       << "  set(runtime " << runtime << ")\n"
       << "  set(component cuda)\n"
       << "  set(device)\n"
       << "endif()\n"
       << "if(NOT TARGET ${runtime})\n"
       << "  if(OPTGEN_RUNTIME_DIR)\n"
       << "    add_subdirectory(${OPTGEN_RUNTIME_DIR} optgen_runtime)\n"
       << "  else()\n"
       << "    find_package(optgen CONFIG REQUIRED COMPONENTS ${component})\n"
       << "  endif()\n"
       << "endif()\n\n";
  else
    os << "if(NOT TARGET " << runtime << ")\n"
       << "  if(OPTGEN_RUNTIME_DIR)\n"
       << "    add_subdirectory(${OPTGEN_RUNTIME_DIR} optgen_runtime)\n"
       << "  else()\n"
       << "    find_package(optgen CONFIG REQUIRED)\n"
       << "  endif()\n"
       << "endif()\n\n";
  os << "# Compiled as optgen compiles generated code (optimised, "
        "position-independent);\n"
     << "# static unless BUILD_SHARED_LIBS says otherwise.\n"
     << "optgen_add_generated_library(" << name << " " << stem
     << (cuda ? ".cu ${device}" : ".cpp") << ")\n\n"
     << "option(OPTGEN_BUILD_RUNNER \"Build " << name
     << "_runner, which replays case files"
     << (cuda ? " on the GPU (or the emulated device)" : "") << "\" OFF)\n"
     << "if(OPTGEN_BUILD_RUNNER)\n"
     << "  add_executable(" << name << "_runner " << stem << "_runner.cpp)\n"
     << "  target_link_libraries(" << name << "_runner PRIVATE " << name
     << ")\n"
     << "endif()\n";
  return cmake;
}

LogicalResult optgen::emitCpu(OptimizerOp optimizer,
                              const CpuEmitOptions &options,
                              std::map<std::string, std::string> &files) {
  FailureOr<TargetAttr> target = requireTarget(optimizer, "the CPU printer");
  if (failed(target))
    return failure();
  if (target->isDevice())
    return optimizer.emitError()
           << "the CPU printer prints code for a host target; this module "
              "is lowered for '"
           << target->getName() << "', a device target";
  std::string stem = fileStem(optimizer);
  files[stem + ".h"] = emitOptimizerHeader(optimizer, options,
                                          "optgen/runtime/Optimizer.h",
                                          "optgen::runtime::Optimizer");
  std::string text;
  if (failed(emitHostSource(
          optimizer, options, "optgen::runtime::Optimizer",
          [&](RuleOp rule, llvm::raw_ostream &os,
              std::vector<std::string> &tables, RuleStepFunctions &step) {
            step.step = "step_" + legalIdentifier(rule.getSymName());
            return RuleEmitter(os, options, tables).emitRule(rule);
          },
          [&](OptimizerOp optimizer, llvm::raw_ostream &os,
              std::vector<std::string> &tables, GlobalsFunctions &globals) {
            globals.contribution = "globalContribution";
            globals.finish = "finishGlobals";
            if (failed(RuleEmitter(os, options, tables)
                           .emitGlobalContribution(optimizer,
                                                   globals.contribution)))
              return failure();
            return RuleEmitter(os, options, tables)
                .emitGlobalFinish(optimizer, globals.finish);
          },
          text)))
    return failure();
  files[stem + ".cpp"] = text;

  // A runner replaying case files on this optimizer (`optgen run`).
  files[stem + "_runner.cpp"] =
      emitRunnerSource(optimizer, options, "optgen/runtime/CaseRunner.h",
                       "optgen::runtime::runnerMain");

  files["CMakeLists.txt"] = emitCMakeLists(optimizer, options);
  return success();
}
