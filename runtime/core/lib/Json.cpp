//===- Json.cpp - A small, strict JSON value, parser and writer -----------===//

#include "optgen/runtime/Json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace optgen::runtime {

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

const char *JsonValue::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "an invalid JSON value";
}

/// Throws the Error for using a value of kind `actual` as `expected`.
[[noreturn]] static void throwKindMismatch(JsonValue::Kind expected,
                                           JsonValue::Kind actual) {
  throw Error(std::string("JSON value is ") + JsonValue::kindName(actual) +
              ", not " + JsonValue::kindName(expected));
}

bool JsonValue::isInteger() const {
  const Number *number = std::get_if<Number>(&value_);
  return number && number->isInteger;
}

bool JsonValue::asBool() const {
  if (!isBool())
    throwKindMismatch(Kind::Bool, kind());
  return std::get<bool>(value_);
}

double JsonValue::asDouble() const {
  if (!isNumber())
    throwKindMismatch(Kind::Number, kind());
  return std::get<Number>(value_).value;
}

int64_t JsonValue::asInt64() const {
  if (!isNumber())
    throwKindMismatch(Kind::Number, kind());
  const Number &number = std::get<Number>(value_);
  if (!number.isInteger)
    throw Error("JSON number " + writeJson(*this) +
                " is not an integer (or not within 64 bits)");
  return number.integer;
}

const std::string &JsonValue::asString() const {
  if (!isString())
    throwKindMismatch(Kind::String, kind());
  return std::get<std::string>(value_);
}

const JsonArray &JsonValue::asArray() const {
  if (!isArray())
    throwKindMismatch(Kind::Array, kind());
  return std::get<JsonArray>(value_);
}

JsonArray &JsonValue::asArray() {
  if (!isArray())
    throwKindMismatch(Kind::Array, kind());
  return std::get<JsonArray>(value_);
}

const JsonObject &JsonValue::asObject() const {
  if (!isObject())
    throwKindMismatch(Kind::Object, kind());
  return std::get<JsonObject>(value_);
}

JsonObject &JsonValue::asObject() {
  if (!isObject())
    throwKindMismatch(Kind::Object, kind());
  return std::get<JsonObject>(value_);
}

size_t JsonValue::size() const {
  if (isArray())
    return asArray().size();
  if (isObject())
    return asObject().size();
  throw Error(std::string("JSON value is ") + kindName(kind()) +
              ", not an array or an object");
}

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const auto &[name, member] : asObject())
    if (name == key)
      return &member;
  return nullptr;
}

const JsonValue &JsonValue::at(std::string_view key) const {
  if (const JsonValue *member = find(key))
    return *member;
  throw Error("JSON object has no member '" + std::string(key) + "'");
}

const JsonValue &JsonValue::at(size_t index) const {
  const JsonArray &elements = asArray();
  if (index >= elements.size())
    throw Error("JSON array index " + std::to_string(index) +
                " is out of range (size " + std::to_string(elements.size()) +
                ")");
  return elements[index];
}

JsonValue &JsonValue::set(std::string key, JsonValue value) {
  if (isNull())
    value_ = JsonObject();
  JsonObject &members = asObject();
  for (auto &[name, member] : members)
    if (name == key)
      return member = std::move(value);
  members.emplace_back(std::move(key), std::move(value));
  return members.back().second;
}

void JsonValue::push(JsonValue value) {
  if (isNull())
    value_ = JsonArray();
  asArray().push_back(std::move(value));
}

bool JsonValue::operator==(const JsonValue &other) const {
  if (kind() != other.kind())
    return false;
  switch (kind()) {
  case Kind::Null:
    return true;
  case Kind::Bool:
    return asBool() == other.asBool();
  case Kind::Number: {
    const Number &a = std::get<Number>(value_);
    const Number &b = std::get<Number>(other.value_);
    if (a.isInteger && b.isInteger)
      return a.integer == b.integer;
    return a.value == b.value;
  }
  case Kind::String:
    return asString() == other.asString();
  case Kind::Array:
    return asArray() == other.asArray();
  case Kind::Object:
    return asObject() == other.asObject();
  }
  return false;
}

//===----------------------------------------------------------------------===//
// UTF-8
//===----------------------------------------------------------------------===//

