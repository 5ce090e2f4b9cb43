//===- SourceInfo.h - What printed code says about its spec -----*- C++ -*-===//
//
// Generated code is commented with the spec lines it implements and names
// values as the spec named them; these read that from the IR's locations.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TARGET_CFAMILY_SOURCEINFO_H
#define OPTGEN_TARGET_CFAMILY_SOURCEINFO_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"

#include <optional>
#include <vector>

namespace optgen {

/// The first file location inside `loc` (through names and fusions).
std::optional<mlir::FileLineColLoc> fileLocation(mlir::Location loc);

/// The distinct spec lines of `loc`, in order.
std::vector<unsigned> specLines(mlir::Location loc);

/// The name the spec gave `value` (`let x = ...`), if any.
std::optional<llvm::StringRef> specName(mlir::Value value);

/// The value of an integer constant.
std::optional<int64_t> constantInt(mlir::Value value);

} // namespace optgen

#endif // OPTGEN_TARGET_CFAMILY_SOURCEINFO_H
