// Cutting text at special tokens written literally in it ("<|eot_id|>",
// "<s>"), before the text is tokenized.
//
// User-defined tokens are always recognised; control and unknown-type tokens
// only when the caller asks (parse_special: chat templates write them, user
// text should not be able to). At each position the longest matching token
// wins, scanning left to right (Hugging Face's added-token matching). Tokens
// marked lstrip/rstrip also take the whitespace before/after them.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "app/tokenizer/vocabulary.h"

namespace kvforge {

struct TextFragment {
  std::string_view text;  // raw text to tokenize (empty when token >= 0)
  int32_t token = -1;     // a special token matched in the text, or -1
};

class SpecialTokenSplitter {
 public:
  explicit SpecialTokenSplitter(const Vocabulary& vocab);  // `vocab` must outlive it

  // Appends the fragments of `text` in order; empty raw fragments are dropped.
  void split(std::string_view text, bool parse_special, std::vector<TextFragment>& out) const;

 private:
  // Longest token allowed under `parse_special` that `text` starts with, or -1.
  int32_t match_at(std::string_view text, bool parse_special) const;

  const Vocabulary& vocab_;
  // Special tokens by first byte, longest first.
  std::array<std::vector<int32_t>, 256> by_first_byte_;
};

}  // namespace kvforge
