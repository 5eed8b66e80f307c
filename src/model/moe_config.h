// Mixture-of-experts hyperparameters (`<arch>.expert_*` keys), read as
// llama.cpp reads them for each architecture (src/models/<arch>.cpp and
// llm_graph_context::build_moe_ffn). A model with n_expert = 0 is dense.
//
// The router scores every expert, `n_expert_used` of them run per token and
// their outputs are summed with the routing weights:
//   SoftmaxThenTopK (qwen3moe, gemma4): p = softmax(router logits over all
//                   experts), the k largest p picked, their p the weights;
//   TopKThenSoftmax (gpt-oss):  the k largest logits picked, the weights
//                   softmax over those k logits only.
// Then, where norm_topk (all but gpt-oss): weights /= max(sum of the k
// weights, 2^-14) (the smallest normal f16, llama.cpp's clamp), then
// weights *= weights_scale.
//
// A shared expert (qwen35moe, qwen3next: ffn_{gate,up,down}_shexp) runs on
// every token beside the routed ones, a SwiGLU FFN of n_ff_shexp rows whose
// output is scaled by sigmoid(ffn_gate_inp_shexp · x) (one logit per token)
// and added to the routed sum (llama.cpp's qwen35moe.cpp / qwen3next.cpp).
#pragma once

#include "core/gguf/gguf_file.h"

namespace kvforge {

enum class ExpertGating { SoftmaxThenTopK, TopKThenSoftmax };

struct MoeConfig {
  int n_expert = 0;       // experts per layer (0: dense FFN)
  int n_expert_used = 0;  // experts each token runs
  int n_ff_exp = 0;       // FFN rows of one expert
  ExpertGating gating = ExpertGating::SoftmaxThenTopK;
  bool norm_topk = false;      // the k weights divided by their sum
  float weights_scale = 1.0f;  // the weights multiplied by it after that
  int n_ff_shexp = 0;          // FFN rows of the shared expert (0: none)
};

struct ModelConfig;

namespace config_detail {
// c.moe from the file's keys for c's architecture (needs the shapes read
// first); throws naming the key for a value llama.cpp would refuse.
void read_moe(const gguf::GgufFile& f, ModelConfig& c);
}  // namespace config_detail

}  // namespace kvforge
