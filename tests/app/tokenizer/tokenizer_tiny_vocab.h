// Hand-built vocabularies for tokenizer unit tests that need no test data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/tokenizer/vocabulary.h"

namespace kvforge::testing {

struct PieceSpec {
  std::string text;
  float score = 0.0f;
  TokenType type = TokenType::Normal;
};

// A SentencePiece vocabulary: <unk> <s> </s> at 0..2, then `pieces` in order,
// then (if `with_bytes`) the 256 byte pieces <0x00>..<0xFF>.
Vocabulary tiny_spm_vocab(const std::vector<PieceSpec>& pieces, bool with_bytes);

// A byte-level BPE vocabulary: the 256 single-byte tokens (id = byte), then
// `extra` tokens in order, with `merges` ("left right" in byte-level spelling).
Vocabulary tiny_bpe_vocab(const std::vector<std::string>& extra,
                          const std::vector<std::string>& merges, std::string pre = "gpt-2");

// Token ids by text, for readable expectations.
std::vector<int32_t> ids_of(const Vocabulary& vocab, const std::vector<std::string>& texts);

}  // namespace kvforge::testing
