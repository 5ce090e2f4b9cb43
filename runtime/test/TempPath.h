//===- TempPath.h - Temporary files of the runtime's tests ------*- C++ -*-===//
//
// ctest runs test processes side by side (`-j`), and each instance of a
// parameterised test is a process of its own: a temporary file named by the
// test alone would be written by two processes at once.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_TEST_TEMPPATH_H
#define OPTGEN_RUNTIME_TEST_TEMPPATH_H

#include <gtest/gtest.h>

#include <string>
#include <unistd.h>

namespace optgen::runtime {

/// A path in the test's temporary directory, unique to this process.
inline std::string tempPath(const std::string &name) {
  return testing::TempDir() + "optgen-runtime-" + std::to_string(getpid()) +
         "-" + name;
}

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_TEST_TEMPPATH_H
