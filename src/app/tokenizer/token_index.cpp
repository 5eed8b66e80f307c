#include "app/tokenizer/token_index.h"

namespace kvforge {

uint64_t TokenIndex::hash(std::string_view text) {
  // FNV-1a, then a final mix so that the low bits (the table index) depend on every byte.
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  return h;
}

TokenIndex::TokenIndex(const std::vector<std::string>& tokens) : tokens_(&tokens) {
  size_t capacity = 16;
  while (capacity < 2 * tokens.size()) capacity *= 2;
  slots_.assign(capacity, -1);
  mask_ = capacity - 1;
  for (size_t id = 0; id < tokens.size(); ++id) {
    uint64_t slot = hash(tokens[id]) & mask_;
    while (slots_[slot] >= 0) {
      if (tokens[slots_[slot]] == tokens[id]) break;  // duplicate: the lower id stays
      slot = (slot + 1) & mask_;
    }
    if (slots_[slot] < 0) slots_[slot] = static_cast<int32_t>(id);
  }
}

int32_t TokenIndex::find(std::string_view text) const {
  uint64_t slot = hash(text) & mask_;
  while (true) {
    const int32_t id = slots_[slot];
    if (id < 0) return -1;
    if ((*tokens_)[id] == text) return id;
    slot = (slot + 1) & mask_;
  }
}

}  // namespace kvforge
