#include "app/tokenizer/special_token_splitter.h"

#include <algorithm>

#include "app/tokenizer/special_tokens.h"

namespace kvforge {

namespace {

// ASCII whitespace, as stripped around special tokens.
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

SpecialTokenSplitter::SpecialTokenSplitter(const Vocabulary& vocab) : vocab_(vocab) {
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (!is_special_type(vocab.type_of(id)) || vocab.tokens[id].empty()) continue;
    by_first_byte_[static_cast<uint8_t>(vocab.tokens[id][0])].push_back(id);
  }
  for (auto& ids : by_first_byte_) {
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
      return vocab.tokens[a].size() > vocab.tokens[b].size();
    });
  }
}

int32_t SpecialTokenSplitter::match_at(std::string_view text, bool parse_special) const {
  for (int32_t id : by_first_byte_[static_cast<uint8_t>(text[0])]) {
    if (!parse_special && vocab_.type_of(id) != TokenType::UserDefined) continue;
    if (text.starts_with(vocab_.tokens[id])) return id;
  }
  return -1;
}

void SpecialTokenSplitter::split(std::string_view text, bool parse_special,
                                 std::vector<TextFragment>& out) const {
  size_t raw_start = 0;  // start of the raw text not yet emitted
  size_t pos = 0;
  while (pos < text.size()) {
    const int32_t id = match_at(text.substr(pos), parse_special);
    if (id < 0) {
      ++pos;
      continue;
    }
    size_t raw_end = pos;
    if (vocab_.lstrip_tokens.contains(id)) {
      while (raw_end > raw_start && is_space(text[raw_end - 1])) --raw_end;
    }
    if (raw_end > raw_start) out.push_back({text.substr(raw_start, raw_end - raw_start), -1});
    out.push_back({{}, id});
    pos += vocab_.tokens[id].size();
    if (vocab_.rstrip_tokens.contains(id)) {
      while (pos < text.size() && is_space(text[pos])) ++pos;
    }
    raw_start = pos;
  }
  if (raw_start < text.size()) out.push_back({text.substr(raw_start), -1});
}

}  // namespace kvforge
