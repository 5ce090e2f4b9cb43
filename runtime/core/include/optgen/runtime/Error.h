//===- Error.h - The runtime's one exception type ---------------*- C++ -*-===//
//
// Every failure in the runtime (a malformed file, a bad JSON document, a
// parameter no group claims) throws optgen::runtime::Error. Callers catch one
// type; the message alone says what went wrong and names the thing at fault
// (file, tensor, parameter), because it is usually all a user gets to see.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_ERROR_H
#define OPTGEN_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>
#include <string_view>

namespace optgen::runtime {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// `text` in single quotes for a message, with control bytes escaped as \xNN
/// and anything past 120 bytes cut (at a character boundary) and marked
/// "...": names and numbers from hostile files must not garble or flood the
/// message that reports them.
std::string quoteForMessage(std::string_view text);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_ERROR_H
