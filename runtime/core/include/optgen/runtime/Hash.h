//===- Hash.h - 64-bit fingerprints and checksums ---------------*- C++ -*-===//
//
// One non-cryptographic 64-bit hash for everything that must notice a
// difference: checkpoint checksums (a flipped or truncated byte), the
// fingerprints of a spec and of a plan stored in a checkpoint, and what the
// ranks of a distributed optimizer compare before their first step. Four
// lanes of multiply-rotate over 32-byte blocks (as xxHash64 does), a final
// avalanche; several GB/s, and the same value on every host.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_HASH_H
#define OPTGEN_RUNTIME_HASH_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace optgen::runtime {

/// Hashes a stream of bytes given in any number of pieces: the digest
/// depends on the bytes alone, not on how they were split.
class Hasher {
public:
  Hasher();
  void update(const void *data, size_t size);
  /// The string's length, then its bytes: a sequence of strings hashes
  /// unambiguously ("ab" + "c" differs from "a" + "bc").
  void updateString(std::string_view text);
  void updateInt(int64_t value);
  uint64_t digest() const;

private:
  void block(const unsigned char *data);
  uint64_t lanes_[4];
  uint64_t total_ = 0;
  unsigned char buffer_[32];
  size_t buffered_ = 0;
};

/// The hash of `size` bytes.
uint64_t hash64(const void *data, size_t size);
inline uint64_t hash64(std::string_view text) {
  return hash64(text.data(), text.size());
}

/// 16 lowercase hex digits.
std::string hex64(uint64_t value);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_HASH_H
