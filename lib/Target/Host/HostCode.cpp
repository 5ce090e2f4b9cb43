//===- HostCode.cpp - The host code every target generates ----------------===//
//
// Everything of a generated optimizer that is not its step functions,
// printed once for every target (HostCode.h): the tables the runtime runs,
// the shape functions it calls before any step, the compiled schedule as
// straight-line code, the class, the runner and the CMake file. A target's
// own part arrives through the step and globals printers it passes.
//
// Names in the output come from the spec; every spec-derived identifier or
// string goes through legalIdentifier() or cppString(), so no spec can
// inject code.
//
//===----------------------------------------------------------------------===//

#include "optgen/Target/Host/HostCode.h"

#include "dialect/TargetDescription.h"
#include "optgen/Target/CFamily/Expressions.h"
#include "optgen/Target/CFamily/Globals.h"
#include "optgen/Target/CFamily/Names.h"
#include "optgen/Target/CFamily/SourceInfo.h"
#include "optgen/Target/CFamily/StatementPrinter.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace optgen;

namespace {

//===----------------------------------------------------------------------===//
// Shape functions: a rule's state shapes, a group's `where`
//===----------------------------------------------------------------------===//

/// Prints the plain C++ functions of a parameter's shape that the runtime
/// calls on the host whatever the target (a rule's state shapes, a group's
/// `where`): constants, shape queries and scalar arithmetic, the only math
/// they hold.
class ShapeFunctionPrinter : StatementPrinter {
public:
  ShapeFunctionPrinter(raw_ostream &os, const EmitOptions &options)
      : StatementPrinter(os, options.specName, options.sourceLine) {}

  LogicalResult printStateShapes(RuleOp rule);
  LogicalResult printWhere(GroupOp group, StringRef function);

private:
  llvm::DenseMap<Value, std::string> exprs;

  std::string scalar(Value v) { return exprs.lookup(v); }
  /// `op`, a constant or scalar arithmetic, as a named value; `what` says
  /// what the function computes, for the error on any other op.
  LogicalResult printScalar(Operation *op, StringRef what);
  /// The size of the parameter (the tile `param`, or the shape of any
  /// rank) along `axis`.
  std::string paramDim(SymbolicTensorType type, Value axis);
  /// The rank of `ndim`'s input: the shape's, or its type's.
  static std::string ndimExpr(NDimOp ndim) {
    auto type = cast<SymbolicTensorType>(ndim.getInput().getType());
    return type.getAnyRank()
               ? std::string("int64_t{call.rank}")
               : "int64_t{" + std::to_string(type.getRank()) + "}";
  }
};

LogicalResult ShapeFunctionPrinter::printScalar(Operation *op,
                                                StringRef what) {
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    std::string expr = constantExpression(constant.getValue());
    if (expr.empty())
      return constant.emitError("optgen cannot print ")
             << constant.getValue();
    exprs[constant] = expr;
    return success();
  }
  if (!op->hasTrait<ElementwiseMath>() || op->getNumResults() != 1 ||
      isa<SymbolicTensorType>(op->getResult(0).getType()))
    return op->emitError("'")
           << op->getName() << "' in " << what
           << ": these follow from the parameter's shape and constants only";
  SmallVector<std::string> operands;
  for (Value v : op->getOperands())
    operands.push_back(scalar(v));
  std::string name = printMath(op, operands, "s");
  if (name.empty())
    return op->emitError("optgen cannot print this op");
  exprs[op->getResult(0)] = name;
  return success();
}

std::string ShapeFunctionPrinter::paramDim(SymbolicTensorType type,
                                           Value axis) {
  std::string axisExpr = scalar(axis);
  if (type.getAnyRank())
    return llvm::formatv("call.shape[{0} < 0 ? {0} + call.rank : {0}]",
                         axisExpr)
        .str();
  if (type.getRank() == 1)
    return "param.cols";
  return extentAlong(constantInt(axis), axisExpr, "param.rows", "param.cols");
}

