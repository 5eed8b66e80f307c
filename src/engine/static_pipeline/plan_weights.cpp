#include "engine/static_pipeline/plan_weights.h"

#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

const LayerWeights& layer_of(const Model& model, WeightRef w, int layer) {
  if (layer < 0 || layer >= model.config().n_layer)
    throw std::invalid_argument(std::string("plan: weight ") + weight_ref_name(w) + " of layer " +
                                std::to_string(layer) + ", model has " +
                                std::to_string(model.config().n_layer) + " layers");
  return model.weights().layers[size_t(layer)];
}

}  // namespace

bool is_matrix_ref(WeightRef w) {
  switch (w) {
    case WeightRef::AttnQ:
    case WeightRef::AttnK:
    case WeightRef::AttnV:
    case WeightRef::AttnOutput:
    case WeightRef::FfnGate:
    case WeightRef::FfnUp:
    case WeightRef::FfnDown:
    case WeightRef::Output:
      return true;
    default:
      return false;
  }
}

bool is_norm_ref(WeightRef w) {
  return w == WeightRef::AttnNorm || w == WeightRef::FfnNorm || w == WeightRef::OutputNorm ||
         w == WeightRef::AttnPostNorm || w == WeightRef::FfnPostNorm;
}

bool is_head_norm_ref(WeightRef w) {
  return w == WeightRef::AttnQNorm || w == WeightRef::AttnKNorm;
}

bool is_bias_ref(WeightRef w) {
  return w == WeightRef::BiasQ || w == WeightRef::BiasK || w == WeightRef::BiasV;
}

bool is_per_layer_ref(WeightRef w) {
  return w != WeightRef::None && w != WeightRef::OutputNorm && w != WeightRef::Output;
}

const char* weight_ref_name(WeightRef w) {
  static const char* const kNames[kWeightRefCount] = {
      "none",        "attn_norm",   "attn_q",         "attn_k",       "attn_v",
      "bias_q",      "bias_k",      "bias_v",         "attn_output",  "ffn_norm",
      "ffn_gate",    "ffn_up",      "ffn_down",       "output_norm",  "output",
      "attn_q_norm", "attn_k_norm", "attn_post_norm", "ffn_post_norm"};
  const int i = int(w);
  return i >= 0 && i < kWeightRefCount ? kNames[i] : "invalid";
}

size_t matmul_scratch_bytes(const PlanMatrix& m, int64_t n_tokens) {
  return m.whole ? matmul_scratch_bytes(*m.whole, n_tokens)
                 : matmul_scratch_bytes(*m.parts, n_tokens);
}

PlanMatrix weight_matrix(const Model& model, WeightRef w, int layer) {
  if (w == WeightRef::Output) return {&model.weights().output, nullptr};
  if (!is_matrix_ref(w))
    throw std::invalid_argument(std::string("plan: ") + weight_ref_name(w) + " is not a matrix");
  const LayerWeights& lw = layer_of(model, w, layer);
  switch (w) {
    case WeightRef::AttnQ:
      return {&lw.attn_q, nullptr};
    case WeightRef::AttnK:
      return {&lw.attn_k, nullptr};
    case WeightRef::AttnV:
      return {&lw.attn_v, nullptr};
    case WeightRef::AttnOutput:
      return {nullptr, &lw.attn_output};
    case WeightRef::FfnGate:
      return {&lw.ffn_gate, nullptr};
    case WeightRef::FfnUp:
      return {&lw.ffn_up, nullptr};
    default:
      return {nullptr, &lw.ffn_down};
  }
}

const std::vector<float>& weight_vector(const Model& model, WeightRef w, int layer) {
  if (w == WeightRef::OutputNorm) return model.weights().output_norm;
  if (!is_norm_ref(w) && !is_head_norm_ref(w) && !is_bias_ref(w))
    throw std::invalid_argument(std::string("plan: ") + weight_ref_name(w) + " is not a vector");
  const LayerWeights& lw = layer_of(model, w, layer);
  switch (w) {
    case WeightRef::AttnNorm:
      return lw.attn_norm;
    case WeightRef::FfnNorm:
      return lw.ffn_norm;
    case WeightRef::BiasQ:
      return lw.bias_q;
    case WeightRef::BiasK:
      return lw.bias_k;
    case WeightRef::AttnQNorm:
      return lw.attn_q_norm;
    case WeightRef::AttnKNorm:
      return lw.attn_k_norm;
    case WeightRef::AttnPostNorm:
      return lw.attn_post_norm;
    case WeightRef::FfnPostNorm:
      return lw.ffn_post_norm;
    default:
      return lw.bias_v;
  }
}

}  // namespace kvforge
