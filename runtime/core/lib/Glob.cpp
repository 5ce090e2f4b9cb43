//===- Glob.cpp - Matching parameter names against glob patterns ----------===//

#include "optgen/runtime/Glob.h"

namespace optgen::runtime {

static constexpr size_t kNoEnd = std::string_view::npos;

/// One past the ']' closing the class that starts at `pattern[open]` (a
/// '['), or kNoEnd if it is unterminated.
static size_t classEnd(std::string_view pattern, size_t open) {
  size_t i = open + 1;
  if (i < pattern.size() && pattern[i] == '!')
    ++i;
  if (i < pattern.size() && pattern[i] == ']')
    ++i; // a member, not the end
  while (i < pattern.size()) {
    if (pattern[i] == '\\')
      i += 2;
    else if (pattern[i] == ']')
      return i + 1;
    else
      ++i;
  }
  return kNoEnd;
}

/// A class's members and ranges, in order. `visit(low, high)` is called for
/// each (low == high for a single character); it returns true to stop.
template <typename Visit>
static void forEachClassItem(std::string_view pattern, size_t open, size_t end,
                             Visit visit) {
  size_t i = open + 1;
  if (pattern[i] == '!')
    ++i;
  size_t close = end - 1;
  auto readItem = [&]() {
    if (pattern[i] == '\\')
      ++i;
    return static_cast<unsigned char>(pattern[i++]);
  };
  while (i < close) {
    unsigned char low = readItem();
    unsigned char high = low;
    if (i + 1 < close && pattern[i] == '-') { // a '-' before ']' is a member
      ++i;
      high = readItem();
    }
    if (visit(low, high))
      return;
  }
}

static bool classMatches(std::string_view pattern, size_t open, size_t end,
                         unsigned char c) {
  bool member = false;
  forEachClassItem(pattern, open, end,
                   [&](unsigned char low, unsigned char high) {
                     member = low <= c && c <= high;
                     return member;
                   });
  bool negated = pattern[open + 1] == '!';
  return member != negated;
}

/// Matches the single-character element at `pattern[p]` (anything but '*')
/// against `c`; on success sets `next` to the element after it.
static bool matchElement(std::string_view pattern, size_t p, char c,
                         size_t &next) {
  switch (pattern[p]) {
  case '?':
    next = p + 1;
    return true;
  case '[': {
    size_t end = classEnd(pattern, p);
    if (end == kNoEnd)
      break; // a literal '['
    next = end;
    return classMatches(pattern, p, end, static_cast<unsigned char>(c));
  }
  case '\\':
    if (p + 1 < pattern.size()) {
      next = p + 2;
      return pattern[p + 1] == c;
    }
    break; // a trailing '\' is literal
  }
  next = p + 1;
  return pattern[p] == c;
}

bool globMatch(std::string_view pattern, std::string_view name) {
  size_t p = 0, n = 0;
  // Where to resume after the last '*': the pattern just past it, and the
  // name position it has swallowed up to so far.
  size_t starPattern = kNoEnd, starName = 0;
  while (n < name.size()) {
    if (p < pattern.size()) {
      if (pattern[p] == '*') {
        starPattern = ++p;
        starName = n;
        continue;
      }
      size_t next;
      if (matchElement(pattern, p, name[n], next)) {
        p = next;
        ++n;
        continue;
      }
    }
    // Mismatch: let the last '*' swallow one more character. Earlier stars
    // never need to take back what they matched.
    if (starPattern == kNoEnd)
      return false;
    p = starPattern;
    n = ++starName;
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

std::optional<std::string> globSyntaxError(std::string_view pattern) {
  for (size_t p = 0; p < pattern.size(); ++p) {
    if (pattern[p] == '\\') {
      if (p + 1 == pattern.size())
        return "pattern ends with a '\\' that escapes nothing (offset " +
               std::to_string(p) + ")";
      ++p;
      continue;
    }
    if (pattern[p] != '[')
      continue;
    size_t end = classEnd(pattern, p);
    if (end == kNoEnd)
      return "unterminated character class '[' at offset " + std::to_string(p) +
             " (write \\[ for a literal '[')";
    std::optional<std::string> reversed;
    forEachClassItem(
        pattern, p, end, [&](unsigned char low, unsigned char high) {
          if (low > high)
            reversed = std::string("character range '") +
                       static_cast<char>(low) + "-" + static_cast<char>(high) +
                       "' in the class at offset " + std::to_string(p) +
                       " is reversed and matches nothing";
          return reversed.has_value();
        });
    if (reversed)
      return reversed;
    p = end - 1;
  }
  return std::nullopt;
}

} // namespace optgen::runtime
