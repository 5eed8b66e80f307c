#include "model/model_weights.h"

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

#include "core/formats/row_codec.h"
#include "core/kernels/weight_repack.h"

namespace kvforge {
namespace {

std::string shape_str(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

class TensorLoader {
 public:
  explicit TensorLoader(const gguf::GgufFile& f) : f_(f) {}

  const gguf::TensorInfo& find(const std::string& name, std::vector<uint64_t> expected) const {
    const gguf::TensorInfo* t = f_.find_tensor(name);
    if (!t) fail(name, "is missing");
    if (t->dims != expected)
      fail(name, "has shape " + shape_str(t->dims) + ", expected " + shape_str(expected));
    if (!is_supported_weight_type(t->type))
      fail(name, "has type " + std::string(type_name(t->type)) +
                     ", which kvforge cannot compute with (supported: f32, f16, bf16, q8_0, "
                     "q4_0, q2_k, q3_k, q4_k, q6_k)");
    return *t;
  }

  // A matrix with ne0 = cols (contiguous), ne1 = rows.
  WeightView matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const gguf::TensorInfo& t = find(name, {uint64_t(cols), uint64_t(rows)});
    return WeightView{t.type, f_.tensor_data(t).data(), rows, cols};
  }

  // A vector copied to f32 (norm weights and biases are small).
  std::vector<float> vector(const std::string& name, int64_t n) const {
    const gguf::TensorInfo& t = find(name, {uint64_t(n)});
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(t.type, f_.tensor_data(t).data(), out.data(), n);
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& name, const std::string& what) const {
    throw std::runtime_error(f_.name() + ": tensor '" + name + "' " + what);
  }
  const gguf::GgufFile& f_;
};

}  // namespace

ModelWeights ModelWeights::from_gguf(const gguf::GgufFile& file, const ModelConfig& c) {
  const TensorLoader load(file);
  ModelWeights w;
  w.token_embd = load.matrix("token_embd.weight", c.n_vocab, c.n_embd);
  w.output_norm = load.vector("output_norm.weight", c.n_embd);
  w.output = c.tied_output ? w.token_embd : load.matrix("output.weight", c.n_vocab, c.n_embd);
  w.layers.resize(size_t(c.n_layer));
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[size_t(i)];
    l.attn_norm = load.vector(p + "attn_norm.weight", c.n_embd);
    l.attn_q = load.matrix(p + "attn_q.weight", c.q_dim(), c.n_embd);
    l.attn_k = load.matrix(p + "attn_k.weight", c.kv_dim(), c.n_embd);
    l.attn_v = load.matrix(p + "attn_v.weight", c.kv_dim(), c.n_embd);
    if (c.qkv_bias) {
      l.bias_q = load.vector(p + "attn_q.bias", c.q_dim());
      l.bias_k = load.vector(p + "attn_k.bias", c.kv_dim());
      l.bias_v = load.vector(p + "attn_v.bias", c.kv_dim());
    }
    l.attn_output = load.matrix(p + "attn_output.weight", c.n_embd, c.q_dim());
    l.ffn_norm = load.vector(p + "ffn_norm.weight", c.n_embd);
    l.ffn_gate = load.matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd);
    l.ffn_up = load.matrix(p + "ffn_up.weight", c.n_ff, c.n_embd);
    l.ffn_down = load.matrix(p + "ffn_down.weight", c.n_embd, c.n_ff);
  }
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
