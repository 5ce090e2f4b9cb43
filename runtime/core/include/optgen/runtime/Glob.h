//===- Glob.h - Matching parameter names against glob patterns --*- C++ -*-===//
//
// The patterns of a spec's `match` clauses, as fnmatch spells them:
//
//   *        any run of characters, '.' and '/' included ("*.bias" matches
//            "transformer.h.0.attn.c_q.bias")
//   ?        exactly one character
//   [abc]    one of the listed characters; [a-z] a range; [!abc] none of
//            them. A ']' right after '[' or '[!' is a member, not the end.
//   \c       the character c itself, outside or inside a class
//
// A pattern matches a name only as a whole. Matching works on bytes and runs
// in O(|pattern| * |name|) time at worst, never exponentially: it backtracks
// only to the last '*' seen, which suffices for globs. A malformed pattern
// still matches (an unterminated '[' and a trailing '\' stand for
// themselves), but specs should reject it up front with globSyntaxError.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_GLOB_H
#define OPTGEN_RUNTIME_GLOB_H

#include <optional>
#include <string>
#include <string_view>

namespace optgen::runtime {

/// Whether `name`, all of it, matches `pattern`.
bool globMatch(std::string_view pattern, std::string_view name);

/// What is wrong with `pattern` (an unterminated class, a reversed range
/// such as [z-a], a trailing '\'), with its byte offset; nullopt if nothing.
std::optional<std::string> globSyntaxError(std::string_view pattern);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_GLOB_H
