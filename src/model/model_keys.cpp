// The audit of `<arch>.*` metadata keys: kvforge reads a key, or knows it
// leaves the computation unchanged, or refuses the file naming it. A key
// llama.cpp would apply and kvforge skipped would compute different tokens
// without a word. Also the checks of the values read (ranges, finiteness).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/model_config_parts.h"

namespace kvforge::config_detail {
namespace {

// Read by ModelConfig::from_gguf for every architecture.
constexpr std::string_view kReadKeys[] = {
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "vocab_size",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
    "attention.layer_norm_rms_epsilon",
    "attention.sliding_window",
    "attention.sliding_window_pattern",
    "rope.dimension_count",
    "rope.freq_base",
    "rope.scaling.type",
    "rope.scaling.factor",
    "rope.scale_linear",
    "rope.scaling.original_context_length",
    "rope.scaling.attn_factor",
    // Accepted only when they state what kvforge computes anyway (model_rope_config.cpp).
    "rope.scaling.yarn_ext_factor",
    "rope.scaling.yarn_attn_factor",
    "rope.scaling.yarn_beta_fast",
    "rope.scaling.yarn_beta_slow",
};

// Read for gemma only (model_config.cpp's read_gemma, model_rope_config.cpp).
constexpr std::string_view kGemma2Keys[] = {"attn_logit_softcapping", "final_logit_softcapping",
                                            "rope.freq_base_swa"};
constexpr std::string_view kGemma3Keys[] = {"final_logit_softcapping", "rope.freq_base_swa"};
// Read for gemma4 (model_gemma4_config.cpp; its experts: model/moe_config.cpp).
constexpr std::string_view kGemma4Keys[] = {
    "final_logit_softcapping",    "rope.freq_base_swa",
    "rope.dimension_count_swa",   "embedding_length_per_layer_input",
    "attention.shared_kv_layers", "attention.key_length_swa",
    "attention.value_length_swa", "expert_count",
    "expert_used_count",          "expert_feed_forward_length"};
// Read for the mixtures of experts (model/moe_config.cpp).
constexpr std::string_view kQwen3MoeKeys[] = {"expert_count", "expert_used_count",
                                              "expert_feed_forward_length"};
// Read for gpt-oss (model/moe_config.cpp, model_rope_config.cpp).
constexpr std::string_view kGptOssKeys[] = {"expert_count", "expert_used_count",
                                            "expert_feed_forward_length", "rope.freq_base_swa"};
// Read for qwen35 (model_hybrid_config.cpp).
constexpr std::string_view kQwen35Keys[] = {"ssm.conv_kernel",
                                            "ssm.inner_size",
                                            "ssm.state_size",
                                            "ssm.time_step_rank",
                                            "ssm.group_count",
                                            "full_attention_interval",
                                            "attention.recurrent_layers",
                                            "rope.dimension_sections",
                                            "nextn_predict_layers"};

// Read for qwen35moe (model_hybrid_config.cpp, model/moe_config.cpp).
constexpr std::string_view kQwen35MoeKeys[] = {"expert_count", "expert_used_count",
                                               "expert_feed_forward_length",
                                               "expert_shared_feed_forward_length"};

// Known not to change what is computed: whether the RoPE scaling was
// fine-tuned is a note about training; converters copy a LayerNorm epsilon
// from some configs, and these architectures have RMS norms only. The
// pooling of embeddings is not the forward pass's: app/embedding's
// model_pooling reads it and refuses what it does not implement.
constexpr std::string_view kInertKeys[] = {"rope.scaling.finetuned", "attention.layer_norm_epsilon",
                                           "pooling_type"};

// Mixture-of-experts counts: zero means a dense model (or, for the groups,
// experts not in groups), as kvforge computes.
constexpr std::string_view kZeroOnlyKeys[] = {"expert_count", "expert_used_count",
                                              "expert_group_count", "expert_group_used_count"};

template <size_t N>
bool listed(const std::string_view (&list)[N], std::string_view key) {
  return std::find(std::begin(list), std::end(list), key) != std::end(list);
}

bool arch_reads(const std::string& arch, std::string_view key) {
  if (listed(kReadKeys, key) || listed(kInertKeys, key)) return true;
  if (arch == "gemma2") return listed(kGemma2Keys, key);
  if (arch == "gemma3") return listed(kGemma3Keys, key);
  if (arch == "gemma4") return listed(kGemma4Keys, key);
  if (arch == "qwen3moe") return listed(kQwen3MoeKeys, key);
  if (arch == "qwen35") return listed(kQwen35Keys, key);
  if (arch == "qwen35moe") return listed(kQwen35Keys, key) || listed(kQwen35MoeKeys, key);
  // qwen3next: qwen35moe's keys but the RoPE sections (it rotates with plain NeoX RoPE).
  if (arch == "qwen3next")
    return key != "rope.dimension_sections" &&
           (listed(kQwen35Keys, key) || listed(kQwen35MoeKeys, key));
  if (arch == "gpt-oss") return listed(kGptOssKeys, key);
  return false;
}

}  // namespace

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

namespace {

// The entries of a per-layer count key (each in [1, max]), or one entry for
// a scalar.
std::vector<int> layer_counts(const gguf::GgufFile& f, const std::string& key, int n_layer,
                              uint64_t max) {
  const gguf::Value* v = f.find(key);
  if (!v->is_array()) return {positive_int(f, key, f.get_u64(key), max)};
  const std::vector<gguf::Value>& items = std::get<gguf::Array>(v->data).items;
  if (items.size() != size_t(n_layer))
    fail(f, key + ": per-layer array of " + std::to_string(items.size()) +
                " entries, expected one per layer (block_count " + std::to_string(n_layer) + ")");
  std::vector<int> counts;
  for (const gguf::Value& item : items) {
    uint64_t n = 0;
    if (const uint64_t* u = std::get_if<uint64_t>(&item.data))
      n = *u;
    else if (const int64_t* i = std::get_if<int64_t>(&item.data); i && *i >= 0)
      n = uint64_t(*i);
    else
      fail(f, key + ": per-layer array of non-negative integers expected");
    counts.push_back(positive_int(f, key, n, max));
  }
  return counts;
}

}  // namespace

int per_layer_count(const gguf::GgufFile& f, const std::string& key, int n_layer, int fallback,
                    uint64_t max) {
  if (!f.find(key)) return fallback;
  const std::vector<int> counts = layer_counts(f, key, n_layer, max);
  if (std::all_of(counts.begin(), counts.end(), [&](int n) { return n == counts[0]; }))
    return counts[0];
  std::string listed;  // the values, for the message
  for (int n : counts)
    if (listed.size() < 60) listed += (listed.empty() ? "" : ", ") + std::to_string(n);
  fail(f, key + ": per-layer array [" + listed + (listed.size() < 60 ? "" : ", ...") +
              "] is not supported (the layers must all have the same count)");
}

std::vector<int> per_layer_widths(const gguf::GgufFile& f, const std::string& key, int n_layer,
                                  uint64_t max) {
  if (!f.find(key)) fail(f, "missing required key '" + key + "'");
  std::vector<int> counts = layer_counts(f, key, n_layer, max);
  if (std::all_of(counts.begin(), counts.end(), [&](int n) { return n == counts[0]; }))
    counts.resize(1);
  return counts;
}

std::string float_str(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", double(v));
  return buf;
}

float float_key(const gguf::GgufFile& f, const std::string& key, float fallback, FloatRange range) {
  if (!f.has(key)) return fallback;
  const float v = f.get_f32(key);
  const bool above = range.min_inclusive ? v >= range.min : v > range.min;
  if (std::isfinite(v) && above && v < range.max) return v;
  const std::string low = (range.min_inclusive ? ">= " : "> ") + float_str(range.min);
  fail(f, key + " = " + float_str(v) + ", expected a finite value " + low +
              (std::isinf(range.max) ? "" : " and < " + float_str(range.max)));
}

void check_arch_keys(const gguf::GgufFile& f, const std::string& arch) {
  const std::string prefix = arch + ".";
  for (const gguf::KeyValue& kv : f.metadata()) {
    if (!kv.key.starts_with(prefix)) continue;
    const std::string_view key = std::string_view(kv.key).substr(prefix.size());
    if (arch_reads(arch, key)) continue;
    if (listed(kZeroOnlyKeys, key) && kv.value.is_integer() && f.get_u64(kv.key) == 0) continue;
    fail(f, "metadata key '" + kv.key +
                "' changes how the model computes and kvforge does not implement it for " + arch +
                " (refusing rather than computing different tokens)");
  }
}

}  // namespace kvforge::config_detail
