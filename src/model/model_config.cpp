#include "model/model_config.h"

#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

[[noreturn]] void fail(const gguf::GgufFile& f, const std::string& what) {
  throw std::runtime_error(f.name() + ": " + what);
}

int positive_int(const gguf::GgufFile& f, const std::string& key, uint64_t v, uint64_t max) {
  if (v == 0 || v > max)
    fail(f, key + " = " + std::to_string(v) + " is out of range (expected 1.." +
                std::to_string(max) + ")");
  return static_cast<int>(v);
}

int required(const gguf::GgufFile& f, const std::string& key, uint64_t max) {
  if (!f.has(key)) fail(f, "missing required key '" + key + "'");
  return positive_int(f, key, f.get_u64(key), max);
}

int optional(const gguf::GgufFile& f, const std::string& key, int fallback, uint64_t max) {
  return f.has(key) ? positive_int(f, key, f.get_u64(key), max) : fallback;
}

// Vocabulary size: the metadata key when present, else the token list, else the embedding.
int vocab_size(const gguf::GgufFile& f, const std::string& arch) {
  const std::string key = arch + ".vocab_size";
  if (f.has(key)) return positive_int(f, key, f.get_u64(key), 1u << 24);
  if (const gguf::Value* tokens = f.find("tokenizer.ggml.tokens"); tokens && tokens->is_array())
    return positive_int(f, "tokenizer.ggml.tokens (length)",
                        std::get<gguf::Array>(tokens->data).items.size(), 1u << 24);
  if (const gguf::TensorInfo* emb = f.find_tensor("token_embd.weight");
      emb && emb->dims.size() == 2)
    return positive_int(f, "token_embd.weight ne[1]", emb->dims[1], 1u << 24);
  fail(f, "cannot determine the vocabulary size (no " + key +
              ", tokenizer.ggml.tokens or token_embd.weight)");
}

}  // namespace

ModelConfig ModelConfig::from_gguf(const gguf::GgufFile& f) {
  ModelConfig c;
  if (!f.has("general.architecture")) fail(f, "missing required key 'general.architecture'");
  c.arch_name = f.get_string("general.architecture");
  if (c.arch_name == "llama") {
    c.arch = Architecture::Llama;
    c.rope_style = RopeStyle::AdjacentPairs;
  } else if (c.arch_name == "qwen2") {
    c.arch = Architecture::Qwen2;
    c.rope_style = RopeStyle::Neox;
    c.qkv_bias = true;
  } else {
    fail(f, "unsupported general.architecture '" + c.arch_name + "' (supported: llama, qwen2)");
  }
  const std::string a = c.arch_name + ".";
  c.name = f.get_string_or("general.name", "");
  constexpr uint64_t kMaxDim = 1u << 20;
  c.n_embd = required(f, a + "embedding_length", kMaxDim);
  c.n_layer = required(f, a + "block_count", 4096);
  c.n_ff = required(f, a + "feed_forward_length", kMaxDim);
  c.n_head = required(f, a + "attention.head_count", 4096);
  c.n_kv_head = optional(f, a + "attention.head_count_kv", c.n_head, 4096);
  c.n_ctx_train = optional(f, a + "context_length", 2048, 1u << 24);
  c.n_vocab = vocab_size(f, c.arch_name);
  if (c.n_embd % c.n_head != 0 && !f.has(a + "attention.key_length"))
    fail(f, a + "embedding_length = " + std::to_string(c.n_embd) +
                " is not a multiple of attention.head_count = " + std::to_string(c.n_head));
  c.head_dim = optional(f, a + "attention.key_length", c.n_embd / c.n_head, 1u << 16);
  const int value_length = optional(f, a + "attention.value_length", c.head_dim, 1u << 16);
  if (value_length != c.head_dim)
    fail(f, a + "attention.value_length = " + std::to_string(value_length) +
                " differs from key_length = " + std::to_string(c.head_dim) + " (unsupported)");
  if (c.head_dim % 2 != 0) fail(f, "head dimension " + std::to_string(c.head_dim) + " is odd");
  if (c.n_head % c.n_kv_head != 0)
    fail(f, a + "attention.head_count_kv = " + std::to_string(c.n_kv_head) +
                " does not divide attention.head_count = " + std::to_string(c.n_head));
  c.rope_dim = optional(f, a + "rope.dimension_count", c.head_dim, 1u << 16);
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    fail(f, a + "rope.dimension_count = " + std::to_string(c.rope_dim) +
                " must be even and at most the head dimension " + std::to_string(c.head_dim));
  c.rope_freq_base = f.get_f32_or(a + "rope.freq_base", 10000.0f);
  c.rms_eps = f.get_f32_or(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  if (!(c.rope_freq_base > 1.0f))
    fail(f, a + "rope.freq_base = " + std::to_string(c.rope_freq_base) + " must be > 1");
  if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f))
    fail(f, a + "attention.layer_norm_rms_epsilon = " + std::to_string(c.rms_eps) +
                " must be in (0, 1)");
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace kvforge
