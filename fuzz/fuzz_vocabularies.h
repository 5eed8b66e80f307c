// The small SentencePiece vocabulary the fuzz targets tokenize with: byte
// fallback (any byte string encodes), a merge ladder ("▁a", "ab") and a
// control token for parse_special. Built once per process.
#pragma once

#include "app/tokenizer/tokenizer.h"
#include "tokenizer_tiny_vocab.h"

namespace kvforge::fuzz {

inline const Tokenizer& spm_with_bytes() {
  static const Tokenizer t =
      Tokenizer::from_vocabulary(testing::tiny_spm_vocab({{"\xe2\x96\x81", -1},
                                                          {"a", -2},
                                                          {"b", -3},
                                                          {"ab", -1.5f},
                                                          {"\xe2\x96\x81"
                                                           "a",
                                                           -1.2f},
                                                          {"<|im_end|>", 0, TokenType::Control}},
                                                         /*with_bytes=*/true));
  return t;
}

}  // namespace kvforge::fuzz
