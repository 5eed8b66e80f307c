// BPE driven by merge ranks: byte-level (tokenizer.ggml.model = "gpt2") and
// SentencePiece-spelled ("gemma4").
//
// A word (one pre-tokenizer piece, already in the vocabulary's spelling)
// starts as one symbol per character (per original byte in byte-level
// spelling, per UTF-8 character otherwise). The adjacent pair that
// appears earliest in the merge list is merged, the leftmost among equal
// pairs, until no adjacent pair has a merge. A priority queue over a linked
// list of symbols keeps this O(n log n) for long words.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "app/tokenizer/merge_table.h"
#include "app/tokenizer/token_index.h"
#include "app/tokenizer/vocabulary.h"

namespace kvforge {

struct BpeOptions {
  // A word that is itself a vocabulary token is emitted as that token
  // without merging (Hugging Face "ignore_merges", LLaMA-3).
  bool ignore_merges = false;
  // A character left without a token becomes its UTF-8 bytes as <0xAB>
  // tokens (Gemma 4) instead of UNK.
  bool byte_fallback = false;
};

class BpeEncoder {
 public:
  // Both references must outlive the encoder.
  BpeEncoder(const Vocabulary& vocab, const TokenIndex& index, BpeOptions options);

  // Appends the ids for one word in byte-level spelling.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  size_t merge_count() const { return merges_.size(); }

 private:
  void append_unmapped_char(std::string_view ch, std::vector<int32_t>& out) const;

  const Vocabulary& vocab_;
  const TokenIndex& index_;
  BpeOptions options_;
  std::array<int32_t, 256> byte_tokens_;  // byte -> id of "<0xAB>", -1 if absent
  MergeTable merges_;
};

}  // namespace kvforge
