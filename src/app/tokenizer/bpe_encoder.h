// Byte-level BPE (tokenizer.ggml.model = "gpt2"), driven by merge ranks.
//
// A word (one pre-tokenizer piece, already in byte-level spelling) starts as
// one symbol per character, i.e. per original byte. The adjacent pair that
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

class BpeEncoder {
 public:
  // `ignore_merges`: a word that is itself a vocabulary token is emitted as
  // that token without merging (Hugging Face "ignore_merges", LLaMA-3).
  // Both references must outlive the encoder.
  BpeEncoder(const Vocabulary& vocab, const TokenIndex& index, bool ignore_merges);

  // Appends the ids for one word in byte-level spelling.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  size_t merge_count() const { return merges_.size(); }

 private:
  void append_unmapped_char(std::string_view ch, std::vector<int32_t>& out) const;

  const Vocabulary& vocab_;
  const TokenIndex& index_;
  bool ignore_merges_;
  MergeTable merges_;
};

}  // namespace kvforge