LogicalResult ShapeFunctionPrinter::printStateShapes(RuleOp rule) {
  std::string ident = legalIdentifier(rule.getSymName());
  SmallVector<StateOp> states = getRuleStates(rule);
  if (states.empty()) {
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
  (void)names.unique("param");
  (void)names.unique("numel");
  auto isParam = [&](Value v) {
    return v == rule.getParam() || v == rule.getGrad();
  };
  // Only the scalar math the states' axes depend on.
  llvm::SetVector<Operation *> slice;
  SmallVector<Value> worklist;
  for (StateOp state : states)
    if (state.getAxis())
      worklist.push_back(state.getAxis());
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !slice.insert(def))
      continue;
    for (Value operand : def->getOperands())
      if (!isa<SymbolicTensorType>(operand.getType()))
        worklist.push_back(operand);
  }
  for (Operation &op : rule.getBlock()) {
    if (!slice.contains(&op))
      continue;
    noteSource(&op);
    LogicalResult printed =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](DimOp dim) -> LogicalResult {
              if (!isParam(dim.getInput()))
                return dim.emitError("a state's axis from the size of other "
                                     "than the parameter");
              std::string name = nameFor(dim, "size");
              line() << "const int64_t " << name << " = "
                     << paramDim(cast<SymbolicTensorType>(
                                     dim.getInput().getType()),
                                 dim.getAxis())
                     << ";\n";
              exprs[dim] = name;
              return success();
            })
            .Case([&](NDimOp ndim) {
              exprs[ndim] = ndimExpr(ndim);
              return success();
            })
            .Case([&](NumelOp numel) -> LogicalResult {
              if (!isParam(numel.getInput()))
                return numel.emitError("a state's axis from the size of "
                                       "other than the parameter");
              exprs[numel] = "(param.size())";
              return success();
            })
            .Default([&](Operation *other) {
              return printScalar(other, "a state's shape");
            });
    if (failed(printed))
      return failure();
  }
  for (auto [index, state] : llvm::enumerate(states)) {
    if (!state.getLike()) {
      line() << "rows[" << index << "] = 1;\n";
      line() << "cols[" << index << "] = 1;\n";
      continue;
    }
    if (!isParam(state.getLike()))
      return state.emitError("optgen shapes states like the parameter only");
    if (!state.getAxis()) {
      line() << "rows[" << index << "] = param.rows;\n";
      line() << "cols[" << index << "] = param.cols;\n";
      continue;
    }
    auto type = cast<SymbolicTensorType>(state.getLike().getType());
    std::string axis = scalar(state.getAxis());
    std::string onRows =
        type.getRank() == 1 ? std::string("false") : firstAxisTest(axis);
    line() << "rows[" << index << "] = " << onRows << " ? 1 : param.rows;\n";
    line() << "cols[" << index << "] = " << onRows << " ? param.cols : 1;\n";
  }
  os << "}\n\n";
  return success();
}

LogicalResult ShapeFunctionPrinter::printWhere(GroupOp group,
                                               StringRef function) {
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
    noteSource(&op);
    if (auto ndim = dyn_cast<NDimOp>(op)) {
      exprs[ndim] = ndimExpr(ndim);
      continue;
    }
    if (failed(printScalar(&op, "a group's 'where'")))
      return failure();
  }
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
  auto slots = rule->getAttrOfType<ArrayAttr>(kWorkspaceAttr);
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

/// The source file: see emitHostFiles.
LogicalResult emitHostSource(OptimizerOp optimizer, const EmitOptions &options,
                             StringRef baseClass, RuleStepPrinter printStep,
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
    if (rule->getAttrOfType<ArrayAttr>(kWorkspaceAttr))
      emitWorkspace(rule, fos);
    steps.emplace_back();
    if (failed(printStep(rule, fos, tables, steps.back())) ||
        failed(ShapeFunctionPrinter(fos, options).printStateShapes(rule)))
      return failure();
  }
  std::vector<std::string> whereFunctions;
  for (GroupOp group : groups) {
    if (group.getPredicate().empty()) {
      whereFunctions.push_back("nullptr");
      continue;
    }
    std::string function = "where_" + legalIdentifier(group.getSymName());
    if (failed(ShapeFunctionPrinter(fos, options).printWhere(group, function)))
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

/// NAME.h: see emitHostFiles.
std::string emitOptimizerHeader(OptimizerOp optimizer,
                                const EmitOptions &options,
                                StringRef runtimeHeader, StringRef baseClass) {
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

/// NAME_runner.cpp: see emitHostFiles.
std::string emitRunnerSource(OptimizerOp optimizer, const EmitOptions &options,
                             StringRef runnerHeader, StringRef runnerMain) {
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

/// CMakeLists.txt: see emitHostFiles.
std::string emitCMakeLists(OptimizerOp optimizer, const EmitOptions &options,
                           StringRef sourceExtension) {
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
     << sourceExtension << (cuda ? " ${device}" : "") << ")\n\n"
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

} // namespace

std::string optgen::fileStem(OptimizerOp optimizer) {
  return optimizer.getSymName().str();
}

std::string optgen::factoryName(OptimizerOp optimizer) {
  return "optgen_new_" + fileStem(optimizer);
}

std::string optgen::generatedBanner(OptimizerOp optimizer,
                                    const EmitOptions &options) {
  std::string spec = commentText(options.specName);
  return "// Generated by optgen from " + spec + " (optimizer '" +
         commentText(optimizer.getSymName()) +
         "'). Do not edit: change the\n// spec and run `optgen compile " +
         spec + " --target=" + getTarget(optimizer).getName().str() +
         "` again.\n";
}

LogicalResult optgen::emitHostFiles(OptimizerOp optimizer,
                                    const EmitOptions &options,
                                    const TargetSpelling &spelling,
                                    RuleStepPrinter printStep,
                                    GlobalsFunctionPrinter printGlobals,
                                    std::map<std::string, std::string> &files) {
  std::string stem = fileStem(optimizer);
  std::string source;
  if (failed(emitHostSource(optimizer, options, spelling.baseClass, printStep,
                            printGlobals, source)))
    return failure();
  files[stem + ".h"] = emitOptimizerHeader(
      optimizer, options, spelling.runtimeHeader, spelling.baseClass);
  files[stem + spelling.sourceExtension.str()] = source;
  // A runner replaying case files on this optimizer (`optgen run`).
  files[stem + "_runner.cpp"] = emitRunnerSource(
      optimizer, options, spelling.runnerHeader, spelling.runnerMain);
  files["CMakeLists.txt"] =
      emitCMakeLists(optimizer, options, spelling.sourceExtension);
  return success();
}
