//===- Error.cpp - Messages of runtime errors -----------------------------===//

#include "optgen/runtime/Error.h"

#include <algorithm>
#include <cstdio>

namespace optgen::runtime {

std::string quoteForMessage(std::string_view text) {
  constexpr size_t kMaxShown = 120;
  size_t shown = std::min(text.size(), kMaxShown);
  while (shown < text.size() && shown > 0 &&
         (static_cast<unsigned char>(text[shown]) & 0xc0) == 0x80)
    --shown; // don't split a multi-byte character
  std::string quoted = "'";
  for (size_t i = 0; i < shown; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\x%02x", c);
      quoted += escape;
    } else {
      quoted += static_cast<char>(c);
    }
  }
  if (shown < text.size())
    quoted += "...";
  return quoted + "'";
}

} // namespace optgen::runtime
