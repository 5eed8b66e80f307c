#include "model/moe_config.h"

#include <string>

#include "model/model_config.h"
#include "model/model_config_parts.h"

namespace kvforge::config_detail {

// llama.cpp's LLAMA_MAX_EXPERTS.
constexpr uint64_t kMaxExperts = 1024;

namespace {

// Gemma 4 (src/models/gemma4.cpp there): a file with experts is the MoE
// variant (26B-A4B), its experts beside the dense FFN (model/gemma4_moe.h);
// expert_count absent or 0 is a dense Gemma 4. llama.cpp sizes the experts
// by expert_feed_forward_length alone (no fallback), and routes as qwen3moe
// whatever expert_gating_func or expert_weights_norm say (both refused as
// unread, model_keys.cpp).
void read_gemma4_moe(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  if (!f.has(a + "expert_count") || f.get_u64(a + "expert_count") == 0) return;
  MoeConfig& m = c.moe;
  m.n_expert = required(f, a + "expert_count", kMaxExperts);
  m.n_expert_used = required(f, a + "expert_used_count", uint64_t(m.n_expert));
  m.n_ff_exp = required(f, a + "expert_feed_forward_length", 1u << 20);
  m.gating = ExpertGating::SoftmaxThenTopK;
  m.norm_topk = true;
  m.weights_scale = 1.0f;
}

}  // namespace

void read_moe(const gguf::GgufFile& f, ModelConfig& c) {
  if (c.arch == Architecture::Gemma4) return read_gemma4_moe(f, c);
  // Dense architectures accept only zero expert counts (model_keys.cpp).
  const bool gpt_oss = c.arch == Architecture::GptOss;
  const bool shared = c.arch == Architecture::Qwen35Moe || c.arch == Architecture::Qwen3Next;
  if (c.arch != Architecture::Qwen3Moe && !gpt_oss && !shared) return;
  const std::string a = c.arch_name + ".";
  MoeConfig& m = c.moe;
  m.n_expert = required(f, a + "expert_count", kMaxExperts);
  m.n_expert_used = required(f, a + "expert_used_count", uint64_t(m.n_expert));
  // llama.cpp's fallback when the file has no expert size: n_ff / n_expert_used
  // (qwen3moe, qwen35moe, qwen3next; gpt-oss requires the key).
  const int fallback = c.n_ff / m.n_expert_used;
  m.n_ff_exp = gpt_oss ? required(f, a + "expert_feed_forward_length", 1u << 20)
                       : optional(f, a + "expert_feed_forward_length", fallback, 1u << 20);
  if (m.n_ff_exp == 0)
    fail(f, a + "expert_feed_forward_length is absent and feed_forward_length / " +
                "expert_used_count is 0");
  // qwen35moe and qwen3next always have the shared expert; its size falls
  // back to feed_forward_length (llama.cpp's loaders).
  if (shared) m.n_ff_shexp = optional(f, a + "expert_shared_feed_forward_length", c.n_ff, 1u << 20);
  // qwen3moe, qwen35moe, qwen3next (src/models/<arch>.cpp): softmax over all experts, top-k,
  // the k weights normalised; gpt-oss (openai-moe.cpp): top-k of the biased
  // router logits, softmax over those k. Neither reads expert_weights_scale
  // (0 = no scaling), so the key is refused for them (model_keys.cpp).
  m.gating = gpt_oss ? ExpertGating::TopKThenSoftmax : ExpertGating::SoftmaxThenTopK;
  m.norm_topk = !gpt_oss;
  m.weights_scale = 1.0f;
}

}  // namespace kvforge::config_detail
