// gpt-oss's hyperparameters beyond the shared ones, as llama.cpp's openai-moe
// (src/models/openai-moe.cpp) reads and computes them: the sliding window is
// required (every even layer has it, as the default pattern 2 says), each
// query head has a learned sink logit, the attention output projection has a
// bias, and the experts' activation is the clamped SwiGLU. Its routing is in
// model/moe_config.cpp, its windowed layers' RoPE in model_rope_config.cpp.
#include <string>

#include "model/model_config_parts.h"

namespace kvforge::config_detail {

void read_gpt_oss(const gguf::GgufFile& f, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  if (!f.has(a + "attention.sliding_window"))
    fail(f, "missing required key '" + a + "attention.sliding_window'");
  // llama.cpp scales the scores by 1/sqrt(n_rot) and shapes Q/K/V by n_rot:
  // the same as the head size only when whole heads rotate.
  if (c.rope_dim != c.head_dim)
    fail(f, a + "rope.dimension_count = " + std::to_string(c.rope_dim) +
                " differs from the head dimension " + std::to_string(c.head_dim) +
                " (gpt-oss rotates whole heads)");
  c.attn_sinks = true;
  c.attn_output_bias = true;
  c.ffn_act = FfnActivation::SwigluOai;
}

}  // namespace kvforge::config_detail