/// The length of the well-formed UTF-8 sequence starting at `text[pos]`, or
/// 0 if there is none: no overlong forms, no surrogates, nothing above
/// U+10FFFF (the table of the Unicode standard, section 3.9).
static size_t utf8SequenceLength(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) -> unsigned {
    return pos + i < text.size() ? static_cast<unsigned char>(text[pos + i])
                                 : 0u;
  };
  auto continuation = [&](size_t i, unsigned low = 0x80, unsigned high = 0xbf) {
    return byte(i) >= low && byte(i) <= high;
  };
  unsigned lead = byte(0);
  if (lead < 0x80)
    return 1;
  if (lead >= 0xc2 && lead <= 0xdf)
    return continuation(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    unsigned low = lead == 0xe0 ? 0xa0 : 0x80;
    unsigned high = lead == 0xed ? 0x9f : 0xbf;
    return continuation(1, low, high) && continuation(2) ? 3 : 0;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    unsigned low = lead == 0xf0 ? 0x90 : 0x80;
    unsigned high = lead == 0xf4 ? 0x8f : 0xbf;
    return continuation(1, low, high) && continuation(2) && continuation(3) ? 4
                                                                            : 0;
  }
  return 0;
}

bool isValidUtf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    size_t length = utf8SequenceLength(text, pos);
    if (length == 0)
      return false;
    pos += length;
  }
  return true;
}

