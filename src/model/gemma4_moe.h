// Gemma 4's mixture-of-experts FFN (26B-A4B; llama.cpp's src/models/gemma4.cpp):
// a dense GeGLU FFN and the experts run side by side on the layer's residual
// stream x after attention, each with its own norms, and proj is their sum,
// which the layer's post_ffw_norm then norms (the walk's residual step):
//   dense  = post_ffw_norm_1(ffn_down(gelu(ffn_gate xn) * ffn_up xn)),  xn = ffn_norm(x)
//   logits = ffn_gate_inp · (rms_norm(x) / sqrt(n_embd) * ffn_gate_inp.scale)
//   moe    = post_ffw_norm_2(sum_j w_j · s_{e_j} · down_{e_j}(gelu(gate_{e_j} u) * up_{e_j} u)),
//            u = pre_ffw_norm_2(x); softmax over all experts, the top k, the k
//            weights w_j normalised (model/moe_config.h); s_e: ffn_down_exps.scale
//   proj   = dense + moe
// The experts run through moe_ffn (model/moe_ffn.h): grouped by expert, only
// the picked experts' slabs read, each token's sums the same bits whatever
// its neighbours. On several ranks the dense FFN sums its column parts and
// the experts split by rows (model/moe_tensor_parallel.h), each as for the
// other architectures, so proj is the same bits at any rank count.
#pragma once

#include <cstdint>

#include "model/block_steps.h"
#include "model/moe_ffn.h"

namespace kvforge {

// proj [rows][n_embd] = the FFN above of layer `layer`, from x (the
// residual stream) and xn = ffn_norm(x), both [rows][n_embd]. gate, up:
// the dense FFN's scratch rows [rows][n_ff]; s: the experts' scratch.
// valid [rows] (nullptr: every row): the rows the experts run on; another
// row (a static plan's padding) gets the dense FFN only and reads no expert.
// Returns the rows the experts ran on.
int64_t gemma4_moe_ffn(const StepEnv& env, int layer, const float* x, const float* xn, int64_t rows,
                       float* gate, float* up, MoeScratch& s, float* proj,
                       const uint8_t* valid = nullptr);

}  // namespace kvforge
