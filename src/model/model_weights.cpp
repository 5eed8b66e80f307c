#include "model/model_weights.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "core/formats/row_codec.h"
#include "core/kernels/weight_repack.h"
#include "model/linear_attention_tp.h"
#include "model/model_config_parts.h"
#include "model/moe_tensor_parallel.h"

namespace kvforge {
namespace {

std::string shape_str(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Loads tensors by name and remembers which ones it handed out, so that
// check_all_used() can refuse the tensors nothing reads.
class TensorLoader {
 public:
  // Blocks from `skipped_blocks` on are multi-token-prediction blocks
  // (ModelConfig::n_layer_mtp), whose tensors are left unread on purpose.
  TensorLoader(const gguf::GgufFile& f, int skipped_blocks)
      : f_(f), skipped_blocks_(skipped_blocks) {}

  bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

  const gguf::TensorInfo& find(const std::string& name, std::vector<uint64_t> expected) {
    const gguf::TensorInfo* t = f_.find_tensor(name);
    if (!t) fail(name, "is missing");
    if (t->dims != expected)
      fail(name, "has shape " + shape_str(t->dims) + ", expected " + shape_str(expected));
    if (!is_supported_weight_type(t->type))
      fail(name, "has type " + std::string(type_name(t->type)) +
                     ", which kvforge cannot compute with (supported: " +
                     supported_weight_type_names() + ")");
    used_.insert(name);
    return *t;
  }

  // A matrix with ne0 = cols (contiguous), ne1 = rows.
  WeightView matrix(const std::string& name, int64_t rows, int64_t cols) {
    const gguf::TensorInfo& t = find(name, {uint64_t(cols), uint64_t(rows)});
    return WeightView{t.type, f_.tensor_data(t).data(), rows, cols};
  }

  // A 1-D tensor of `cols` values as a one-row matrix (ffn_gate_inp_shexp).
  WeightView row(const std::string& name, int64_t cols) {
    const gguf::TensorInfo& t = find(name, {uint64_t(cols)});
    return WeightView{t.type, f_.tensor_data(t).data(), 1, cols};
  }

  // A 3-D tensor of n [rows][cols] matrices (ne = [cols, rows, n]), one view per matrix.
  std::vector<WeightView> slabs(const std::string& name, int64_t n, int64_t rows, int64_t cols) {
    const gguf::TensorInfo& t = find(name, {uint64_t(cols), uint64_t(rows), uint64_t(n)});
    return expert_slabs(t.type, f_.tensor_data(t).data(), n, rows, cols);
  }

  // A vector copied to f32 (norm weights, biases and RoPE factors are small).
  std::vector<float> vector(const std::string& name, int64_t n) {
    const gguf::TensorInfo& t = find(name, {uint64_t(n)});
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(t.type, f_.tensor_data(t).data(), out.data(), n);
    return out;
  }
  // A [rows][cols] table copied to f32 (ne = [cols, rows]: the experts' biases).
  std::vector<float> table(const std::string& name, int64_t rows, int64_t cols) {
    const gguf::TensorInfo& t = find(name, {uint64_t(cols), uint64_t(rows)});
    std::vector<float> out(size_t(rows * cols));
    const size_t rb = row_bytes(t.type, size_t(cols));
    for (int64_t r = 0; r < rows; ++r)
      dequantize_row(t.type, f_.tensor_data(t).data() + size_t(r) * rb, out.data() + r * cols,
                     cols);
    return out;
  }
  std::vector<float> vector_if_present(const std::string& name, int64_t n) {
    return has(name) ? vector(name, n) : std::vector<float>{};
  }
  // RoPE frequency factors divide each pair's frequency: a NaN, an infinity,
  // zero or a negative factor makes every logit NaN (or turns the rotation
  // around), so each must be finite and > 0. Empty when the tensor is absent.
  std::vector<float> rope_factors_if_present(const std::string& name, int64_t n) {
    std::vector<float> v = vector_if_present(name, n);
    for (size_t i = 0; i < v.size(); ++i)
      if (!(std::isfinite(v[i]) && v[i] > 0.0f))
        fail(name, "entry " + std::to_string(i) + " = " + config_detail::float_str(v[i]) +
                       ", expected a finite factor > 0");
    return v;
  }

  [[noreturn]] void refuse(const std::string& name, const std::string& what) const {
    fail(name, what);
  }

  // Every tensor of the file was read, or is known not to change the output.
  void check_all_used() const {
    for (const gguf::TensorInfo& t : f_.tensors())
      if (!used_.contains(t.name) && !known_inert(t.name))
        fail(t.name, "is not used by kvforge's " + f_.get_string("general.architecture") +
                         " model: it would change the output, so the file is refused");
  }

 private:
  // Tensors that hold nothing the computation needs: attn_rot_embd is the
  // RoPE inverse-frequency buffer some old converters saved, which is
  // recomputed from rope.freq_base; the multi-token-prediction blocks draft
  // tokens for speculative decoding, which the main pass never runs.
  bool known_inert(const std::string& name) const {
    if (!name.starts_with("blk.")) return false;
    if (name.ends_with(".attn_rot_embd")) return true;
    return std::atoi(name.c_str() + 4) >= skipped_blocks_;
  }
  [[noreturn]] void fail(const std::string& name, const std::string& what) const {
    throw std::runtime_error(f_.name() + ": tensor '" + name + "' " + what);
  }
  const gguf::GgufFile& f_;
  int skipped_blocks_;
  std::unordered_set<std::string> used_;
};

void split(const std::vector<float>& v, std::vector<float>& a, size_t n_a, std::vector<float>& b,
           size_t n_b, std::vector<float>& c) {
  a.assign(v.begin(), v.begin() + long(n_a));
  b.assign(v.begin() + long(n_a), v.begin() + long(n_a + n_b));
  c.assign(v.begin() + long(n_a + n_b), v.end());
}

void load_attention(TensorLoader& load, const std::string& p, const ModelConfig& c, LayerWeights& l,
                    WeightView& attn_output) {
  if (load.has(p + "attn_qkv.weight")) {
    const WeightView qkv = load.matrix(p + "attn_qkv.weight", c.q_dim() + 2 * c.kv_dim(), c.n_embd);
    l.attn_q = row_range(qkv, 0, c.q_dim());
    l.attn_k = row_range(qkv, c.q_dim(), c.kv_dim());
    l.attn_v = row_range(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    if (load.has(p + "attn_qkv.bias"))
      split(load.vector(p + "attn_qkv.bias", c.q_dim() + 2 * c.kv_dim()), l.bias_q,
            size_t(c.q_dim()), l.bias_k, size_t(c.kv_dim()), l.bias_v);
  } else {
    l.attn_q = load.matrix(p + "attn_q.weight", (c.attn_gate ? 2 : 1) * c.q_dim(), c.n_embd);
    l.attn_k = load.matrix(p + "attn_k.weight", c.kv_dim(), c.n_embd);
    l.attn_v = load.matrix(p + "attn_v.weight", c.kv_dim(), c.n_embd);
  }
  // Separate Q/K/V biases: required by qwen2, optional elsewhere (as llama.cpp loads them).
  if (c.qkv_bias || load.has(p + "attn_q.bias")) {
    l.bias_q = load.vector(p + "attn_q.bias", c.q_dim());
    l.bias_k = load.vector(p + "attn_k.bias", c.kv_dim());
    l.bias_v = load.vector(p + "attn_v.bias", c.kv_dim());
  }
  if (c.qk_norm) {
    l.attn_q_norm = load.vector(p + "attn_q_norm.weight", c.head_dim);
    l.attn_k_norm = load.vector(p + "attn_k_norm.weight", c.head_dim);
  }
  attn_output = load.matrix(p + "attn_output.weight", c.n_embd, c.q_dim());
  if (c.attn_output_bias) l.bias_o = load.vector(p + "attn_output.bias", c.n_embd);
  if (c.attn_sinks) l.attn_sinks = load.vector(p + "attn_sinks.weight", c.n_head);
  if (c.post_norms) l.attn_post_norm = load.vector(p + "post_attention_norm.weight", c.n_embd);
}

// Gemma 4's attention (`c`: the layer's shape, ModelConfig::layer_shape):
// Q with its norm; K (and V, else V = K before the norms, as llama.cpp)
// with K's norm where the layer keeps K/V. A shared
// layer's K/V weights, where a file has them, are read and left unused:
// that layer attends over its source layer's K/V (ModelConfig::kv_source).
void load_gemma4_attention(TensorLoader& load, const std::string& p, const ModelConfig& c,
                           bool owns_kv, LayerWeights& l, WeightView& attn_output) {
  l.attn_q = load.matrix(p + "attn_q.weight", c.q_dim(), c.n_embd);
  l.attn_q_norm = load.vector(p + "attn_q_norm.weight", c.head_dim);
  if (owns_kv || load.has(p + "attn_k.weight")) {
    l.attn_k = load.matrix(p + "attn_k.weight", c.kv_dim(), c.n_embd);
    l.attn_k_norm = load.vector(p + "attn_k_norm.weight", c.head_dim);
    l.attn_v = load.has(p + "attn_v.weight")
                   ? load.matrix(p + "attn_v.weight", c.kv_dim(), c.n_embd)
                   : l.attn_k;
  }
  if (owns_kv) {
    l.attn_v_norm.assign(size_t(c.head_dim), 1.0f);
  } else {
    l.attn_k = l.attn_v = WeightView{};
    l.attn_k_norm.clear();
  }
  attn_output = load.matrix(p + "attn_output.weight", c.n_embd, c.q_dim());
  l.attn_post_norm = load.vector(p + "post_attention_norm.weight", c.n_embd);
  if (load.has(p + "layer_output_scale.weight"))
    l.out_scale = load.vector(p + "layer_output_scale.weight", 1)[0];
  if (c.n_embd_per_layer == 0) return;
  l.ple_gate = load.matrix(p + "inp_gate.weight", c.n_embd_per_layer, c.n_embd);
  l.ple_proj = load.matrix(p + "proj.weight", c.n_embd, c.n_embd_per_layer);
  l.ple_post_norm = load.vector(p + "post_norm.weight", c.n_embd);
}

// Gemma 4's model-wide per-layer embedding tensors and the full layers'
// rope_freqs (which its windowed layers do not apply: Model's RoPE tables).
void load_gemma4_globals(TensorLoader& load, const ModelConfig& c, ModelWeights& w) {
  w.rope_freqs = load.rope_factors_if_present("rope_freqs.weight", c.rope_dim / 2);
  if (c.n_embd_per_layer == 0) return;
  const int64_t all = int64_t(c.n_layer) * c.n_embd_per_layer;
  w.ple_token_embd = load.matrix("per_layer_token_embd.weight", c.n_vocab, all);
  w.ple_model_proj = load.matrix("per_layer_model_proj.weight", all, c.n_embd);
  w.ple_proj_norm = load.vector("per_layer_proj_norm.weight", c.n_embd_per_layer);
  // Each layer's P values are dequantized on their own (model/per_layer_embedding.cpp).
  const auto traits = type_traits(uint32_t(w.ple_token_embd.type));
  if (!traits || c.n_embd_per_layer % int(traits->block_elems) != 0)
    load.refuse("per_layer_token_embd.weight",
                "has blocks of " + std::to_string(traits ? traits->block_elems : 0) +
                    " values, which do not divide embedding_length_per_layer_input = " +
                    std::to_string(c.n_embd_per_layer));
}

// The router and the experts' slabs (model/moe_weights.h).
void load_moe(TensorLoader& load, const std::string& p, const ModelConfig& c, MoeWeights& m) {
  const int64_t n = c.moe.n_expert, ff = c.moe.n_ff_exp;
  m.router = load.matrix(p + "ffn_gate_inp.weight", n, c.n_embd);
  if (load.has(p + "ffn_gate_up_exps.weight")) {
    // Gate and up in one tensor: each expert's 2·ff rows, its gate rows first.
    for (const WeightView& slab : load.slabs(p + "ffn_gate_up_exps.weight", n, 2 * ff, c.n_embd)) {
      m.gate.push_back(row_range(slab, 0, ff));
      m.up.push_back(row_range(slab, ff, ff));
    }
  } else {
    m.gate = load.slabs(p + "ffn_gate_exps.weight", n, ff, c.n_embd);
    m.up = load.slabs(p + "ffn_up_exps.weight", n, ff, c.n_embd);
  }
  m.down = load.slabs(p + "ffn_down_exps.weight", n, c.n_embd, ff);
  if (const int64_t sff = c.moe.n_ff_shexp; sff > 0) {
    m.shared_gate_inp = load.row(p + "ffn_gate_inp_shexp.weight", c.n_embd);
    m.shared_gate = load.matrix(p + "ffn_gate_shexp.weight", sff, c.n_embd);
    m.shared_up = load.matrix(p + "ffn_up_shexp.weight", sff, c.n_embd);
    m.shared_down = load.matrix(p + "ffn_down_shexp.weight", c.n_embd, sff);
  }
  // Each expert's output scale, as llama.cpp applies it but for gpt-oss (whose
  // loader leaves the tensor unread: refused there as unused). The gate and
  // up experts' scales are not read (refused as unused).
  if (c.arch != Architecture::GptOss && load.has(p + "ffn_down_exps.scale"))
    m.down_scale = load.vector(p + "ffn_down_exps.scale", n);
  if (c.arch != Architecture::GptOss) return;
  m.router_bias = load.vector(p + "ffn_gate_inp.bias", n);
  m.gate_bias = load.table(p + "ffn_gate_exps.bias", n, ff);
  m.up_bias = load.table(p + "ffn_up_exps.bias", n, ff);
  m.down_bias = load.table(p + "ffn_down_exps.bias", n, c.n_embd);
}

// Gemma 4's MoE layer (model/gemma4_moe.h): the experts, their branch's
// norms and the router's input scale; the dense FFN is load_ffn's.
void load_gemma4_moe(TensorLoader& load, const std::string& p, const ModelConfig& c,
                     MoeWeights& m) {
  load_moe(load, p, c, m);
  m.router_in_scale = load.vector(p + "ffn_gate_inp.scale", c.n_embd);
  const float inv_sqrt = 1.0f / std::sqrt(float(c.n_embd));  // llama.cpp's 1/sqrt(n_embd)
  for (float& v : m.router_in_scale) v *= inv_sqrt;
  m.pre_norm = load.vector(p + "pre_ffw_norm_2.weight", c.n_embd);
  m.post_norm = load.vector(p + "post_ffw_norm_2.weight", c.n_embd);
  m.dense_post_norm = load.vector(p + "post_ffw_norm_1.weight", c.n_embd);
}

// c: the layer's shape (ModelConfig::layer_shape), n_ff its FFN rows.
void load_ffn(TensorLoader& load, const std::string& p, const ModelConfig& c, LayerWeights& l,
              WeightView& ffn_down) {
  // qwen35 and gpt-oss name the FFN's input norm post_attention_norm (it
  // follows the attention residual).
  const bool post_attention = c.hybrid() || c.arch == Architecture::GptOss;
  l.ffn_norm = load.vector(p + (post_attention ? "post_attention_norm.weight" : "ffn_norm.weight"),
                           c.n_embd);
  // Gemma 4's MoE variant runs its experts beside the dense FFN.
  if (c.experts_beside_ffn())
    load_gemma4_moe(load, p, c, l.moe);
  else if (c.moe.n_expert > 0)
    return load_moe(load, p, c, l.moe);
  if (c.arch == Architecture::Phi3) {  // ffn_up holds gate rows, then up rows
    const WeightView gate_up = load.matrix(p + "ffn_up.weight", 2 * int64_t(c.n_ff), c.n_embd);
    l.ffn_gate = row_range(gate_up, 0, c.n_ff);
    l.ffn_up = row_range(gate_up, c.n_ff, c.n_ff);
  } else {
    l.ffn_gate = load.matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd);
    l.ffn_up = load.matrix(p + "ffn_up.weight", c.n_ff, c.n_embd);
  }
  ffn_down = load.matrix(p + "ffn_down.weight", c.n_embd, c.n_ff);
  if (c.post_norms) l.ffn_post_norm = load.vector(p + "post_ffw_norm.weight", c.n_embd);
}

void load_linear_attention(TensorLoader& load, const std::string& p, const ModelConfig& c,
                           LinearAttentionWeights& l) {
  const LinearAttentionConfig& s = c.linear;
  // Older qwen3next files fuse q|k|v|z per key head into ssm_in (llama.cpp's
  // "legacy" path); current converters write attn_qkv and attn_gate.
  if (load.has(p + "ssm_in.weight"))
    load.refuse(p + "ssm_in.weight", "(the fused q|k|v|z projection of older " + c.arch_name +
                                         " conversions) is not supported; convert the model "
                                         "again (attn_qkv and attn_gate)");
  l.qkv = load.matrix(p + "attn_qkv.weight", s.conv_channels(), c.n_embd);
  l.gate = load.matrix(p + "attn_gate.weight", s.value_dim(), c.n_embd);
  if (s.grouped_heads) {
    l.beta_alpha = load.matrix(p + "ssm_ba.weight", 2 * int64_t(s.n_v_heads), c.n_embd);
  } else {
    l.beta = load.matrix(p + "ssm_beta.weight", s.n_v_heads, c.n_embd);
    l.alpha = load.matrix(p + "ssm_alpha.weight", s.n_v_heads, c.n_embd);
  }
  const WeightView conv = load.matrix(p + "ssm_conv1d.weight", s.conv_channels(), s.conv_kernel);
  l.conv.resize(size_t(s.conv_channels()) * size_t(s.conv_kernel));
  const size_t rb = row_bytes(conv.type, size_t(s.conv_kernel));
  for (int64_t r = 0; r < conv.rows; ++r)
    dequantize_row(conv.type, static_cast<const uint8_t*>(conv.data) + size_t(r) * rb,
                   l.conv.data() + r * s.conv_kernel, s.conv_kernel);
  l.dt_bias = load.vector(p + "ssm_dt.bias", s.n_v_heads);
  l.a = load.vector(p + "ssm_a", s.n_v_heads);
  l.norm = load.vector(p + "ssm_norm.weight", s.head_dim);
  l.out = load.matrix(p + "ssm_out.weight", c.n_embd, s.value_dim());
}

// Llama 3's rope_freqs (llama), LongRoPE's factor pairs (phi3, or llama with
// rope.scaling.type = longrope), as llama.cpp's loaders accept them.
void load_rope_factors(TensorLoader& load, const ModelConfig& c, ModelWeights& w) {
  const int64_t n = c.rope_dim / 2;
  const bool longrope = c.arch == Architecture::Phi3 || c.rope_scaling == RopeScaling::LongRope;
  if (longrope) {
    w.rope_factors_long = load.rope_factors_if_present("rope_factors_long.weight", n);
    w.rope_factors_short = load.rope_factors_if_present("rope_factors_short.weight", n);
  } else if (c.arch == Architecture::Llama) {
    w.rope_freqs = load.rope_factors_if_present("rope_freqs.weight", n);
  }
}

std::vector<float> sub(const std::vector<float>& v, int64_t first, int64_t n) {
  if (v.empty()) return v;
  return std::vector<float>(v.begin() + first, v.begin() + first + n);
}

// Keeps the rows of this rank's heads and FFN rows (all of them on one
// process): attention heads with their biases and sinks, dense FFN rows or
// each expert's share (model/moe_tensor_parallel.h).
void keep_rank_rows(LayerWeights& l, int layer, const ModelConfig& c, const TensorSplit& s) {
  if (l.ffn_gate.data) {  // a dense FFN of c.n_ff rows (the layer's)
    const int64_t ff = c.n_ff / s.n_ranks;
    l.ffn_gate = row_range(l.ffn_gate, s.rank * ff, ff);
    l.ffn_up = row_range(l.ffn_up, s.rank * ff, ff);
  }
  keep_rank_experts(l.moe, c, s);
  keep_rank_linear(l.linear, c, s);
  const int64_t hd = c.head_dim, qhd = hd * (c.attn_gate ? 2 : 1);  // qhd: attn_q rows per head
  if (l.attn_q.data == nullptr) return;                             // a recurrent layer
  const int64_t q0 = s.first_head() * qhd, nq = s.n_head * qhd;
  const int64_t kv0 = s.layer_first_kv_head(layer) * hd, nkv = s.layer_n_kv_head(layer) * hd;
  l.attn_q = row_range(l.attn_q, q0, nq);
  if (l.attn_k.data) {  // none in a layer reading another layer's K/V (gemma4)
    l.attn_k = row_range(l.attn_k, kv0, nkv);
    l.attn_v = row_range(l.attn_v, kv0, nkv);
  }
  l.bias_q = sub(l.bias_q, s.first_head() * hd, s.n_head * hd);
  l.bias_k = sub(l.bias_k, kv0, nkv);
  l.bias_v = sub(l.bias_v, kv0, nkv);
  l.attn_sinks = sub(l.attn_sinks, s.first_head(), s.n_head);
}

size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

// Bytes the parts [first, first + n) of `n_parts` of `whole` take as copies.
size_t parts_bytes(const WeightView& whole, int n_parts, int n) {
  return size_t(n) *
         align64(row_bytes(whole.type, size_t(whole.cols / n_parts)) * size_t(whole.rows));
}

// Copies column parts [first, first + n) of `n_parts` of `whole` to `at`
// (each part [rows][cols / n_parts] in the file's row format) and returns them.
ColumnParts copy_parts(const WeightView& whole, int n_parts, int first, int n, uint8_t*& at) {
  const int64_t pc = whole.cols / n_parts;
  const size_t src_rb = row_bytes(whole.type, size_t(whole.cols));
  const size_t part_rb = row_bytes(whole.type, size_t(pc));
  ColumnParts out{whole.type, whole.rows, pc * n, {}};
  for (int p = first; p < first + n; ++p) {
    const auto* src =
        static_cast<const uint8_t*>(whole.data) + row_bytes(whole.type, size_t(p * pc));
    for (int64_t r = 0; r < whole.rows; ++r)
      std::memcpy(at + size_t(r) * part_rb, src + size_t(r) * src_rb, part_rb);
    out.parts.push_back(WeightView{whole.type, at, whole.rows, pc});
    at += align64(part_rb * size_t(whole.rows));
  }
  return out;
}

// Copies this rank's column parts of every layer's attn_output and ffn_down
// into w.column_copies and releases the file's pages of the whole matrices.
void copy_rank_columns(ModelWeights& w, const std::vector<WeightView>& attn_output,
                       const std::vector<WeightView>& ffn_down, const gguf::GgufFile& file) {
  const TensorSplit& s = w.split;
  const int attn_n = s.attn_parts / s.n_ranks, ffn_n = s.ffn_parts / s.n_ranks;
  size_t total = 0;
  for (size_t i = 0; i < w.layers.size(); ++i)
    total += parts_bytes(attn_output[i], s.attn_parts, attn_n) +
             parts_bytes(ffn_down[i], s.ffn_parts, ffn_n);
  w.column_copies = HugePageBuffer(total);
  uint8_t* at = w.column_copies.data();
  for (size_t i = 0; i < w.layers.size(); ++i) {
    if (attn_output[i].data)  // a recurrent layer has none
      w.layers[i].attn_output =
          copy_parts(attn_output[i], s.attn_parts, s.rank * attn_n, attn_n, at);
    w.layers[i].ffn_down = copy_parts(ffn_down[i], s.ffn_parts, s.rank * ffn_n, ffn_n, at);
    for (const WeightView* m : {&attn_output[i], &ffn_down[i]})
      if (m->data)  // no ffn_down in a mixture of experts, no attn_output in a recurrent layer
        file.release_pages(std::span(static_cast<const uint8_t*>(m->data),
                                     row_bytes(m->type, size_t(m->cols)) * size_t(m->rows)));
  }
}

}  // namespace

ModelWeights ModelWeights::from_gguf(const gguf::GgufFile& file, const ModelConfig& c, int rank,
                                     int n_ranks) {
  TensorLoader load(file, c.n_layer);
  ModelWeights w;
  w.token_embd = load.matrix("token_embd.weight", c.n_vocab, c.n_embd);
  w.output_norm = load.vector("output_norm.weight", c.n_embd);
  const WeightView output =
      c.tied_output ? w.token_embd : load.matrix("output.weight", c.n_vocab, c.n_embd);
  if (c.arch == Architecture::Gemma4)
    load_gemma4_globals(load, c, w);
  else
    load_rope_factors(load, c, w);
  w.layers.resize(size_t(c.n_layer));
  std::vector<WeightView> attn_output(w.layers.size()), ffn_down(w.layers.size());
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[size_t(i)];
    l.attn_norm = load.vector(p + "attn_norm.weight", c.n_embd);
    if (c.arch == Architecture::Gemma4)
      load_gemma4_attention(load, p, c.layer_shape(i), c.owns_kv(i), l, attn_output[size_t(i)]);
    else if (c.recurrent(i))
      load_linear_attention(load, p, c, l.linear);
    else
      load_attention(load, p, c, l, attn_output[size_t(i)]);
    load_ffn(load, p, c.n_ff_layers.empty() ? c : c.layer_shape(i), l, ffn_down[size_t(i)]);
  }
  load.check_all_used();

