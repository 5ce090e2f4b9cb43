//===- ErrorTest.cpp - Messages of runtime errors -------------------------===//

#include "optgen/runtime/Error.h"

#include <gtest/gtest.h>

using namespace optgen::runtime;

TEST(Error, QuotesForMessages) {
  EXPECT_EQ(quoteForMessage("param/embed"), "'param/embed'");
  EXPECT_EQ(quoteForMessage(""), "''");
  EXPECT_EQ(quoteForMessage(std::string("a\nb\0c\x7f", 6)),
            "'a\\x0ab\\x00c\\x7f'");
  EXPECT_EQ(quoteForMessage("caf\xc3\xa9"), "'caf\xc3\xa9'");
  EXPECT_EQ(quoteForMessage(std::string(1000, 'x')),
            "'" + std::string(120, 'x') + "...'");
  // The cut backs off to the start of a multi-byte character.
  std::string accents = std::string(119, 'x') + "\xc3\xa9\xc3\xa9";
  EXPECT_EQ(quoteForMessage(accents), "'" + std::string(119, 'x') + "...'");
}
