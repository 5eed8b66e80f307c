#include "model/model_weights.h"

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "core/formats/row_codec.h"
#include "core/kernels/weight_repack.h"

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
  explicit TensorLoader(const gguf::GgufFile& f) : f_(f) {}

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

  // A vector copied to f32 (norm weights, biases and RoPE factors are small).
  std::vector<float> vector(const std::string& name, int64_t n) {
    const gguf::TensorInfo& t = find(name, {uint64_t(n)});
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(t.type, f_.tensor_data(t).data(), out.data(), n);
    return out;
  }
  std::vector<float> vector_if_present(const std::string& name, int64_t n) {
    return has(name) ? vector(name, n) : std::vector<float>{};
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
  // recomputed from rope.freq_base.
  static bool known_inert(const std::string& name) {
    return name.starts_with("blk.") && name.ends_with(".attn_rot_embd");
  }
  [[noreturn]] void fail(const std::string& name, const std::string& what) const {
    throw std::runtime_error(f_.name() + ": tensor '" + name + "' " + what);
  }
  const gguf::GgufFile& f_;
  std::unordered_set<std::string> used_;
};

// `rows` rows of m from row `first` on: a view into the same bytes.
WeightView row_range(const WeightView& m, int64_t first, int64_t rows) {
  const size_t rb = row_bytes(m.type, size_t(m.cols));
  return WeightView{m.type, static_cast<const uint8_t*>(m.data) + size_t(first) * rb, rows, m.cols};
}

void split(const std::vector<float>& v, std::vector<float>& a, size_t n_a, std::vector<float>& b,
           size_t n_b, std::vector<float>& c) {
  a.assign(v.begin(), v.begin() + long(n_a));
  b.assign(v.begin() + long(n_a), v.begin() + long(n_a + n_b));
  c.assign(v.begin() + long(n_a + n_b), v.end());
}

void load_attention(TensorLoader& load, const std::string& p, const ModelConfig& c,
                    LayerWeights& l) {
  if (load.has(p + "attn_qkv.weight")) {
    const WeightView qkv = load.matrix(p + "attn_qkv.weight", c.q_dim() + 2 * c.kv_dim(), c.n_embd);
    l.attn_q = row_range(qkv, 0, c.q_dim());
    l.attn_k = row_range(qkv, c.q_dim(), c.kv_dim());
    l.attn_v = row_range(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    if (load.has(p + "attn_qkv.bias"))
      split(load.vector(p + "attn_qkv.bias", c.q_dim() + 2 * c.kv_dim()), l.bias_q,
            size_t(c.q_dim()), l.bias_k, size_t(c.kv_dim()), l.bias_v);
  } else {
    l.attn_q = load.matrix(p + "attn_q.weight", c.q_dim(), c.n_embd);
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
  l.attn_output = load.matrix(p + "attn_output.weight", c.n_embd, c.q_dim());
  if (c.post_norms) l.attn_post_norm = load.vector(p + "post_attention_norm.weight", c.n_embd);
}

void load_ffn(TensorLoader& load, const std::string& p, const ModelConfig& c, LayerWeights& l) {
  l.ffn_norm = load.vector(p + "ffn_norm.weight", c.n_embd);
  if (c.arch == Architecture::Phi3) {  // ffn_up holds gate rows, then up rows
    const WeightView gate_up = load.matrix(p + "ffn_up.weight", 2 * int64_t(c.n_ff), c.n_embd);
    l.ffn_gate = row_range(gate_up, 0, c.n_ff);
    l.ffn_up = row_range(gate_up, c.n_ff, c.n_ff);
  } else {
    l.ffn_gate = load.matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd);
    l.ffn_up = load.matrix(p + "ffn_up.weight", c.n_ff, c.n_embd);
  }
  l.ffn_down = load.matrix(p + "ffn_down.weight", c.n_embd, c.n_ff);
  if (c.post_norms) l.ffn_post_norm = load.vector(p + "post_ffw_norm.weight", c.n_embd);
}

// Llama 3's rope_freqs (llama), LongRoPE's factor pairs (phi3, or llama with
// rope.scaling.type = longrope), as llama.cpp's loaders accept them.
void load_rope_factors(TensorLoader& load, const ModelConfig& c, ModelWeights& w) {
  const int64_t n = c.rope_dim / 2;
  const bool longrope = c.arch == Architecture::Phi3 || c.rope_scaling == RopeScaling::LongRope;
  if (longrope) {
    w.rope_factors_long = load.vector_if_present("rope_factors_long.weight", n);
    w.rope_factors_short = load.vector_if_present("rope_factors_short.weight", n);
  } else if (c.arch == Architecture::Llama) {
    w.rope_freqs = load.vector_if_present("rope_freqs.weight", n);
  }
}

}  // namespace

ModelWeights ModelWeights::from_gguf(const gguf::GgufFile& file, const ModelConfig& c) {
  TensorLoader load(file);
  ModelWeights w;
  w.token_embd = load.matrix("token_embd.weight", c.n_vocab, c.n_embd);
  w.output_norm = load.vector("output_norm.weight", c.n_embd);
  w.output = c.tied_output ? w.token_embd : load.matrix("output.weight", c.n_vocab, c.n_embd);
  load_rope_factors(load, c, w);
  w.layers.resize(size_t(c.n_layer));
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[size_t(i)];
    l.attn_norm = load.vector(p + "attn_norm.weight", c.n_embd);
    load_attention(load, p, c, l);
    load_ffn(load, p, c, l);
  }
  load.check_all_used();
  return w;
}

size_t ModelWeights::regroup_for_kernels(
    const std::function<void(std::span<const uint8_t>)>& copied) {
  if (!regrouping_preferred()) return 0;
  std::vector<WeightView*> matrices;
  for (LayerWeights& l : layers)
    for (WeightView* v :
         {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output, &l.ffn_gate, &l.ffn_up, &l.ffn_down})
      matrices.push_back(v);
  matrices.push_back(&output);
  std::erase_if(matrices, [](const WeightView* v) {
    return v->layout != WeightLayout::Native ||
           regrouped_layout(v->type, v->rows, v->cols) == WeightLayout::Native;
  });
  const auto bytes_of = [](const WeightView* v) {
    return row_bytes(v->type, size_t(v->cols)) * size_t(v->rows);
  };
  // One block for all of them, in 2 MiB transparent huge pages where the
  // kernel offers them (core/huge_page_buffer.h): 512x fewer page faults
  // while copying. Load plus one token, small Q4_0 (`/usr/bin/time kvforge
  // run -n 1`, three runs; KVFORGE_SIMD=avx2 does not regroup): 0.29-0.42 s
  // and 195 MB resident against 0.28-0.29 s and 140 MB. Decode speed did not
  // measurably change with huge pages for the weights.
  size_t total = 0;
  for (const WeightView* v : matrices) total += (bytes_of(v) + 63) & ~size_t(63);
  if (total == 0) return 0;
  regrouped = HugePageBuffer(total);
  uint8_t* block = regrouped.data();
  size_t at = 0;
  for (WeightView* v : matrices) {
    const WeightLayout layout = regrouped_layout(v->type, v->rows, v->cols);
    regroup_rows(layout, v->data, v->rows, v->cols, block + at);
    if (copied && v->data != token_embd.data)
      copied(std::span(static_cast<const uint8_t*>(v->data), bytes_of(v)));
    v->data = block + at;
    v->layout = layout;
    at += (bytes_of(v) + 63) & ~size_t(63);
  }
  return at;
}

}  // namespace kvforge