static void appendUtf8(std::string &out, uint32_t codePoint) {
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else if (codePoint < 0x800) {
    out += static_cast<char>(0xc0 | (codePoint >> 6));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  } else if (codePoint < 0x10000) {
    out += static_cast<char>(0xe0 | (codePoint >> 12));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (codePoint >> 18));
    out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (codePoint & 0x3f));
  }
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {

class JsonParser {
public:
  JsonParser(std::string_view text, std::string_view source)
      : text(text), source(source) {}

  JsonValue parseDocument() {
    skipWhitespace();
    JsonValue value = parseValue(0);
    skipWhitespace();
    if (pos < text.size())
      fail("unexpected " + describeByte(pos) + " after the JSON value");
    return value;
  }

private:
  std::string_view text;
  std::string_view source;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string &problem) { failAt(pos, problem); }

  [[noreturn]] void failAt(size_t offset, const std::string &problem) {
    throw Error(std::string(source) + ": invalid JSON at byte " +
                std::to_string(offset) + ": " + problem);
  }

  /// The byte at `offset` for messages: 'x', byte 0xNN, or end of input.
  std::string describeByte(size_t offset) const {
    if (offset >= text.size())
      return "end of input";
    unsigned char byte = static_cast<unsigned char>(text[offset]);
    if (byte >= 0x20 && byte < 0x7f)
      return std::string("'") + static_cast<char>(byte) + "'";
    char hex[16];
    std::snprintf(hex, sizeof hex, "byte 0x%02x", byte);
    return hex;
  }

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  void skipWhitespace() {
    while (!atEnd() && (text[pos] == ' ' || text[pos] == '\t' ||
                        text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  void expect(char c, const char *context) {
    if (atEnd() || text[pos] != c)
      fail(std::string("expected '") + c + "' " + context + ", found " +
           describeByte(pos));
    ++pos;
  }

  JsonValue parseValue(int depth) {
    if (atEnd())
      fail("expected a JSON value, found end of input");
    switch (text[pos]) {
    case '{':
      return parseObject(depth + 1);
    case '[':
      return parseArray(depth + 1);
    case '"':
      return JsonValue(parseString());
    case 't':
      parseLiteral("true");
      return JsonValue(true);
    case 'f':
      parseLiteral("false");
      return JsonValue(false);
    case 'n':
      parseLiteral("null");
      return JsonValue();
    default:
      if (text[pos] == '-' || (text[pos] >= '0' && text[pos] <= '9'))
        return parseNumber();
      fail("expected a JSON value, found " + describeByte(pos));
    }
  }

  void checkDepth(int depth) {
    if (depth > kMaxJsonDepth)
      fail("arrays and objects nest deeper than " +
           std::to_string(kMaxJsonDepth) + " levels");
  }

  JsonValue parseObject(int depth) {
    checkDepth(depth);
    ++pos; // '{'
    JsonObject members;
    std::vector<size_t> keyOffsets;
    skipWhitespace();
    if (peek() == '}') {
      ++pos;
      return JsonValue(std::move(members));
    }
    while (true) {
      skipWhitespace();
      if (peek() != '"')
        fail("expected a string key in an object, found " + describeByte(pos));
      keyOffsets.push_back(pos);
      std::string key = parseString();
      skipWhitespace();
      expect(':', "after an object key");
      skipWhitespace();
      members.emplace_back(std::move(key), parseValue(depth));
      skipWhitespace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      expect('}', "or ',' after an object member");
      break;
    }
    rejectDuplicateKeys(members, keyOffsets);
    members.shrink_to_fit();
    return JsonValue(std::move(members));
  }

  /// Sorting keeps this O(n log n) for the many-keyed headers of large
  /// checkpoints. The error names the first repeated key in the text.
  void rejectDuplicateKeys(const JsonObject &members,
                           const std::vector<size_t> &keyOffsets) {
    std::vector<size_t> order(members.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return members[a].first < members[b].first;
    });
    size_t repeat = members.size();
    for (size_t i = 1; i < order.size(); ++i)
      if (members[order[i]].first == members[order[i - 1]].first)
        repeat = std::min(repeat, order[i]);
    if (repeat < members.size())
      failAt(keyOffsets[repeat],
             "duplicate object key " + quoteForMessage(members[repeat].first));
  }

  JsonValue parseArray(int depth) {
    checkDepth(depth);
    ++pos; // '['
    JsonArray elements;
    skipWhitespace();
    if (peek() == ']') {
      ++pos;
      return JsonValue(std::move(elements));
    }
    while (true) {
      skipWhitespace();
      elements.push_back(parseValue(depth));
      skipWhitespace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      expect(']', "or ',' after an array element");
      break;
    }
    elements.shrink_to_fit();
    return JsonValue(std::move(elements));
  }

  void parseLiteral(std::string_view literal) {
    if (text.substr(pos, literal.size()) != literal)
      fail("expected a JSON value, found " + describeByte(pos));
    pos += literal.size();
  }

  /// Four hex digits after "\u".
  uint32_t parseHex4() {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i, ++pos) {
      char c = peek();
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        value |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        value |= static_cast<uint32_t>(c - 'A' + 10);
      else
        fail("expected 4 hex digits after \\u, found " + describeByte(pos));
    }
    return value;
  }

  /// The code point of a \u escape at `pos` (at the backslash), combining a
  /// surrogate pair into one code point.
  uint32_t parseUnicodeEscape() {
    size_t start = pos;
    pos += 2; // "\u"
    uint32_t unit = parseHex4();
    if (unit >= 0xdc00 && unit <= 0xdfff)
      failAt(start, "unpaired low surrogate in a \\u escape");
    if (unit < 0xd800 || unit > 0xdbff)
      return unit;
    if (text.substr(pos, 2) != "\\u")
      failAt(start, "high surrogate in a \\u escape is not followed by a "
                    "\\u low surrogate");
    pos += 2;
    uint32_t low = parseHex4();
    if (low < 0xdc00 || low > 0xdfff)
      failAt(start, "high surrogate in a \\u escape is not followed by a "
                    "\\u low surrogate");
    return 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
  }

  std::string parseString() {
    size_t start = pos;
    ++pos; // '"'
    std::string value;
    while (true) {
      if (atEnd())
        failAt(start, "unterminated string");
      unsigned char c = static_cast<unsigned char>(text[pos]);
      if (c == '"') {
        ++pos;
        return value;
      }
      if (c < 0x20)
        fail("control character " + describeByte(pos) +
             " in a string must be escaped");
      if (c == '\\') {
        if (pos + 1 >= text.size())
          failAt(start, "unterminated string");
        char escaped = text[pos + 1];
        switch (escaped) {
        case '"':
        case '\\':
        case '/':
          value += escaped;
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'n':
          value += '\n';
          break;
        case 'r':
          value += '\r';
          break;
        case 't':
          value += '\t';
          break;
        case 'u':
          appendUtf8(value, parseUnicodeEscape());
          continue;
        default:
          fail("invalid escape \\" + describeByte(pos + 1) + " in a string");
        }
        pos += 2;
        continue;
      }
      size_t length = utf8SequenceLength(text, pos);
      if (length == 0)
        fail("invalid UTF-8 (" + describeByte(pos) + ") in a string");
      value.append(text.substr(pos, length));
      pos += length;
    }
  }

  bool isDigit(size_t offset) const {
    return offset < text.size() && text[offset] >= '0' && text[offset] <= '9';
  }

  JsonValue parseNumber() {
    size_t start = pos;
    if (peek() == '-')
      ++pos;
    if (!isDigit(pos))
      fail("expected a digit in a number, found " + describeByte(pos));
    size_t integerStart = pos;
    if (text[pos] == '0' && isDigit(pos + 1))
      fail("leading zero in a number");
    while (isDigit(pos))
      ++pos;
    size_t integerDigits = pos - integerStart;
    bool isInteger = true;
    if (peek() == '.') {
      isInteger = false;
      ++pos;
      if (!isDigit(pos))
        fail("expected a digit after the decimal point, found " +
             describeByte(pos));
      while (isDigit(pos))
        ++pos;
    }
    size_t mantissaEnd = pos;
    int64_t exponent = 0;
    if (peek() == 'e' || peek() == 'E') {
      isInteger = false;
      ++pos;
      bool negative = peek() == '-';
      if (peek() == '+' || peek() == '-')
        ++pos;
      if (!isDigit(pos))
        fail("expected a digit in the exponent, found " + describeByte(pos));
      for (; isDigit(pos); ++pos) // Saturates: only the sign matters beyond.
        exponent =
            std::min<int64_t>(exponent * 10 + (text[pos] - '0'), 1000000000);
      if (negative)
        exponent = -exponent;
    }
    const char *first = text.data() + start;
    const char *last = text.data() + pos;
    if (isInteger) {
      int64_t integer;
      auto [end, ec] = std::from_chars(first, last, integer);
      if (ec == std::errc() && end == last)
        return JsonValue(integer);
      // Too large for int64_t: it is still a valid (double) number.
    }
    double value;
    auto [end, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::result_out_of_range) {
      // Underflow rounds to zero as everywhere else; overflow is an error.
      // The first significant digit's decimal position tells them apart.
      std::string_view mantissa =
          text.substr(integerStart, mantissaEnd - integerStart);
      size_t firstNonZero = mantissa.find_first_not_of("0.");
      int64_t leadingZeros = static_cast<int64_t>(firstNonZero);
      if (firstNonZero > integerDigits)
        --leadingZeros; // the decimal point
      if (static_cast<int64_t>(integerDigits) - leadingZeros + exponent > 0)
        failAt(start,
               "number " +
                   quoteForMessage(std::string_view(first, pos - start)) +
                   " is out of the range of a double");
      value = text[start] == '-' ? -0.0 : 0.0;
    } else if (ec != std::errc() || end != last) {
      failAt(start, "malformed number " +
                        quoteForMessage(std::string_view(first, pos - start)));
    }
    return JsonValue(value);
  }
};

} // namespace