  std::vector<GgmlType> attn_types, ffn_types;
  for (size_t i = 0; i < w.layers.size(); ++i) {
    attn_types.push_back(attn_output[i].type);
    ffn_types.push_back(ffn_down[i].type);
  }
  w.split = TensorSplit::of(c, attn_types, ffn_types, rank, n_ranks);
  const bool per_layer = c.per_layer_heads() || !c.n_ff_layers.empty();
  for (int i = 0; i < c.n_layer; ++i)  // each layer's own head size and FFN rows (layer_shape)
    keep_rank_rows(w.layers[size_t(i)], i, per_layer ? c.layer_shape(i) : c, w.split);
  w.output = row_range(output, w.split.vocab_first[size_t(rank)], w.split.vocab_rows[size_t(rank)]);
  copy_rank_columns(w, attn_output, ffn_down, file);
  return w;
}

namespace {

// The matrices regroup_for_kernels copies, each with the rows of the whole
// matrix it is this rank's share of; a share that cannot take a layout
// computing the native bits stays native and is not listed.
std::vector<std::pair<WeightView*, int64_t>> regroupable(ModelWeights& w) {
  const int64_t n = w.split.n_ranks;
  const TensorSplit& split = w.split;
  std::vector<std::pair<WeightView*, int64_t>> matrices;
  for (size_t i = 0; i < w.layers.size(); ++i) {
    LayerWeights& l = w.layers[i];
    for (WeightView* v : {&l.attn_q, &l.ffn_gate, &l.ffn_up}) matrices.emplace_back(v, v->rows * n);
    // Each expert's share is 1/n of its rows (the router is whole).
    for (WeightView* v : {&l.moe.shared_gate, &l.moe.shared_up, &l.moe.shared_down})
      matrices.emplace_back(v, v->rows * n);
    for (std::vector<WeightView>* slabs : {&l.moe.gate, &l.moe.up, &l.moe.down})
      for (WeightView& v : *slabs) matrices.emplace_back(&v, v.rows * n);
    // A replicated KV head's rows are 1/(n / replicas) of the whole matrix.
    for (WeightView* v : {&l.attn_k, &l.attn_v})
      matrices.emplace_back(v, v->rows * n / split.layer_kv_replicas(int(i)));
    for (ColumnParts* parts : {&l.attn_output, &l.ffn_down})
      for (WeightView& v : parts->parts) matrices.emplace_back(&v, v.rows);
  }
  matrices.emplace_back(&w.output, w.token_embd.rows);
  std::erase_if(matrices, [](const auto& m) {
    const WeightView& v = *m.first;
    // A mixture of experts' absent dense FFN, a recurrent layer's absent attention matrices.
    if (v.rows == 0 || v.data == nullptr) return true;
    const WeightLayout layout = regrouped_layout(v.type, m.second, v.cols);
    return v.layout != WeightLayout::Native || layout == WeightLayout::Native ||
           (layout_keeps_results(layout) && !layout_fits(layout, v.rows, v.cols));
  });
  return matrices;
}

}  // namespace

size_t ModelWeights::regroup_for_kernels(
    const std::function<void(std::span<const uint8_t>)>& copied,
    const std::function<void(double)>& progress) {
  if (!regrouping_preferred()) return 0;
  const int64_t n = split.n_ranks;
  std::vector<std::pair<WeightView*, int64_t>> matrices = regroupable(*this);
  const auto bytes_of = [](const WeightView* v) {
    return row_bytes(v->type, size_t(v->cols)) * size_t(v->rows);
  };
  const auto inside = [](const void* p, const uint8_t* begin, size_t bytes) {
    const auto* b = static_cast<const uint8_t*>(p);
    return begin && b >= begin && b < begin + bytes;
  };
  const auto* embd = static_cast<const uint8_t*>(token_embd.data);
  const size_t embd_bytes = bytes_of(&token_embd);
  // One block for all of them, in 2 MiB transparent huge pages where the
  // kernel offers them (core/huge_page_buffer.h): one page fault per 2 MiB
  // instead of per 4 KiB while copying. The load-time and memory cost of the
  // copies is in docs/bench/design-measurements.md.
  size_t total = 0;
  for (const auto& m : matrices) total += (bytes_of(m.first) + 63) & ~size_t(63);
  if (total == 0) return 0;
  regrouped = HugePageBuffer(total);
  uint8_t* block = regrouped.data();
  size_t at = 0;
  for (const auto& [v, whole_rows] : matrices) {
    const WeightLayout layout = regrouped_layout(v->type, whole_rows, v->cols);
    if (!layout_fits(layout, v->rows, v->cols))
      throw std::invalid_argument(
          "tensor parallelism over " + std::to_string(n) + " ranks: a share of " +
          std::to_string(v->rows) + " of " + std::to_string(whole_rows) + " rows cannot take the " +
          layout_name(layout) + " layout of the whole matrix (" + layout_requirement(layout) +
          "), so its results would differ from one process's; use fewer ranks");
    regroup_rows(layout, v->data, v->rows, v->cols, block + at);
    // A tied output's source is the embeddings (still read); column parts
    // are copies of ours, not the file's.
    if (copied && !inside(v->data, embd, embd_bytes) &&
        !inside(v->data, column_copies.data(), column_copies.size()))
      copied(std::span(static_cast<const uint8_t*>(v->data), bytes_of(v)));
    v->data = block + at;
    v->layout = layout;
    at += (bytes_of(v) + 63) & ~size_t(63);
    if (progress) progress(double(at) / double(total));
  }
  bool copies_read = false;
  for (const LayerWeights& l : layers)
    for (const ColumnParts* parts : {&l.attn_output, &l.ffn_down})
      for (const WeightView& v : parts->parts)
        copies_read |= inside(v.data, column_copies.data(), column_copies.size());
  if (!copies_read) column_copies = HugePageBuffer();
  return at;
}

}  // namespace kvforge
