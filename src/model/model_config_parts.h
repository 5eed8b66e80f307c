// Internal to ModelConfig::from_gguf: the helpers its parts share
// (model_config.cpp: shapes and architectures; model_rope_config.cpp: RoPE;
// model_keys.cpp: the audit of `<arch>.*` keys and the value checks, which
// model_weights.cpp's checks of tensor values share).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "model/model_config.h"

namespace kvforge::config_detail {

[[noreturn]] void fail(const gguf::GgufFile& f, const std::string& what);
// v as an int in [1, max], else an error naming the key.
int positive_int(const gguf::GgufFile& f, const std::string& key, uint64_t v, uint64_t max);
int required(const gguf::GgufFile& f, const std::string& key, uint64_t max);
int optional(const gguf::GgufFile& f, const std::string& key, int fallback, uint64_t max);
// A count llama.cpp reads per layer (get_key_or_arr: head_count,
// head_count_kv, feed_forward_length): a scalar, or an array of one entry per layer whose
// entries are all equal; arrays that differ between layers are refused by name.
int per_layer_count(const gguf::GgufFile& f, const std::string& key, int n_layer, int fallback,
                    uint64_t max);
// A required per-layer count whose entries may differ (feed_forward_length:
// Gemma 4's double-wide FFN; its head_count_kv per kind of layer): one entry
// when the key is a scalar or every layer agrees, else one per layer. An array of another length
// than n_layer, or an entry outside [1, max], is refused naming the key.
std::vector<int> per_layer_widths(const gguf::GgufFile& f, const std::string& key, int n_layer,
                                  uint64_t max);

// The values a float key may take: finite, above `min` (or equal to it when
// min_inclusive) and below `max`. A NaN or an infinity in a hyperparameter
// would load without a word and make every logit NaN, so neither is accepted.
struct FloatRange {
  float min;
  bool min_inclusive = false;
  float max = std::numeric_limits<float>::infinity();  // infinity: no bound but finiteness
};
// The key's value (`fallback` when absent) when it is in `range`, else an
// error naming the file and key with the value and the range expected.
float float_key(const gguf::GgufFile& f, const std::string& key, float fallback, FloatRange range);
// `v` for messages ("%g": 1e-05, inf, nan).
std::string float_str(float v);

// Refuses any `<arch>.*` key kvforge does not read and that is not known to
// leave the computation unchanged, naming it.
void check_arch_keys(const gguf::GgufFile& f, const std::string& arch);

// c.rope, c.rope_swa and c.rope_scaling from the rope.* keys (needs the
// shapes, c.n_ctx_train and the sliding-window layers read first).
void read_rope(const gguf::GgufFile& f, ModelConfig& c);

// qwen35: the linear-attention (`ssm.*`) keys, which layers are recurrent,
// the multi-token-prediction blocks (taken off c.n_layer) and the RoPE
// sections (model_hybrid_config.cpp). Needs the shapes read first.
void read_hybrid(const gguf::GgufFile& f, ModelConfig& c);

// gpt-oss: its required keys, attention sinks and output bias, the clamped
// SwiGLU of its experts (model_gpt_oss_config.cpp). Needs the shapes read first.
void read_gpt_oss(const gguf::GgufFile& f, ModelConfig& c);

// gemma4: per-layer embeddings, shared-KV layers, the windowed layers' head
// sizes (model_gemma4_config.cpp). Needs the shapes and windows read first.
void read_gemma4(const gguf::GgufFile& f, ModelConfig& c);

}  // namespace kvforge::config_detail
