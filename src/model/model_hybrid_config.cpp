// The hybrid layout of qwen35, qwen35moe and qwen3next read as llama.cpp
// reads it (llama_model_<arch>::load_arch_hparams, the same for the three but
// for qwen3next's RoPE): the Gated DeltaNet shapes from the `ssm.*` keys, which
// layers are recurrent (attention.recurrent_layers, else every
// full_attention_interval-th layer is full attention), the trailing
// multi-token-prediction blocks, and the interleaved multi-section RoPE.
#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "model/model_config_parts.h"

namespace kvforge::config_detail {
namespace {

// attention.recurrent_layers: one boolean per block, MTP blocks included
// (which must say false: they are attention blocks).
void read_recurrent_array(const gguf::GgufFile& f, const std::string& key, int n_all,
                          ModelConfig& c) {
  const gguf::Value& v = *f.find(key);
  if (!v.is_array()) fail(f, key + " must be an array of booleans, one per block");
  const auto& items = std::get<gguf::Array>(v.data).items;
  if (items.size() != size_t(n_all))
    fail(f, key + " has " + std::to_string(items.size()) +
                " entries, expected block_count = " + std::to_string(n_all));
  for (size_t l = 0; l < items.size(); ++l) {
    if (items[l].type != gguf::ValueType::BOOL) fail(f, key + " must be an array of booleans");
    const bool recurrent = std::get<bool>(items[l].data);
    if (l >= size_t(c.n_layer) && recurrent)
      fail(f, key + "[" + std::to_string(l) + "] marks a multi-token-prediction block as " +
                  "recurrent; those blocks are full attention");
    if (l < size_t(c.n_layer)) c.recurrent_layers[l] = recurrent ? 1 : 0;
  }
}

void read_recurrent_layers(const gguf::GgufFile& f, int n_all, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  c.recurrent_layers.assign(size_t(c.n_layer), 0);
  if (f.has(a + "attention.recurrent_layers"))
    return read_recurrent_array(f, a + "attention.recurrent_layers", n_all, c);
  const int interval = optional(f, a + "full_attention_interval", 4, 4096);
  for (int l = 0; l < c.n_layer; ++l) c.recurrent_layers[size_t(l)] = (l + 1) % interval != 0;
}

void read_linear_shapes(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string a = c.arch_name + ".ssm.";
  LinearAttentionConfig& s = c.linear;
  s.conv_kernel = required(f, a + "conv_kernel", 64);
  s.head_dim = required(f, a + "state_size", 1u << 12);
  s.n_k_heads = required(f, a + "group_count", 4096);
  s.n_v_heads = required(f, a + "time_step_rank", 4096);
  const int inner = required(f, a + "inner_size", 1u << 20);
  if (s.n_v_heads % s.n_k_heads != 0)
    fail(f, a + "time_step_rank = " + std::to_string(s.n_v_heads) +
                " (value heads) is not a multiple of " + a +
                "group_count = " + std::to_string(s.n_k_heads) + " (key heads)");
  // llama.cpp's loader sizes value heads by state_size, its graph by inner_size / heads.
  if (inner != s.value_dim())
    fail(f, a + "inner_size = " + std::to_string(inner) + ", expected state_size * " +
                "time_step_rank = " + std::to_string(s.value_dim()));
}

// Qwen 3.5 rotates with interleaved multi-section RoPE (IMROPE): pair i of
// the rope_dim/2 rotated pairs takes the position of section (i mod sum) % 3
// (temporal, height, width) while that section has pairs left, else the
// fourth ("extra") position. Text gives the first three sections the same
// position, which makes it plain NeoX RoPE over rope_dim dimensions; a
// layout that sends a pair to the fourth position is refused.
void read_rope_sections(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string key = c.arch_name + ".rope.dimension_sections";
  const gguf::Value* v = f.find(key);
  if (!v) fail(f, "missing required key '" + key + "'");
  if (!v->is_array()) fail(f, key + " must be an array of up to 4 integers");
  const auto& items = std::get<gguf::Array>(v->data).items;
  if (items.size() > 4) fail(f, key + " has " + std::to_string(items.size()) + " entries (max 4)");
  int sec[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < items.size(); ++i) {
    const gguf::Value& item = items[i];
    if (!item.is_integer()) fail(f, key + " must hold integers");
    const int64_t n = std::holds_alternative<int64_t>(item.data)
                          ? std::get<int64_t>(item.data)
                          : int64_t(std::min<uint64_t>(std::get<uint64_t>(item.data), 1u << 20));
    if (n < 0 || n > c.head_dim)
      fail(f, key + "[" + std::to_string(i) + "] = " + std::to_string(n) + " is out of range");
    sec[i] = int(n);
  }
  const int total = sec[0] + sec[1] + sec[2] + sec[3];
  if (total <= 0 || total > c.head_dim || sec[0] + sec[1] + sec[2] == 0)
    fail(f, key + " sums to " + std::to_string(total) + ", expected 1.." +
                std::to_string(c.head_dim) + " with a temporal, height or width section");
  for (int i = 0; i < c.rope_dim / 2; ++i) {
    const int s = i % total;
    const bool thw = (s % 3 == 0 && s < 3 * sec[0]) || (s % 3 == 1 && s < 3 * sec[1]) ||
                     (s % 3 == 2 && s < 3 * sec[2]);
    if (!thw)
      fail(f, key + " sends rotated pair " + std::to_string(i) +
                  " to the fourth (extra) position, which text tokens do not have");
  }
}

}  // namespace

void read_hybrid(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  const int n_all = c.n_layer;
  const std::string mtp_key = a + "nextn_predict_layers";
  const uint64_t mtp = f.has(mtp_key) ? f.get_u64(mtp_key) : 0;
  if (mtp >= uint64_t(n_all))
    fail(f, mtp_key + " = " + std::to_string(mtp) +
                ", expected fewer than block_count = " + std::to_string(n_all));
  // The MTP blocks draft tokens for speculative decoding, which kvforge does
  // not do; the main pass never runs them (as llama.cpp's), so they are
  // skipped (ModelWeights lists their tensors as unread on purpose).
  c.n_layer_mtp = int(mtp);
  c.n_layer = n_all - c.n_layer_mtp;
  c.attn_gate = true;
  read_linear_shapes(f, c);
  read_recurrent_layers(f, n_all, c);
  // Qwen3-Next rotates with plain NeoX RoPE (llama.cpp's rope type for it);
  // Qwen 3.5's sections must reduce to it for text.
  c.linear.grouped_heads = c.arch == Architecture::Qwen3Next;
  if (c.arch != Architecture::Qwen3Next) read_rope_sections(f, c);
}

}  // namespace kvforge::config_detail