JsonValue parseJson(std::string_view text, std::string_view source) {
  return JsonParser(text, source).parseDocument();
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

static void writeString(std::string &out, std::string_view text) {
  out += '"';
  for (size_t pos = 0; pos < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c >= 0x80) {
      size_t length = utf8SequenceLength(text, pos);
      if (length == 0)
        throw Error("cannot write a JSON string that is not valid UTF-8 "
                    "(byte " +
                    std::to_string(pos) + " of the string)");
      out.append(text.substr(pos, length));
      pos += length;
      continue;
    }
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char escape[8];
        std::snprintf(escape, sizeof escape, "\\u%04x", c);
        out += escape;
      } else {
        out += static_cast<char>(c);
      }
    }
    ++pos;
  }
  out += '"';
}

static void writeNumber(std::string &out, const JsonValue &value) {
  char buffer[64];
  std::to_chars_result result;
  if (value.isInteger()) {
    result = std::to_chars(buffer, buffer + sizeof buffer, value.asInt64());
  } else {
    double number = value.asDouble();
    if (!std::isfinite(number)) {
      out += "null";
      return;
    }
    // Without a format, to_chars writes the shortest text that reads back
    // to the same double.
    result = std::to_chars(buffer, buffer + sizeof buffer, number);
  }
  out.append(buffer, result.ptr);
}

static void writeNewline(std::string &out, int indent, int depth) {
  if (indent < 0)
    return;
  out += '\n';
  out.append(static_cast<size_t>(indent) * static_cast<size_t>(depth), ' ');
}

static void writeValue(std::string &out, const JsonValue &value, int indent,
                       int depth) {
  switch (value.kind()) {
  case JsonValue::Kind::Null:
    out += "null";
    return;
  case JsonValue::Kind::Bool:
    out += value.asBool() ? "true" : "false";
    return;
  case JsonValue::Kind::Number:
    writeNumber(out, value);
    return;
  case JsonValue::Kind::String:
    writeString(out, value.asString());
    return;
  case JsonValue::Kind::Array: {
    const JsonArray &elements = value.asArray();
    out += '[';
    for (size_t i = 0; i < elements.size(); ++i) {
      if (i)
        out += ',';
      writeNewline(out, indent, depth + 1);
      writeValue(out, elements[i], indent, depth + 1);
    }
    if (!elements.empty())
      writeNewline(out, indent, depth);
    out += ']';
    return;
  }
  case JsonValue::Kind::Object: {
    const JsonObject &members = value.asObject();
    out += '{';
    for (size_t i = 0; i < members.size(); ++i) {
      if (i)
        out += ',';
      writeNewline(out, indent, depth + 1);
      writeString(out, members[i].first);
      out += indent < 0 ? ":" : ": ";
      writeValue(out, members[i].second, indent, depth + 1);
    }
    if (!members.empty())
      writeNewline(out, indent, depth);
    out += '}';
    return;
  }
  }
}

std::string writeJson(const JsonValue &value, int indent) {
  std::string out;
  writeValue(out, value, indent, 0);
  return out;
}

} // namespace optgen::runtime
