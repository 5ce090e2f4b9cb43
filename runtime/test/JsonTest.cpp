//===- JsonTest.cpp - The strict JSON parser and the writer ---------------===//

#include "optgen/runtime/Json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

using namespace optgen::runtime;

namespace {

/// The message of the Error that parsing `text` throws, or "" if it parses.
std::string parseError(std::string_view text) {
  try {
    parseJson(text, "test.json");
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

} // namespace

TEST(Json, ParsesCaseMetadata) {
  JsonValue groups = parseJson(
      R"([{"kind": "adamw", "params": ["bias", "embed"], "lr": 0.01,
           "betas": [0.9, 0.95], "eps": 1e-08, "ns_steps": 5,
           "nesterov": true, "extra": null}])");
  ASSERT_TRUE(groups.isArray());
  ASSERT_EQ(groups.size(), 1u);
  const JsonValue &adamw = groups.at(size_t{0});
  EXPECT_EQ(adamw.at("kind").asString(), "adamw");
  EXPECT_EQ(adamw.at("params").at(1).asString(), "embed");
  EXPECT_EQ(adamw.at("lr").asDouble(), 0.01);
  EXPECT_EQ(adamw.at("betas").at(1).asDouble(), 0.95);
  EXPECT_EQ(adamw.at("eps").asDouble(), 1e-8);
  EXPECT_TRUE(adamw.at("ns_steps").isInteger());
  EXPECT_EQ(adamw.at("ns_steps").asInt64(), 5);
  EXPECT_EQ(adamw.at("ns_steps").asDouble(), 5.0);
  EXPECT_TRUE(adamw.at("nesterov").asBool());
  EXPECT_TRUE(adamw.at("extra").isNull());
  EXPECT_EQ(adamw.find("missing"), nullptr);
  // Members keep document order.
  EXPECT_EQ(adamw.asObject()[0].first, "kind");
  EXPECT_EQ(adamw.asObject()[7].first, "extra");
}

TEST(Json, AccessorsNameWhatIsWrong) {
  JsonValue value = parseJson(R"({"lr": 0.5, "name": "x"})");
  try {
    value.at("betas");
    FAIL();
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "JSON object has no member 'betas'");
  }
  try {
    value.at("name").asDouble();
    FAIL();
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "JSON value is a string, not a number");
  }
  EXPECT_THROW(value.at("lr").asInt64(), Error);
  EXPECT_THROW(value.at(size_t{0}), Error);
  EXPECT_THROW(parseJson("[1]").at(1), Error);
}

TEST(Json, Numbers) {
  EXPECT_EQ(parseJson("0").asInt64(), 0);
  EXPECT_EQ(parseJson("-17").asInt64(), -17);
  EXPECT_EQ(parseJson("9223372036854775807").asInt64(), INT64_MAX);
  EXPECT_EQ(parseJson("-9223372036854775808").asInt64(), INT64_MIN);
  // Beyond 64 bits: still a number, but not an integer.
  JsonValue big = parseJson("9223372036854775808");
  EXPECT_FALSE(big.isInteger());
  EXPECT_EQ(big.asDouble(), 9223372036854775808.0);
  EXPECT_FALSE(parseJson("2.0").isInteger());
  EXPECT_FALSE(parseJson("2e0").isInteger());
  EXPECT_EQ(parseJson("1.5e3").asDouble(), 1500.0);
  EXPECT_EQ(parseJson("1E-2").asDouble(), 0.01);
  EXPECT_EQ(parseJson("-0.0").asDouble(), 0.0);
  EXPECT_TRUE(std::signbit(parseJson("-0.0").asDouble()));
  EXPECT_EQ(parseJson("0.1").asDouble(), 0.1);
  // Underflow rounds to zero; overflow is an error.
  EXPECT_EQ(parseJson("1e-400").asDouble(), 0.0);
  EXPECT_EQ(parseJson("0.0000001e-320").asDouble(), 0.0);
  EXPECT_TRUE(std::signbit(parseJson("-1e-400").asDouble()));
  EXPECT_NE(parseError("1e400").find("out of the range of a double"),
            std::string::npos);
  EXPECT_NE(parseError("-123.5e99999999999999999999").find("out of the range"),
            std::string::npos);
  // Messages quote hostile input cut short.
  std::string huge = "1" + std::string(100000, '0') + "e400";
  std::string message = parseError(huge);
  EXPECT_NE(message.find("number '1000"), std::string::npos);
  EXPECT_LT(message.size(), 300u);
}

