//===- GlobTest.cpp - Glob patterns for parameter names -------------------===//

#include "optgen/runtime/Glob.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <random>
#include <vector>

using namespace optgen::runtime;

namespace {

struct Case {
  const char *pattern;
  const char *name;
  bool matches;
};

void expectCases(const std::vector<Case> &cases) {
  for (const Case &test : cases)
    EXPECT_EQ(globMatch(test.pattern, test.name), test.matches)
        << "pattern \"" << test.pattern << "\", name \"" << test.name << "\"";
}

} // namespace

TEST(Glob, NanochatNames) {
  expectCases({
      {"transformer.h.*", "transformer.h.0.attn.c_q.weight", true},
      {"transformer.h.*", "transformer.h.11.mlp.c_proj.weight", true},
      {"transformer.h.*", "transformer.wte.weight", false},
      {"transformer.h.*", "transformer.h", false},
      {"transformer.h.*", "transformer.h.", true},
      {"transformer.wte.*", "transformer.wte.weight", true},
      {"value_embeds.*", "value_embeds.3.weight", true},
      {"*lambdas", "resid_lambdas", true},
      {"*lambdas", "x0_lambdas", true},
      {"*lambdas", "lambdas", true},
      {"*lambdas", "resid_lambdas.weight", false},
      {"lm_head.*", "lm_head.weight", true},
      {"lm_head.*", "xlm_head.weight", false},
      {"lm_head.*", "lm_head", false},
      {"*.bias", "transformer.h.0.attn.c_q.bias", true},
      {"*.bias", "bias", false},
      {"*norm*", "transformer.ln_f.norm.weight", true},
      {"*norm*", "norm", true},
      {"*norm*", "nor.m", false},
  });
}

TEST(Glob, StarsAndQuestionMarks) {
  expectCases({
      {"*", "", true},
      {"*", "anything.at/all", true},
      {"", "", true},
      {"", "a", false},
      {"a", "", false},
      {"**", "ab", true},
      {"a*", "a", true},
      {"*a", "ba", true},
      {"*a", "ab", false},
      {"a*b*c", "aXbYc", true},
      {"a*b*c", "abcabc", true},
      {"a*b*c", "acb", false},
      {"*ab*ab", "abxabab", true},
      {"?", "x", true},
      {"?", "", false},
      {"?", "xy", false},
      {"a?c", "abc", true},
      {"a?c", "a.c", true},
      {"a?c", "ac", false},
      {"*?", "", false},
      {"*?", "x", true},
      {"h.?.w", "h.0.w", true},
      {"h.?.w", "h.10.w", false},
  });
}

TEST(Glob, Classes) {
  expectCases({
      {"[abc]", "b", true},
      {"[abc]", "d", false},
      {"[abc]", "", false},
      {"[abc]", "ab", false},
      {"h.[0-9].w", "h.7.w", true},
      {"h.[0-9].w", "h.x.w", false},
      {"h.[0-9]*.w", "h.12.w", true},
      {"[a-cx-z]", "y", true},
      {"[a-cx-z]", "m", false},
      {"[!abc]", "d", true},
      {"[!abc]", "a", false},
      {"[!abc]", "", false},
      {"[!0-9]x", "ax", true},
      {"[!0-9]x", "5x", false},
      {"[]]", "]", true}, // ']' first is a member
      {"[]a]", "a", true},
      {"[!]]", "]", false},
      {"[!]]", "x", true},
      {"[a-]", "-", true}, // '-' last is a member
      {"[-a]", "-", true}, // and first
      {"[\\]]", "]", true},
      {"[\\!a]", "!", true},
      {"[a\\-z]", "-", true},
      {"[a\\-z]", "b", false},
      {"[^a]", "^", true}, // '^' is a member, as in fnmatch
      {"[.]", ".", true},
      {"[*]", "*", true},
      {"[*]", "x", false},
      {"[?]", "?", true},
      {"[?]", "x", false},
  });
}

TEST(Glob, Escapes) {
  expectCases({
      {"\\*", "*", true},
      {"\\*", "x", false},
      {"a\\?c", "a?c", true},
      {"a\\?c", "abc", false},
      {"\\[a]", "[a]", true},
      {"\\[a]", "a", false},
      {"\\\\", "\\", true},
      {"\\a", "a", true},
  });
}

TEST(Glob, MalformedPatternsMatchLiterally) {
  expectCases({
      {"[abc", "[abc", true},
      {"[abc", "a", false},
      {"x[", "x[", true},
      {"a\\", "a\\", true},
      {"[", "[", true},
      {"[!", "[!", true},
  });
}

TEST(Glob, SyntaxErrors) {
  EXPECT_EQ(globSyntaxError("transformer.h.*"), std::nullopt);
  EXPECT_EQ(globSyntaxError("[a-z][!0-9]\\*?"), std::nullopt);
  EXPECT_EQ(globSyntaxError("[]]"), std::nullopt);
  EXPECT_EQ(globSyntaxError(""), std::nullopt);
  EXPECT_EQ(globSyntaxError("[abc").value(),
            "unterminated character class '[' at offset 0 (write \\[ for a "
            "literal '[')");
  EXPECT_EQ(globSyntaxError("ok.[]").value().substr(0, 44),
            "unterminated character class '[' at offset 3");
  EXPECT_TRUE(globSyntaxError("[a\\]").has_value());
  EXPECT_EQ(globSyntaxError("a\\").value(),
            "pattern ends with a '\\' that escapes nothing (offset 1)");
  EXPECT_EQ(globSyntaxError("\\\\"), std::nullopt);
  EXPECT_EQ(globSyntaxError("x[z-a]").value(),
            "character range 'z-a' in the class at offset 1 is reversed and "
            "matches nothing");
}

TEST(Glob, PathologicalPatternsStayFast) {
  std::string as(100000, 'a');
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(globMatch("a*a*a*a*a*a*b", as));
  EXPECT_TRUE(globMatch("a*a*a*a*a*a*a", as));
  EXPECT_FALSE(globMatch("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", as));
  EXPECT_FALSE(globMatch("*?*?*?*?*?*?*?*?*?*?*b", as));
  EXPECT_TRUE(globMatch("*[a]*[!b]*a", as));
  EXPECT_LT(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(500));
}

TEST(Glob, AgreesWithReferenceMatcher) {
  // An obviously correct dynamic program over '*', '?' and literals.
  auto reference = [](const std::string &pattern, const std::string &name) {
    std::vector<std::vector<char>> memo(pattern.size() + 1,
                                        std::vector<char>(name.size() + 1, -1));
    std::function<bool(size_t, size_t)> match = [&](size_t p, size_t n) {
      char &result = memo[p][n];
      if (result < 0) {
        if (p == pattern.size())
          result = n == name.size();
        else if (pattern[p] == '*')
          result = match(p + 1, n) || (n < name.size() && match(p, n + 1));
        else
          result = n < name.size() &&
                   (pattern[p] == '?' || pattern[p] == name[n]) &&
                   match(p + 1, n + 1);
      }
      return result == 1;
    };
    return match(0, 0);
  };
  std::mt19937 random(7);
  const std::string patternChars = "ab*?", nameChars = "ab";
  for (int i = 0; i < 200000; ++i) {
    std::string pattern, name;
    for (size_t n = random() % 8; n > 0; --n)
      pattern += patternChars[random() % patternChars.size()];
    for (size_t n = random() % 10; n > 0; --n)
      name += nameChars[random() % nameChars.size()];
    ASSERT_EQ(globMatch(pattern, name), reference(pattern, name))
        << "pattern \"" << pattern << "\", name \"" << name << "\"";
  }
}
