// SentencePiece BPE (tokenizer.ggml.model = "llama"), driven by scores.
//
// The text starts as one symbol per UTF-8 character. Repeatedly, of all
// adjacent pairs whose concatenation is a vocabulary piece, the pair whose
// piece has the highest score is merged (the leftmost on equal scores) until
// no pair is a piece. A priority queue of candidate pairs over a linked list
// of symbols keeps this O(n log n). Characters left without a piece become
// their UTF-8 bytes as <0xAB> tokens (byte fallback), or UNK without them.
//
// As in SentencePiece, only normal, user-defined and unused pieces can be
// merge results (control/byte pieces such as "<s>" or "<0x41>" cannot be
// spelled by text), and a result that is an unused piece is split back into
// the two halves it was made of.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "app/tokenizer/token_index.h"
#include "app/tokenizer/vocabulary.h"

namespace kvforge {

class SpmEncoder {
 public:
  // Both must outlive the encoder.
  SpmEncoder(const Vocabulary& vocab, const TokenIndex& index);

  // `text`: valid UTF-8 already in SentencePiece spelling (spaces as U+2581,
  // prefix added by the caller). Appends the token ids to `out`.
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  int32_t mergeable_piece(std::string_view text) const;  // -1 if text can't be a merge result
  void append_piece_or_bytes(std::string_view text, std::vector<int32_t>& out) const;

  const Vocabulary& vocab_;
  const TokenIndex& index_;
  std::array<int32_t, 256> byte_tokens_;  // byte -> id of "<0xAB>", -1 if absent
};

// "<0xAB>" -> 0xAB for a byte piece's spelling; -1 if `text` is not one.
int parse_byte_piece(std::string_view text);

// byte -> id of the byte token "<0xAB>" (type Byte), -1 where the vocabulary has none.
std::array<int32_t, 256> byte_piece_tokens(const Vocabulary& vocab, const TokenIndex& index);

}  // namespace kvforge
