//===- Json.h - A small, strict JSON value, parser and writer ---*- C++ -*-===//
//
// JSON for safetensors headers, case metadata and reports. The parser is
// strict (RFC 8259 and nothing more: no comments, trailing commas, NaN,
// leading zeros or invalid UTF-8) because its input may come from strangers,
// and it rejects duplicate object keys, which RFC 8259 leaves open, so that a
// document cannot mean one thing here and another in a reader that keeps the
// other copy. It never reads past the buffer it is given, nests at most
// kMaxJsonDepth deep (so recursion is bounded), and reports every error with
// its byte offset. Objects keep their keys in insertion order, so the writer's
// output is deterministic.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_JSON_H
#define OPTGEN_RUNTIME_JSON_H

#include "optgen/runtime/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace optgen::runtime {

class JsonValue;
using JsonArray = std::vector<JsonValue>;
/// Members in insertion (document) order; keys are unique.
using JsonObject = std::vector<std::pair<std::string, JsonValue>>;

/// The deepest nesting of arrays and objects the parser accepts.
constexpr int kMaxJsonDepth = 64;

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  JsonValue() = default;
  JsonValue(std::nullptr_t) {}
  JsonValue(bool value) : value_(value) {}
  JsonValue(double value) : value_(Number{value, false, 0}) {}
  /// Any integer type; an unsigned value above INT64_MAX throws Error.
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                             int> = 0>
  JsonValue(T value) : value_(integerNumber(value)) {}
  JsonValue(const char *value) : value_(std::string(value)) {}
  JsonValue(std::string value) : value_(std::move(value)) {}
  JsonValue(std::string_view value) : value_(std::string(value)) {}
  JsonValue(JsonArray value) : value_(std::move(value)) {}
  JsonValue(JsonObject value) : value_(std::move(value)) {}

  Kind kind() const { return static_cast<Kind>(value_.index()); }
  bool isNull() const { return kind() == Kind::Null; }
  bool isBool() const { return kind() == Kind::Bool; }
  bool isNumber() const { return kind() == Kind::Number; }
  /// A number written without fraction or exponent that fits in int64_t.
  bool isInteger() const;
  bool isString() const { return kind() == Kind::String; }
  bool isArray() const { return kind() == Kind::Array; }
  bool isObject() const { return kind() == Kind::Object; }

  // The accessors throw Error, naming both kinds, on a value of another kind.
  bool asBool() const;
  /// Any number, integers included (rounded to the nearest double).
  double asDouble() const;
  /// An integer (isInteger()); throws Error for any other number.
  int64_t asInt64() const;
  const std::string &asString() const;
  const JsonArray &asArray() const;
  JsonArray &asArray();
  const JsonObject &asObject() const;
  JsonObject &asObject();

  /// The number of array elements or object members.
  size_t size() const;
  /// The member named `key`, or nullptr. Throws Error if not an object.
  const JsonValue *find(std::string_view key) const;
  /// The member named `key`; throws Error naming `key` if there is none.
  const JsonValue &at(std::string_view key) const;
  /// Element `index`; throws Error if out of range.
  const JsonValue &at(size_t index) const;
  /// Sets member `key`, in place if present, else appended (a null value
  /// becomes an empty object first). Returns the member.
  JsonValue &set(std::string key, JsonValue value);
  /// Appends to an array (a null value becomes an empty array first).
  void push(JsonValue value);

  /// Structural equality; numbers compare by value (1 == 1.0).
  bool operator==(const JsonValue &other) const;
  bool operator!=(const JsonValue &other) const { return !(*this == other); }

  /// The kind's name for messages: "null", "a boolean", "a number", ...
  static const char *kindName(Kind kind);

private:
  struct Number {
    double value;
    /// Set for an integer literal within int64_t: `integer` is exact.
    bool isInteger;
    int64_t integer;
  };

  template <typename T> static Number integerNumber(T value) {
    if constexpr (std::is_unsigned_v<T>)
      if (value > static_cast<std::make_unsigned_t<int64_t>>(INT64_MAX))
        throw Error("integer " + std::to_string(value) +
                    " is too large for a JSON value");
    return Number{static_cast<double>(value), true,
                  static_cast<int64_t>(value)};
  }

  // The order matches Kind.
  std::variant<std::nullptr_t, bool, Number, std::string, JsonArray, JsonObject>
      value_;
};

/// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or
/// code points above U+10FFFF), as JSON text must be.
bool isValidUtf8(std::string_view text);

/// Parses `text`, all of it: exactly one value with optional surrounding
/// whitespace. Throws Error "SOURCE: invalid JSON at byte OFFSET: PROBLEM".
JsonValue parseJson(std::string_view text, std::string_view source = "JSON");

/// `value` as JSON text: compact (no whitespace) for indent < 0, else one
/// member or element per line, indented by `indent` spaces per level. Keys
/// come in insertion order; numbers in the shortest form that reads back to
/// the same double (integers exactly); strings escape '"', '\\' and control
/// characters and keep other UTF-8 as is. JSON has no NaN or infinity: they
/// are written as null (as JavaScript does). Throws Error for a string that
/// is not valid UTF-8.
std::string writeJson(const JsonValue &value, int indent = -1);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_JSON_H
