//===- Agreement.cpp - Ranks that fail together ---------------------------===//

#include "optgen/runtime/Agreement.h"

#include "optgen/runtime/Hash.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace optgen::runtime {

namespace {

/// What each rank says first: did it fail, a hash of its description, and
/// the length of what it would say in full (its error or description).
struct Outcome {
  uint64_t failed;
  uint64_t hash;
  uint64_t length;
  uint64_t reserved;
};

} // namespace

void agree(Communicator &communicator, const std::string &error,
           const std::string &description, const DifferenceFn &explain) {
  int ranks = communicator.size();
  if (ranks == 1) {
    if (!error.empty())
      throw AgreedError(error);
    return;
  }
  bool failed = !error.empty();
  const std::string &said = failed ? error : description;
  Outcome mine{failed ? 1u : 0u, hash64(description), said.size(), 0};
  std::vector<Outcome> all(static_cast<size_t>(ranks));
  communicator.allGatherBytes(&mine, sizeof mine, all.data());
  bool anyFailed = false, allEqual = true;
  uint64_t longest = 0;
  for (const Outcome &outcome : all) {
    anyFailed |= outcome.failed != 0;
    allEqual &= outcome.hash == all[0].hash;
    longest = std::max(longest, outcome.length);
  }
  if (!anyFailed && allEqual)
    return;

  // Everything in full, padded to the longest.
  std::vector<char> mineFull(longest, '\0'), full(longest * ranks, '\0');
  std::memcpy(mineFull.data(), said.data(), said.size());
  communicator.allGatherBytes(mineFull.data(), longest, full.data());
  auto text = [&](int r) {
    return std::string(full.data() + r * longest, all[r].length);
  };
  if (anyFailed) {
    int first = -1, count = 0;
    for (int r = 0; r < ranks; ++r)
      if (all[r].failed) {
        if (first < 0)
          first = r;
        ++count;
      }
    std::string message = "rank " + std::to_string(first) + ": " + text(first);
    if (count > 1)
      message += " (and " + std::to_string(count - 1) + " more rank" +
                 (count > 2 ? "s" : "") + " failed)";
    throw AgreedError(message);
  }
  std::string first = text(0);
  for (int r = 1; r < ranks; ++r) {
    if (all[r].hash == all[0].hash && text(r) == first)
      continue;
    std::string message = explain ? explain(first, text(r), r) : "";
    if (message.empty())
      message = "rank " + std::to_string(r) + " differs from rank 0";
    throw AgreedError(message);
  }
  throw AgreedError("the ranks' descriptions hash differently but are equal");
}

} // namespace optgen::runtime