TEST(Json, UnicodeEscapes) {
  EXPECT_EQ(parseJson(R"("\u0041\u00e9\u20AC")").asString(),
            "A\xc3\xa9\xe2\x82\xac");
  // A surrogate pair is one code point, U+1F600, four bytes of UTF-8.
  EXPECT_EQ(parseJson(R"("\ud83d\ude00")").asString(), "\xf0\x9f\x98\x80");
  EXPECT_EQ(parseJson(R"("\uDBFF\uDFFF")").asString(), "\xf4\x8f\xbf\xbf");
  EXPECT_EQ(parseJson(R"("\u0000")").asString(), std::string(1, '\0'));
  EXPECT_EQ(parseJson(R"("\"\\\/\b\f\n\r\t")").asString(), "\"\\/\b\f\n\r\t");
  // Raw UTF-8 passes through.
  EXPECT_EQ(parseJson("\"caf\xc3\xa9 \xf0\x9f\x98\x80\"").asString(),
            "caf\xc3\xa9 \xf0\x9f\x98\x80");
}

TEST(Json, RejectsInvalidDocuments) {
  struct Case {
    const char *text;
    const char *problem;
  };
  const Case cases[] = {
      {"", "byte 0: expected a JSON value, found end of input"},
      {"   ", "byte 3: expected a JSON value"},
      {"{", "byte 1: expected a string key"},
      {"[1,]", "byte 3: expected a JSON value, found ']'"},
      {"[1 2]", "byte 3: expected ']' or ','"},
      {R"({"a":1,})", "byte 7: expected a string key"},
      {R"({"a" 1})", "byte 5: expected ':'"},
      {"{1:2}", "byte 1: expected a string key"},
      {"01", "leading zero"},
      {"-01", "leading zero"},
      {"1.", "expected a digit after the decimal point"},
      {".5", "expected a JSON value, found '.'"},
      {"+1", "expected a JSON value, found '+'"},
      {"-", "expected a digit in a number"},
      {"1e", "expected a digit in the exponent"},
      {"1e+", "expected a digit in the exponent"},
      {"tru", "expected a JSON value"},
      {"nul", "expected a JSON value"},
      {"True", "expected a JSON value, found 'T'"},
      {"NaN", "expected a JSON value, found 'N'"},
      {"Infinity", "expected a JSON value"},
      {"-Infinity", "expected a digit in a number"},
      {"'a'", "found '''"},
      {"// comment\n1", "found '/'"},
      {"[1] x", "byte 4: unexpected 'x' after the JSON value"},
      {"1 2", "unexpected '2' after the JSON value"},
      {"\"abc", "byte 0: unterminated string"},
      {"\"\\x\"", "invalid escape \\'x'"},
      {"\"\\", "unterminated string"},
      {"\"a\tb\"", "byte 2: control character byte 0x09 in a string must "
                   "be escaped"},
      {"\"a\nb\"", "control character byte 0x0a"},
      {R"("\u12")", "expected 4 hex digits after \\u, found '\"'"},
      {R"("\u12G4")", "expected 4 hex digits after \\u, found 'G'"},
      {R"("\uD800")", "byte 1: high surrogate in a \\u escape is not followed"},
      {R"("\uD800\u0041")", "high surrogate"},
      {R"("\uD800\uD800")", "high surrogate"},
      {R"("\uDC00")", "unpaired low surrogate"},
      {R"({"a": 1, "b": 2, "a": 3})", "byte 17: duplicate object key 'a'"},
      {R"([{"k": 1, "k": 1}])", "byte 10: duplicate object key 'k'"},
  };
  for (const Case &test : cases) {
    std::string message = parseError(test.text);
    EXPECT_NE(message.find(test.problem), std::string::npos)
        << "input: " << test.text << "\nmessage: " << message;
    EXPECT_EQ(message.rfind("test.json: invalid JSON at byte ", 0), 0u)
        << message;
  }
}

