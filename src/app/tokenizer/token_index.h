// Text -> id lookup over a vocabulary's token strings.
//
// Open addressing with linear probing over a power-of-two table of ids: one
// allocation for the whole vocabulary and no per-entry nodes, so building it
// for a 150k-token vocabulary takes milliseconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvforge {

class TokenIndex {
 public:
  // Keeps a pointer to `tokens`, which must outlive the index and not change.
  // Duplicate spellings resolve to the lowest id.
  explicit TokenIndex(const std::vector<std::string>& tokens);

  // The id of the token spelled exactly `text`, or -1.
  int32_t find(std::string_view text) const;

 private:
  static uint64_t hash(std::string_view text);

  const std::vector<std::string>* tokens_;
  std::vector<int32_t> slots_;  // (capacity) token id or -1; capacity = power of two >= 2 n
  uint64_t mask_ = 0;
};

}  // namespace kvforge
