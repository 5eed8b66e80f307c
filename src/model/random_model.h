// Random-weight LLaMA models written as GGUF: the `tiny` shapes the tests use
// and the `small` benchmark shape. Deterministic: the same spec and seed give
// the same bytes on every machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"

namespace kvforge {

// Tokens of the byte-fallback vocabulary a model gets without a `vocab` file:
// <unk>, <s>, </s> and the 256 byte tokens.
inline constexpr int kByteVocabTokens = 3 + 256;

struct RandomModelSpec {
  std::string name = "random";
  std::string arch = "llama";  // or "qwen2": NEOX RoPE and Q/K/V biases
  int n_embd = 64;
  int n_layer = 2;
  int n_head = 4;
  int n_kv_head = 2;
  int n_ff = 128;
  int n_ctx = 512;
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied_output = false;
  // Vocabulary size without a `vocab` file: the kByteVocabTokens byte-fallback tokens, padded with
  // unused tokens up to n_vocab (0 = no padding). Only changes the embedding and output shapes.
  int n_vocab = 0;
  GgmlType weight_type = GgmlType::F32;  // matrices; norms stay F32
  uint64_t seed = 42;

  // Named shapes: "tiny" (64/2 layers/4 heads/2 KV heads/ff 128, 259 tokens) and "small"
  // (768/12/12/4/ff 2048, 32000 tokens: the benchmark shape, LLaMA's vocabulary size).
  // nullopt for unknown names.
  static std::optional<RandomModelSpec> preset(const std::string& name);
};

// Builds the model. Vocabulary: the tokenizer.* keys of `vocab` when given
// (n_vocab = its token count), else a 259-token byte-fallback SentencePiece
// vocabulary (<unk>, <s>, </s>, <0x00>..<0xFF>) so any text can be tokenized.
gguf::GgufWriter make_random_model(const RandomModelSpec& spec,
                                   const gguf::GgufFile* vocab = nullptr);

}  // namespace kvforge
