//===- ShapesFile.h - Parameter names and shapes from a file ----*- C++ -*-===//
//
// `--shapes FILE.safetensors` reads the names and shapes of a model's
// parameters from a safetensors header (or the param/<name> tensors of a
// case file), never the data: a checkpoint of many gigabytes is read in
// the time of its header. Compiled with exceptions, as the runtime's reader
// reports errors by throwing.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DRIVER_SHAPESFILE_H
#define OPTGEN_DRIVER_SHAPESFILE_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace optgen {

using NamedShape = std::pair<std::string, std::vector<int64_t>>;

/// The parameters described by `path`, in the file's order; false with
/// `error` set when the file cannot be read.
bool readShapes(const std::string &path, std::vector<NamedShape> &shapes,
                std::string &error);

} // namespace optgen

#endif // OPTGEN_DRIVER_SHAPESFILE_H
