//===- Hash.cpp - 64-bit fingerprints and checksums -----------------------===//

#include "optgen/runtime/Hash.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace optgen::runtime {

namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t load64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i]; // little-endian on every host
  return v;
}

uint64_t round(uint64_t lane, uint64_t word) {
  return rotl(lane + word * kP2, 31) * kP1;
}

} // namespace

Hasher::Hasher()
    : lanes_{kP1 + kP2, kP2, 0, 0 - kP1} {}

void Hasher::block(const unsigned char *data) {
  for (int i = 0; i < 4; ++i)
    lanes_[i] = round(lanes_[i], load64(data + 8 * i));
}

void Hasher::update(const void *data, size_t size) {
  if (size == 0)
    return;
  const unsigned char *p = static_cast<const unsigned char *>(data);
  total_ += size;
  if (buffered_) {
    size_t take = std::min(size, sizeof buffer_ - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    size -= take;
    if (buffered_ < sizeof buffer_)
      return;
    block(buffer_);
    buffered_ = 0;
  }
  for (; size >= 32; p += 32, size -= 32)
    block(p);
  if (size) {
    std::memcpy(buffer_, p, size);
    buffered_ = size;
  }
}

void Hasher::updateString(std::string_view text) {
  updateInt(static_cast<int64_t>(text.size()));
  update(text.data(), text.size());
}

void Hasher::updateInt(int64_t value) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<unsigned char>(static_cast<uint64_t>(value) >> (8 * i));
  update(bytes, 8);
}

uint64_t Hasher::digest() const {
  uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) +
               rotl(lanes_[3], 18);
  for (uint64_t lane : lanes_)
    h = (h ^ round(0, lane)) * kP1 + kP4;
  h += total_;
  size_t i = 0;
  for (; i + 8 <= buffered_; i += 8)
    h = rotl(h ^ round(0, load64(buffer_ + i)), 27) * kP1 + kP4;
  for (; i < buffered_; ++i)
    h = rotl(h ^ (buffer_[i] * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

uint64_t hash64(const void *data, size_t size) {
  Hasher hasher;
  hasher.update(data, size);
  return hasher.digest();
}

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(value));
  return text;
}

} // namespace optgen::runtime
