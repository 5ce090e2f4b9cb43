//===- ShapesFile.cpp - Parameter names and shapes from a file ------------===//

#include "optgen/Driver/ShapesFile.h"

#include "optgen/runtime/Safetensors.h"

#include <algorithm>

bool optgen::readShapes(const std::string &path,
                        std::vector<NamedShape> &shapes, std::string &error) {
  try {
    runtime::SafetensorsFile file = runtime::SafetensorsFile::openHeader(path);
    std::vector<std::string> names = file.names();
    // A case file describes its parameters as param/<name>.
    bool isCase = std::any_of(names.begin(), names.end(), [](auto &name) {
      return name.rfind("param/", 0) == 0;
    });
    for (const std::string &name : names) {
      if (isCase && name.rfind("param/", 0) != 0)
        continue;
      shapes.emplace_back(isCase ? name.substr(6) : name,
                          file.info(name).shape);
    }
    return true;
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
}