TEST(Json, RejectsInvalidUtf8) {
  const char *cases[] = {
      "\"\xff\"",             // never valid
      "\"\x80\"",             // a lone continuation byte
      "\"\xc3\"",             // truncated
      "\"\xc3(\"",            // bad continuation
      "\"\xc0\xaf\"",         // overlong '/'
      "\"\xe0\x80\xaf\"",     // overlong, three bytes
      "\"\xed\xa0\x80\"",     // an encoded surrogate
      "\"\xf4\x90\x80\x80\"", // above U+10FFFF
      "\"\xf8\x88\x80\x80\x80\"",
  };
  for (const char *text : cases)
    EXPECT_NE(parseError(text).find("invalid UTF-8"), std::string::npos)
        << parseError(text);
  // Outside strings, non-ASCII is just an unexpected byte.
  EXPECT_NE(parseError("\xef\xbb\xbf{}").find("found byte 0xef"),
            std::string::npos);
}

TEST(Json, NestingDepthLimit) {
  auto nested = [](int depth) {
    return std::string(depth, '[') + std::string(depth, ']');
  };
  EXPECT_NO_THROW(parseJson(nested(kMaxJsonDepth)));
  EXPECT_NE(parseError(nested(kMaxJsonDepth + 1)).find("nest deeper than 64"),
            std::string::npos);
  std::string objects;
  for (int i = 0; i <= kMaxJsonDepth; ++i)
    objects += "{\"a\":";
  EXPECT_NE(parseError(objects).find("nest deeper than 64"), std::string::npos);
  // A hostile depth fails at the limit, without deep recursion.
  EXPECT_NE(parseError(std::string(10000000, '[')).find("byte 64"),
            std::string::npos);
}

TEST(Json, ReadsOnlyTheGivenBytes) {
  // The view ends before the garbage: the parser must not look past it.
  const char buffer[] = "[1, 2]garbage";
  EXPECT_EQ(parseJson(std::string_view(buffer, 6)).size(), 2u);
  // A truncated document fails at the end of the view, not later.
  EXPECT_NE(parseError(std::string_view(buffer, 5)).find("byte 5"),
            std::string::npos);
  // NUL is an ordinary (rejected) byte, not an end.
  EXPECT_NE(parseError(std::string_view("[1]\0[2]", 7)).find("byte 0x00"),
            std::string::npos);
}

TEST(Json, WritesCompactAndDeterministic) {
  JsonValue report;
  report.set("name", "adamw");
  report.set("rel", 2.5e-6);
  report.set("steps", 4);
  report.set("ok", true);
  report.set("none", nullptr);
  JsonValue list;
  list.push(0.9);
  list.push(0.95);
  list.push(JsonObject{});
  list.push(JsonArray{});
  report.set("betas", list);
  report.set("name", "lion"); // replaces in place, keeping the position
  EXPECT_EQ(writeJson(report),
            R"({"name":"lion","rel":2.5e-06,"steps":4,"ok":true,)"
            R"("none":null,"betas":[0.9,0.95,{},[]]})");
  EXPECT_EQ(writeJson(report, 2), R"({
  "name": "lion",
  "rel": 2.5e-06,
  "steps": 4,
  "ok": true,
  "none": null,
  "betas": [
    0.9,
    0.95,
    {},
    []
  ]
})");
}

