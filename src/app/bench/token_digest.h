// One number for the greedy outputs of a benchmark workload, so that runs
// (one process, N tensor-parallel ranks, cache on or off) can be compared
// by a line of output: 64-bit FNV-1a over each list's length, then its
// ids, lists in order, every value as 4 little-endian bytes.
#pragma once

#include <cstdint>
#include <vector>

namespace kvforge::cli {

inline uint64_t digest_token_lists(const std::vector<std::vector<int32_t>>& lists) {
  uint64_t h = 14695981039346656037ull;
  const auto mix = [&h](uint32_t v) {
    for (int i = 0; i < 4; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  };
  for (const auto& ids : lists) {
    mix(uint32_t(ids.size()));
    for (int32_t t : ids) mix(uint32_t(t));
  }
  return h;
}

}  // namespace kvforge::cli
