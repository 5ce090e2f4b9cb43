//===- deterministic_data.h - Reproducible benchmark inputs ----------------===//
//
// The inputs of the benchmarks: counter-based, so that every program (and
// bench/baseline_torch.py, with numpy's uint64 arithmetic) produces
// bit-identical tensors, and results can be compared, not only times.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_BENCH_DETERMINISTIC_DATA_H
#define OPTGEN_BENCH_DETERMINISTIC_DATA_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace optgen_bench {

/// splitmix64: element x of a counter-based generator.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Element i of the stream `seed`: uniform in [-scale, scale), exactly
/// representable (24 random bits), identical in the Python baseline.
inline void fillUniform(std::vector<float> &data, uint64_t seed, float scale) {
  for (std::size_t i = 0; i < data.size(); ++i) {
    uint64_t bits = splitmix64((seed << 32) + i) >> 40; // 24 bits
    float unit = static_cast<float>(bits) * (1.0f / 16777216.0f) - 0.5f;
    data[i] = 2.0f * scale * unit;
  }
}

} // namespace optgen_bench

#endif // OPTGEN_BENCH_DETERMINISTIC_DATA_H
