#include "app/bench/bench_cost.h"

#include <vector>

#include "core/formats/row_codec.h"

namespace kvforge::cli {
namespace {

double view_bytes(const WeightView& v) {
  return v.rows == 0 ? 0.0 : double(row_bytes(v.type, size_t(v.cols))) * double(v.rows);
}

// The weights one token reads: bytes, and matrix parameters (2 FLOPs each).
struct ActiveWeights {
  double bytes = 0, params = 0;
  void add(const WeightView& v, double share = 1.0) {
    bytes += share * view_bytes(v);
    params += share * double(v.rows) * double(v.cols);
  }
  void add_f32(size_t n, double share = 1.0) { bytes += share * 4.0 * double(n); }
};

// A mixture of experts' layer as one token reads it: the router, k of its n
// experts (every expert's slabs are the same size, so which k does not
// matter) with their biases, and the shared expert.
void add_moe(ActiveWeights& a, const MoeWeights& m, const MoeConfig& c) {
  if (c.n_expert == 0) return;
  const double k = c.n_expert_used;
  a.add(m.router);
  a.add_f32(m.router_bias.size());
  for (const std::vector<WeightView>* slabs : {&m.gate, &m.up, &m.down})
    if (!slabs->empty()) a.add(slabs->front(), k);
  const double share = k / c.n_expert;
  a.add_f32(m.gate_bias.size() + m.up_bias.size() + m.down_bias.size(), share);
  for (const WeightView* v : {&m.shared_gate_inp, &m.shared_gate, &m.shared_up, &m.shared_down})
    a.add(*v);
}

// Gemma 4's per-layer embeddings as one token reads them (nothing without
// them): its row of per_layer_token_embd, the whole per_layer_model_proj
// and its norm, each layer's inp_gate, proj and post_norm; and each layer's
// output scale.
void add_gemma4(ActiveWeights& a, const ModelConfig& c, const ModelWeights& w) {
  if (c.arch != Architecture::Gemma4) return;
  if (w.ple_token_embd.rows > 0)
    a.bytes += double(row_bytes(w.ple_token_embd.type, size_t(w.ple_token_embd.cols)));
  a.add(w.ple_model_proj);
  a.add_f32(w.ple_proj_norm.size());
  for (const LayerWeights& l : w.layers) {
    a.add(l.ple_gate);
    a.add(l.ple_proj);
    a.add_f32(l.ple_post_norm.size() + 1);  // + layer_output_scale
  }
}

}  // namespace

CostModel::CostModel(const Model& model, KvFormat kv) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  ActiveWeights layers;
  for (const LayerWeights& l : w.layers) {
    for (const WeightView* v : {&l.attn_q, &l.attn_k, &l.attn_v, &l.ffn_gate, &l.ffn_up})
      layers.add(*v);
    for (const ColumnParts* parts : {&l.attn_output, &l.ffn_down})
      for (const WeightView& v : parts->parts) layers.add(v);
    add_moe(layers, l.moe, c.moe);
    for (const std::vector<float>* v :
         {&l.attn_norm, &l.ffn_norm, &l.bias_q, &l.bias_k, &l.bias_v, &l.attn_q_norm,
          &l.attn_k_norm, &l.bias_o, &l.attn_sinks, &l.attn_post_norm, &l.ffn_post_norm})
      layers.add_f32(v->size());
  }
  add_gemma4(layers, c, w);
  weight_bytes_per_token = layers.bytes + view_bytes(w.output) + 4.0 * double(w.output_norm.size());
  weight_bytes_per_token += double(row_bytes(w.token_embd.type, size_t(w.token_embd.cols)));
  matmul_flops_per_token = 2.0 * layers.params;
  output_flops = 2.0 * double(w.output.rows) * double(w.output.cols);
  kv_bytes_per_position = attention_flops_per_key = 0;
  for (int l = 0; l < c.n_layer; ++l) {
    const int hd = c.layer_head_dim(l);
    kv_bytes_per_position +=
        double(c.layer_n_kv_head(l)) * double(kv_head_bytes(kv.k, hd) + kv_head_bytes(kv.v, hd));
    attention_flops_per_key += 4.0 * double(c.n_head) * hd;
  }
}

}  // namespace kvforge::cli
