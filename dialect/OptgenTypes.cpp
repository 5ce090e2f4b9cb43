//===- OptgenTypes.cpp - Types of the optgen dialect ----------------------===//
//
// `!optgen.tensor<[m, 1], f32>` and `!optgen.tensor<*, f32>`: parsing,
// printing and verification.
//
//===----------------------------------------------------------------------===//

#include "dialect/OptgenDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace optgen;

#define GET_TYPEDEF_CLASSES
#include "dialect/OptgenTypes.cpp.inc"

void OptgenDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialect/OptgenTypes.cpp.inc"
      >();
}

/// `*` or `[d0, d1, ...]` (a size, a name or `?` each), as in tensor types
/// and workspace slots.
static ParseResult parseExtent(AsmParser &parser,
                               SmallVectorImpl<Attribute> &dims,
                               bool &anyRank) {
  MLIRContext *ctx = parser.getContext();
  anyRank = succeeded(parser.parseOptionalStar());
  if (anyRank)
    return success();
  auto parseDim = [&]() -> ParseResult {
    if (succeeded(parser.parseOptionalQuestion())) {
      dims.push_back(UnitAttr::get(ctx));
      return success();
    }
    int64_t size = 0;
    OptionalParseResult sized = parser.parseOptionalInteger(size);
    if (sized.has_value()) {
      if (failed(*sized))
        return failure();
      dims.push_back(IntegerAttr::get(IntegerType::get(ctx, 64), size));
      return success();
    }
    StringRef name;
    if (parser.parseKeyword(&name))
      return failure();
    dims.push_back(StringAttr::get(ctx, name));
    return success();
  };
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                        parseDim);
}

static void printExtent(AsmPrinter &printer, SymbolicTensorType type) {
  if (type.getAnyRank()) {
    printer << '*';
    return;
  }
  printer << '[';
  llvm::interleaveComma(type.getDims(), printer, [&](Attribute dim) {
    if (auto size = llvm::dyn_cast<IntegerAttr>(dim))
      printer << size.getInt();
    else if (auto name = llvm::dyn_cast<StringAttr>(dim))
      printer << name.getValue();
    else
      printer << '?';
  });
  printer << ']';
}

Type SymbolicTensorType::parse(AsmParser &parser) {
  SmallVector<Attribute> dims;
  bool anyRank = false;
  Type elementType;
  if (parser.parseLess() || parseExtent(parser, dims, anyRank) ||
      parser.parseComma() || parser.parseType(elementType) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), dims, elementType, anyRank);
}

void SymbolicTensorType::print(AsmPrinter &printer) const {
  printer << '<';
  printExtent(printer, *this);
  printer << ", " << getElementType() << '>';
}

//===----------------------------------------------------------------------===//
// SlotAttr
//===----------------------------------------------------------------------===//

Attribute SlotAttr::parse(AsmParser &parser, Type) {
  SmallVector<Attribute> dims;
  bool anyRank = false;
  Type storage;
  if (parser.parseLess() || parseExtent(parser, dims, anyRank) ||
      parser.parseComma() || parser.parseType(storage) ||
      parser.parseGreater())
    return {};
  MLIRContext *ctx = parser.getContext();
  auto shape = SymbolicTensorType::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); }, ctx, dims,
      Float32Type::get(ctx), anyRank);
  if (!shape)
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    ctx, shape, storage);
}

void SlotAttr::print(AsmPrinter &printer) const {
  printer << '<';
  printExtent(printer, getShape());
  printer << ", " << getStorage() << '>';
}

LogicalResult
SlotAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                 SymbolicTensorType shape, Type storage) {
  if (!shape.getElementType().isF32())
    return emitError() << "a slot's extent is an f32 tensor type";
  if (!storage.isF32() && !storage.isF64() && !storage.isBF16() &&
      !storage.isF16())
    return emitError() << "a slot stores f32, f64, bf16 or f16, not "
                       << storage;
  return success();
}

LogicalResult
LaunchShapeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t threads, GridKind grid, int64_t maxBlocks,
                        int64_t perThread) {
  if (threads < 1)
    return emitError() << "a launch runs at least one thread per block";
  if (grid == GridKind::elements) {
    if (maxBlocks < 1 || perThread < 1)
      return emitError() << "a grid over the elements has at least one "
                            "block and one element per thread";
    return success();
  }
  if (maxBlocks != 0 || perThread != 1)
    return emitError() << "only a grid over the elements has max_blocks and "
                          "per_thread: a " << stringifyGridKind(grid)
                       << " grid's blocks follow the member's shape";
  return success();
}

LogicalResult
SymbolicTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                   ArrayRef<Attribute> dims, Type elementType, bool anyRank) {
  if (anyRank && !dims.empty())
    return emitError() << "a tensor of any rank has no dimensions";
  for (Attribute dim : dims) {
    if (auto size = llvm::dyn_cast<IntegerAttr>(dim)) {
      if (size.getInt() < 0)
        return emitError() << "dimension sizes must not be negative";
    } else if (auto name = llvm::dyn_cast<StringAttr>(dim)) {
      if (name.getValue().empty())
        return emitError() << "dimension names must not be empty";
    } else if (!llvm::isa<UnitAttr>(dim)) {
      return emitError() << "a dimension is a size, a name or '?'";
    }
  }
  if (!elementType.isF32() && !elementType.isBF16() && !elementType.isF16() &&
      !elementType.isInteger(1))
    return emitError() << "tensor elements are f32, bf16, f16 or i1, not "
                       << elementType;
  return success();
}
