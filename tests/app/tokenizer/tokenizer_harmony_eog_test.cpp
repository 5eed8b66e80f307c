// gpt-oss's harmony vocabulary (o200k_harmony): generation ends at
// <|return|> (the final answer) or <|call|> (a tool call), not at <|end|>,
// which closes the analysis message before the final one (llama.cpp's rule:
// with both <|return|> and <|call|> present, <|end|> leaves the EOG set).
#include <gtest/gtest.h>

#include <vector>

#include "app/tokenizer/special_tokens.h"
#include "tokenizer_tiny_vocab.h"

namespace kvforge {
namespace {

Vocabulary chat_vocab(const std::vector<std::string>& markers) {
  std::vector<testing::PieceSpec> pieces;
  for (const std::string& m : markers) pieces.push_back({m, 0.0f, TokenType::Control});
  Vocabulary v = testing::tiny_spm_vocab(pieces, /*with_bytes=*/true);
  v.eos_id = 2;
  complete_special_tokens(v, "");
  return v;
}

TEST(TokenizerHarmony, ReturnAndCallEndGenerationEndDoesNot) {
  const Vocabulary v = chat_vocab({"<|start|>", "<|end|>", "<|return|>", "<|call|>"});
  const std::vector<int32_t> ids = testing::ids_of(v, {"</s>", "<|return|>", "<|call|>"});
  EXPECT_EQ(end_of_generation_ids(v), ids);
}

// Without the harmony pair, <|end|> still ends a turn (Phi-3's chat format).
TEST(TokenizerHarmony, EndStaysAnEndOfTurnElsewhere) {
  const Vocabulary v = chat_vocab({"<|user|>", "<|end|>", "<|return|>"});
  EXPECT_EQ(end_of_generation_ids(v), testing::ids_of(v, {"</s>", "<|end|>", "<|return|>"}));
}

}  // namespace
}  // namespace kvforge
