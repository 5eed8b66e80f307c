#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "model/model_config_parts.h"

namespace kvforge {
namespace {

using config_detail::fail;
using config_detail::float_key;
using config_detail::FloatRange;
using config_detail::optional;
using config_detail::per_layer_count;
using config_detail::per_layer_widths;
using config_detail::positive_int;
using config_detail::required;

// What an architecture changes in the llama block (llama.cpp's per-arch
// loaders and graphs under src/models/ are the reference).
struct ArchTraits {
  const char* name;
  Architecture arch;
  RopeStyle rope_style;
  bool qkv_bias;
  bool qk_norm;
  bool post_norms;  // with embeddings scaled by sqrt(n_embd) and a GELU FFN: the gemma block
  // Sliding windows: the layer pattern (every n-th layer is global; 0 = no
  // windows unless attention.sliding_window says so, then on every layer)
  // and the window when the file has no attention.sliding_window.
  int swa_pattern;
  int32_t default_window;
};

constexpr ArchTraits kArchs[] = {
    {"llama", Architecture::Llama, RopeStyle::AdjacentPairs, false, false, false, 0, 0},
    {"qwen2", Architecture::Qwen2, RopeStyle::Neox, true, false, false, 0, 0},
    {"qwen3", Architecture::Qwen3, RopeStyle::Neox, false, true, false, 0, 0},
    {"gemma2", Architecture::Gemma2, RopeStyle::Neox, false, false, true, 2, 4096},
    {"gemma3", Architecture::Gemma3, RopeStyle::Neox, false, true, true, 6, 0},
    {"phi3", Architecture::Phi3, RopeStyle::Neox, false, false, false, 0, 0},
    {"qwen3moe", Architecture::Qwen3Moe, RopeStyle::Neox, false, true, false, 0, 0},
    {"qwen35", Architecture::Qwen35, RopeStyle::Neox, false, true, false, 0, 0},
    // qwen35 with a mixture of experts and a shared expert as its FFN.
    {"qwen35moe", Architecture::Qwen35Moe, RopeStyle::Neox, false, true, false, 0, 0},
    // Qwen3-Next: the same hybrid and FFN, grouped value heads, plain NeoX RoPE.
    {"qwen3next", Architecture::Qwen3Next, RopeStyle::Neox, false, true, false, 0, 0},
    // gpt-oss (llama.cpp's openai-moe): even layers windowed, odd layers full.
    {"gpt-oss", Architecture::GptOss, RopeStyle::Neox, false, false, false, 2, 0},
    // Gemma 4: the gemma block with shared-KV layers and per-layer embeddings.
    {"gemma4", Architecture::Gemma4, RopeStyle::Neox, false, true, true, 0, 0},
};

const ArchTraits& arch_traits(const gguf::GgufFile& f, const std::string& name) {
  for (const ArchTraits& t : kArchs)
    if (name == t.name) return t;
  fail(f, "unsupported general.architecture '" + name +
              "' (supported: " + supported_architecture_names() + ")");
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

void read_shapes(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  constexpr uint64_t kMaxDim = 1u << 20;
  c.n_embd = required(f, a + "embedding_length", kMaxDim);
  c.n_layer = required(f, a + "block_count", 4096);
  std::vector<int> ff = per_layer_widths(f, a + "feed_forward_length", c.n_layer, kMaxDim);
  c.n_ff = *std::max_element(ff.begin(), ff.end());
  if (ff.size() > 1) c.n_ff_layers = std::move(ff);
  if (!f.has(a + "attention.head_count"))
    fail(f, "missing required key '" + a + "attention.head_count'");
  c.n_head = per_layer_count(f, a + "attention.head_count", c.n_layer, 0, 4096);
  // Gemma 4's per-layer array (one count for windowed layers, one for full
  // ones) is read once the windows are known (read_gemma4).
  const std::string kv_key = a + "attention.head_count_kv";
  const gguf::Value* kv_heads = f.find(kv_key);
  c.n_kv_head = c.arch == Architecture::Gemma4 && kv_heads && kv_heads->is_array()
                    ? c.n_head
                    : per_layer_count(f, kv_key, c.n_layer, c.n_head, 4096);
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
  if (c.arch == Architecture::Llama && c.rope_dim != c.head_dim)
    fail(f, a + "rope.dimension_count = " + std::to_string(c.rope_dim) +
                " differs from the head dimension " + std::to_string(c.head_dim) +
                " (llama rotates whole heads)");
  c.rms_eps = float_key(f, a + "attention.layer_norm_rms_epsilon", 1e-5f, {.min = 0, .max = 1});
}

// Which layers have the sliding window: attention.sliding_window_pattern as
// an integer n (every n-th layer, the last of each n, is global) or as a
// per-layer array of booleans, else the architecture's pattern.
void read_sliding_window(const gguf::GgufFile& f, const ArchTraits& t, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  const std::string window_key = a + "attention.sliding_window";
  const uint64_t window = f.has(window_key) ? f.get_u64(window_key) : uint64_t(t.default_window);
  // A window of 0 tokens would hide every key from its query. llama.cpp's
  // converter writes 0 for Phi-4 (phi3 without windows) to say "none"; any
  // other architecture says so by leaving the key out.
  if (window == 0 && f.has(window_key) && c.arch != Architecture::Phi3)
    fail(f, window_key + " = 0, expected a window of at least 1 token (or no key for none)");
  c.sliding_window = int32_t(std::min<uint64_t>(window, 1u << 30));
  c.swa_layers.assign(size_t(c.n_layer), 0);
  const std::string pattern_key = a + "attention.sliding_window_pattern";
  const gguf::Value* pattern = f.find(pattern_key);
  // An integer pattern n makes every n-th layer global: 0 names no layer.
  if (pattern && !pattern->is_array() && f.get_u64(pattern_key) == 0)
    fail(f,
         pattern_key + " = 0, expected n >= 1 (every n-th layer global) or one boolean per layer");
  if (c.sliding_window == 0) return;
  if (pattern && pattern->is_array()) {
    const auto& items = std::get<gguf::Array>(pattern->data).items;
    if (items.size() != size_t(c.n_layer))
      fail(f, pattern_key + " has " + std::to_string(items.size()) + " entries, expected " +
                  std::to_string(c.n_layer) + " (one per layer)");
    for (size_t l = 0; l < items.size(); ++l) {
      if (items[l].type != gguf::ValueType::BOOL)
        fail(f, pattern_key + " must be an array of booleans");
      c.swa_layers[l] = std::get<bool>(items[l].data) ? 1 : 0;
    }
    return;
  }
  const int n = pattern ? int(std::min<uint64_t>(f.get_u64(pattern_key), 4096)) : t.swa_pattern;
  for (int l = 0; l < c.n_layer; ++l) c.swa_layers[size_t(l)] = n == 0 || l % n < n - 1;
}

// Gemma's query scale, as llama.cpp chooses it: 1/sqrt(n_embd / n_head) for
// the 27B shapes (46 layers for gemma2, 62 for gemma3), 1/sqrt(head_dim) otherwise.
float gemma_query_scale(const ModelConfig& c) {
  const bool is_27b = (c.arch == Architecture::Gemma2 && c.n_layer == 46) ||
                      (c.arch == Architecture::Gemma3 && c.n_layer == 62);
  return 1.0f / std::sqrt(float(is_27b ? c.n_embd / c.n_head : c.head_dim));
}

void read_gemma(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  c.embd_scale = std::sqrt(float(c.n_embd));
  c.ffn_act = FfnActivation::GeluTanh;
  c.attn_scale = gemma_query_scale(c);
  // 0 = no soft-capping (forward.cpp); an infinite cap would compute inf · tanh(0) = NaN.
  constexpr FloatRange kSoftcap{.min = 0, .min_inclusive = true};
  const bool gemma2 = c.arch == Architecture::Gemma2;
  if (gemma2) c.attn_softcap = float_key(f, a + "attn_logit_softcapping", 50.0f, kSoftcap);
  c.final_softcap = float_key(f, a + "final_logit_softcapping", gemma2 ? 30.0f : 0.0f, kSoftcap);
}

}  // namespace

const char* supported_architecture_names() {
  return "llama, qwen2, qwen3, gemma2, gemma3, phi3, qwen3moe, qwen35, qwen35moe, qwen3next, "
         "gpt-oss, gemma4";
}

size_t ModelConfig::state_bytes_per_sequence() const {
  size_t n = 0;
  for (uint8_t r : recurrent_layers) n += r ? linear.state_floats() * sizeof(float) : 0;
  return n;
}

ModelConfig ModelConfig::from_gguf(const gguf::GgufFile& f) {
  ModelConfig c;
  if (!f.has("general.architecture")) fail(f, "missing required key 'general.architecture'");
  c.arch_name = f.get_string("general.architecture");
  const ArchTraits& t = arch_traits(f, c.arch_name);
  c.arch = t.arch;
  c.rope_style = t.rope_style;
  c.qkv_bias = t.qkv_bias;
  c.qk_norm = t.qk_norm;
  c.post_norms = t.post_norms;
  c.name = f.get_string_or("general.name", "");
  config_detail::check_arch_keys(f, c.arch_name);
  read_shapes(f, c);
  config_detail::read_moe(f, c);
  if (c.arch == Architecture::Qwen35 || c.arch == Architecture::Qwen35Moe ||
      c.arch == Architecture::Qwen3Next)
    config_detail::read_hybrid(f, c);
  c.attn_scale = 1.0f / std::sqrt(float(c.head_dim));
  if (t.post_norms) read_gemma(f, c);
  if (c.arch == Architecture::GptOss) config_detail::read_gpt_oss(f, c);
  read_sliding_window(f, t, c);
  if (c.arch == Architecture::Gemma4) config_detail::read_gemma4(f, c);
  config_detail::read_rope(f, c);
  // gemma2 always multiplies by the embeddings (an output.weight is then
  // refused as a tensor nothing reads, as llama.cpp refuses it).
  c.tied_output = c.arch == Architecture::Gemma2 || f.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace kvforge