TEST(Json, WritesStringsEscaped) {
  EXPECT_EQ(writeJson(JsonValue("a\"b\\c/\n\t\r\b\f\x01\x1f\x7f")),
            R"("a\"b\\c/\n\t\r\b\f\u0001\u001f)"
            "\x7f\"");
  EXPECT_EQ(writeJson(JsonValue(std::string("\0", 1))), R"("\u0000")");
  EXPECT_EQ(writeJson(JsonValue("caf\xc3\xa9")), "\"caf\xc3\xa9\"");
  EXPECT_THROW(writeJson(JsonValue("bad \xff")), Error);
}

TEST(Json, WritesNumbersShortestRoundTrip) {
  EXPECT_EQ(writeJson(JsonValue(0.1)), "0.1");
  EXPECT_EQ(writeJson(JsonValue(1e-8)), "1e-08");
  EXPECT_EQ(writeJson(JsonValue(0.95)), "0.95");
  EXPECT_EQ(writeJson(JsonValue(1.0 / 3)), "0.3333333333333333");
  EXPECT_EQ(writeJson(JsonValue(2.0)), "2");
  EXPECT_EQ(writeJson(JsonValue(-0.0)), "-0");
  EXPECT_EQ(writeJson(JsonValue(1e300)), "1e+300");
  EXPECT_EQ(writeJson(JsonValue(INT64_MIN)), "-9223372036854775808");
  EXPECT_EQ(writeJson(JsonValue(uint64_t{18})), "18");
  EXPECT_THROW(JsonValue(UINT64_MAX), Error);
  EXPECT_EQ(writeJson(JsonValue(NAN)), "null");
  EXPECT_EQ(writeJson(JsonValue(-INFINITY)), "null");

  std::mt19937_64 random(42);
  for (int i = 0; i < 100000; ++i) {
    uint64_t bits = random();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isfinite(value))
      continue;
    double back = parseJson(writeJson(JsonValue(value))).asDouble();
    ASSERT_EQ(std::memcmp(&back, &value, sizeof value), 0)
        << writeJson(JsonValue(value));
  }
}

TEST(Json, RoundTripsDocuments) {
  const char *text =
      R"({"a":[1,-2.5,"x\u00e9\ud83d\ude00",{"b":null,"c":[true,false]}],)"
      R"("":{},"\n":[]})";
  JsonValue value = parseJson(text);
  EXPECT_EQ(parseJson(writeJson(value)), value);
  EXPECT_EQ(parseJson(writeJson(value, 4)), value);
  EXPECT_EQ(writeJson(parseJson(writeJson(value))), writeJson(value));
  EXPECT_NE(value, parseJson(R"({"a":[]})"));
  EXPECT_EQ(parseJson("1"), parseJson("1.0"));
}

TEST(Json, ManyKeysParseFast) {
  std::string text = "{";
  for (int i = 0; i < 200000; ++i)
    text +=
        (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  text += "}";
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(parseJson(text).size(), 200000u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  text.back() = ',';
  text += "\"k7\":0}";
  EXPECT_NE(parseError(text).find("duplicate object key 'k7'"),
            std::string::npos);
}

TEST(Json, CorruptedDocumentsFailCleanly) {
  // Random byte flips and truncations of a valid document: each parses or
  // throws Error, and never crashes or reads out of bounds.
  const std::string valid =
      R"({"groups": [{"kind": "adamw", "params": ["bias", "embed"],)"
      R"( "lr": 0.01, "betas": [0.9, 0.95], "s": "\u00e9\ud83d\ude00"}]})";
  std::mt19937 random(3);
  for (int i = 0; i < 50000; ++i) {
    std::string text = valid;
    if (random() % 4 == 0)
      text.resize(random() % text.size());
    else
      for (int flips = 1 + random() % 3; flips > 0; --flips)
        text[random() % text.size()] ^= static_cast<char>(1u << (random() % 8));
    try {
      JsonValue value = parseJson(text);
      EXPECT_EQ(parseJson(writeJson(value)), value);
    } catch (const Error &) {
    }
  }
}
