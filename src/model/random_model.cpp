#include "model/random_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/formats/row_codec.h"
#include "core/threadpool.h"

namespace kvforge {
namespace {

// Uniform in [-1, 1) from raw 64-bit outputs, so the weights are the same
// with every standard library (std distributions are implementation-defined).
class UniformSource {
 public:
  explicit UniformSource(uint64_t seed) : seed_(seed), rng_(seed) {}
  float next() { return float(double(rng_() >> 11) * 0x1.0p-53 * 2.0 - 1.0); }
  void restart() { rng_.seed(seed_); }

 private:
  uint64_t seed_;
  std::mt19937_64 rng_;
};

// What the tensors' producers share: one random stream that every tensor
// draws from in file order (restarted at each write), and the threads that
// quantize.
struct Generator {
  Generator(uint64_t seed, int threads) : rng(seed), pool(std::max(1, threads)) {}
  UniformSource rng;
  ThreadPool pool;
};

// Values generated per piece of a matrix (4 MiB as f32): bounds the memory a
// write needs whatever the tensor's size.
constexpr int64_t kPieceValues = int64_t{1} << 20;

std::span<const uint8_t> as_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

// Writes `rows` rows of `cols` values uniform in ±scale, as `type`: a piece
// of rows at a time, drawn in order from the stream, quantized in parallel.
void produce_rows(Generator& g, GgmlType type, int64_t rows, int64_t cols, float scale,
                  const gguf::TensorBytesSink& out) {
  const int64_t piece_rows = std::max<int64_t>(1, kPieceValues / cols);
  const size_t rb = row_bytes(type, size_t(cols));
  std::vector<float> v;
  std::vector<uint8_t> q;
  for (int64_t r0 = 0; r0 < rows; r0 += piece_rows) {
    const int64_t n = std::min(piece_rows, rows - r0);
    v.resize(size_t(n * cols));
    for (float& x : v) x = scale * g.rng.next();
    q.resize(size_t(n) * rb);
    g.pool.parallel_for(size_t(n), [&](size_t begin, size_t end) {
      for (size_t r = begin; r < end; ++r)
        quantize_row(type, v.data() + r * size_t(cols), q.data() + r * rb, cols);
    });
    out(q);
  }
}

// Adds the model's tensors to the writer as producers that generate them
// when the file is written, so that no more than a piece of one tensor is in
// memory at a time.
class TensorMaker {
 public:
  TensorMaker(gguf::GgufWriter& w, const RandomModelSpec& spec)
      : w_(w), spec_(spec), gen_(std::make_shared<Generator>(spec.seed, spec.threads)) {
    w_.set_pass_start([g = gen_] { g->rng.restart(); });
  }

  // Entries uniform in ±1/sqrt(cols): keeps activations O(1) through the layers.
  // n > 1: a 3-D tensor of n such matrices (ne = [cols, rows, n], the experts).
  void matrix(const std::string& name, int64_t rows, int64_t cols, int64_t n = 1) {
    matrix_of(spec_.weight_type, name, rows, cols, n);
  }
  void matrix_of(GgmlType type, const std::string& name, int64_t rows, int64_t cols,
                 int64_t n = 1) {
    std::vector<uint64_t> dims = {uint64_t(cols), uint64_t(rows)};
    if (n > 1) dims.push_back(uint64_t(n));
    const float a = float(1.0 / std::sqrt(double(cols)));
    w_.add_deferred_tensor(name, type, dims,
                           [g = gen_, type, rows = n * rows, cols, a](const auto& out) {
                             produce_rows(*g, type, rows, cols, a, out);
                           });
  }

  // Gated DeltaNet decay rates -exp(A_log), in (-1, -0.1).
  void decay_rates(const std::string& name, int64_t n) {
    random_f32(name, {uint64_t(n)}, [](float u) { return -(0.55f + 0.45f * u); });
  }

  // Biases small against the projections they shift.
  void bias(const std::string& name, int64_t n) {
    random_f32(name, {uint64_t(n)}, [](float u) { return 0.1f * u; });
  }

  // [rows][cols] biases (ne = [cols, rows]: the experts' biases).
  void bias_table(const std::string& name, int64_t rows, int64_t cols) {
    random_f32(name, {uint64_t(cols), uint64_t(rows)}, [](float u) { return 0.1f * u; });
  }

  // Attention sink logits in [-1, 3): from negligible to outweighing a few keys.
  void sinks(const std::string& name, int64_t n) {
    random_f32(name, {uint64_t(n)}, [](float u) { return 1.0f + 2.0f * u; });
  }

  // A one-row gate (ffn_gate_inp_shexp, 1-D): entries uniform in ±1/sqrt(n), logits O(1).
  void gate_vector(const std::string& name, int64_t n) {
    const float a = float(1.0 / std::sqrt(double(n)));
    random_f32(name, {uint64_t(n)}, [a](float u) { return a * u; });
  }

  // Values in [base * 0.75, base * 1.25): positive scales that differ per entry
  // (gemma4's router input scale and experts' output scales).
  void scales(const std::string& name, int64_t n, float base) {
    random_f32(name, {uint64_t(n)}, [base](float u) { return base * (1.0f + 0.25f * u); });
  }

  // Norm weights near 1 so that every element of the norm matters.
  void norm(const std::string& name, int64_t n) {
    random_f32(name, {uint64_t(n)}, [](float u) { return 1.0f + 0.25f * u; });
  }

  void add_f32(const std::string& name, const std::vector<float>& v) {
    w_.add_tensor(name, GgmlType::F32, {uint64_t(v.size())}, as_bytes(v));
  }

 private:
  // A small F32 tensor of f(u) for u drawn from the stream, generated whole.
  template <class F>
  void random_f32(const std::string& name, std::vector<uint64_t> dims, F f) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    w_.add_deferred_tensor(name, GgmlType::F32, std::move(dims),
                           [g = gen_, n, f](const gguf::TensorBytesSink& out) {
                             std::vector<float> v(n);
                             for (float& x : v) x = f(g->rng.next());
                             out(as_bytes(v));
                           });
  }

  gguf::GgufWriter& w_;
  const RandomModelSpec& spec_;
  std::shared_ptr<Generator> gen_;
};

// A SentencePiece-style vocabulary that can encode any bytes: 3 specials then
// the 256 byte tokens, then unused tokens (never produced by the tokenizer)
// up to pad_to, so a model can have a realistic vocabulary size.
int add_byte_vocab(gguf::GgufWriter& w, int pad_to, const std::vector<std::string>& control) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};  // unknown, control, control
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.emplace_back(buf);
    scores.push_back(0);
    types.push_back(6);  // byte
  }
  for (const std::string& c : control) {
    tokens.push_back(c);
    scores.push_back(0);
    types.push_back(3);  // control
  }
  for (int i = int(tokens.size()); i < pad_to; ++i) {
    tokens.push_back("<unused_" + std::to_string(i) + ">");
    scores.push_back(0);
    types.push_back(5);  // unused
  }
  w.set("tokenizer.ggml.model", gguf::Value::string("llama"));
  w.set("tokenizer.ggml.tokens", gguf::Value::string_array(tokens));
  w.set("tokenizer.ggml.scores", gguf::Value::f32_array(scores));
  w.set("tokenizer.ggml.token_type", gguf::Value::i32_array(types));
  w.set("tokenizer.ggml.unknown_token_id", gguf::Value::u32(0));
  w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(1));
  w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(2));
  w.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(true));
  return int(tokens.size());
}

int copy_vocab(gguf::GgufWriter& w, const gguf::GgufFile& vocab) {
  for (const gguf::KeyValue& kv : vocab.metadata())
    if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
  return int(vocab.get_string_array("tokenizer.ggml.tokens").size());
}

}  // namespace

std::optional<RandomModelSpec> RandomModelSpec::preset(const std::string& name) {
  RandomModelSpec s;
  s.name = name;
  if (name == "tiny") return s;
  if (name == "small") {
    s.n_embd = 768;
    s.n_layer = 12;
    s.n_head = 12;
    s.n_kv_head = 4;
    s.n_ff = 2048;
    s.n_ctx = 2048;
    s.n_vocab = 32000;
    return s;
  }
  return std::nullopt;
}

const char* random_model_architectures() {
  return "llama, qwen2, qwen3, gemma2, gemma3, phi3, qwen3moe, qwen35, qwen35moe, qwen3next, "
         "gpt-oss, gemma4";
}

namespace {

// Gated DeltaNet hybrids, and the architectures whose FFN is a mixture of experts.
bool hybrid_arch(const std::string& a) {
  return a == "qwen35" || a == "qwen35moe" || a == "qwen3next";
}
bool moe_arch(const std::string& a) {
  return a == "qwen3moe" || a == "gpt-oss" || a == "qwen35moe" || a == "qwen3next";
}

// Llama 3.1's frequency divisors: 1 for wavelengths under orig/high, the
// factor over orig/low, a smooth blend between (Meta's published rule).
std::vector<float> llama3_rope_freqs(int rope_dim, float base, int orig_ctx) {
  const double factor = 8, low = 1, high = 4, pi = 3.14159265358979323846;
  std::vector<float> out;
  for (int i = 0; i < rope_dim / 2; ++i) {
    const double wavelen = 2 * pi / std::pow(double(base), -2.0 * i / rope_dim);
    if (wavelen < orig_ctx / high) {
      out.push_back(1.0f);
    } else if (wavelen > orig_ctx / low) {
      out.push_back(float(factor));
    } else {
      const double smooth = (orig_ctx / wavelen - low) / (high - low);
      out.push_back(float(1 / ((1 - smooth) / factor + smooth)));
    }
  }
  return out;
}

// The FFN rows of layer l: gemma4's double-wide shared-KV layers have twice n_ff.
int layer_n_ff(const RandomModelSpec& spec, int l) {
  return spec.double_wide_ffn && l >= spec.n_layer - spec.n_kv_shared ? 2 * spec.n_ff : spec.n_ff;
}

void write_hyperparameters(gguf::GgufWriter& w, const RandomModelSpec& spec, int n_vocab,
                           int head_dim) {
  const std::string a = spec.arch + ".";
  w.set("general.architecture", gguf::Value::string(spec.arch));
  w.set("general.name", gguf::Value::string(spec.name));
  w.set(a + "context_length", gguf::Value::u32(uint32_t(spec.n_ctx)));
  w.set(a + "embedding_length", gguf::Value::u32(uint32_t(spec.n_embd)));
  w.set(a + "block_count", gguf::Value::u32(uint32_t(spec.n_layer + spec.n_mtp)));
  std::vector<int32_t> ff;  // one entry per layer for the double-wide FFN
  for (int l = 0; l < spec.n_layer; ++l) ff.push_back(layer_n_ff(spec, l));
  w.set(a + "feed_forward_length",
        spec.double_wide_ffn ? gguf::Value::i32_array(ff) : gguf::Value::u32(uint32_t(spec.n_ff)));
  w.set(a + "attention.head_count", gguf::Value::u32(uint32_t(spec.n_head)));
  w.set(a + "attention.head_count_kv", gguf::Value::u32(uint32_t(spec.n_kv_head)));
  if (spec.head_dim > 0) {
    w.set(a + "attention.key_length", gguf::Value::u32(uint32_t(head_dim)));
    w.set(a + "attention.value_length", gguf::Value::u32(uint32_t(head_dim)));
  }
  const int rope_dim = !hybrid_arch(spec.arch) ? head_dim
                       : spec.rope_dim > 0     ? spec.rope_dim
                                               : head_dim / 4;
  w.set(a + "rope.dimension_count", gguf::Value::u32(uint32_t(rope_dim)));
  w.set(a + "rope.freq_base", gguf::Value::f32(spec.rope_freq_base));
  w.set(a + "attention.layer_norm_rms_epsilon", gguf::Value::f32(spec.rms_eps));
  w.set(a + "vocab_size", gguf::Value::u32(uint32_t(n_vocab)));
  // gpt-oss files always state their window: gpt-oss's 128 unless given.
  const int window = spec.sliding_window > 0  ? spec.sliding_window
                     : spec.arch == "gpt-oss" ? 128
                                              : 0;
  if (window > 0) w.set(a + "attention.sliding_window", gguf::Value::u32(uint32_t(window)));
  if (spec.swa_pattern > 0 && spec.arch != "gemma4")
    w.set(a + "attention.sliding_window_pattern", gguf::Value::u32(uint32_t(spec.swa_pattern)));
  if (spec.rope_freq_base_swa > 0)
    w.set(a + "rope.freq_base_swa", gguf::Value::f32(spec.rope_freq_base_swa));
  if (spec.attn_softcap > 0)
    w.set(a + "attn_logit_softcapping", gguf::Value::f32(spec.attn_softcap));
  if (spec.final_softcap > 0)
    w.set(a + "final_logit_softcapping", gguf::Value::f32(spec.final_softcap));
  if (!spec.rope_scaling.empty())
    w.set(a + "rope.scaling.type", gguf::Value::string(spec.rope_scaling));
  if (spec.rope_factor > 0) w.set(a + "rope.scaling.factor", gguf::Value::f32(spec.rope_factor));
  if (spec.rope_orig_ctx > 0)
    w.set(a + "rope.scaling.original_context_length",
          gguf::Value::u32(uint32_t(spec.rope_orig_ctx)));
  if (moe_arch(spec.arch) || spec.gemma4_moe) {
    w.set(a + "expert_count", gguf::Value::u32(uint32_t(spec.n_expert)));
    w.set(a + "expert_used_count", gguf::Value::u32(uint32_t(spec.n_expert_used)));
    w.set(a + "expert_feed_forward_length", gguf::Value::u32(uint32_t(spec.n_ff_exp)));
  }
  if (spec.arch == "qwen35moe" || spec.arch == "qwen3next")
    w.set(a + "expert_shared_feed_forward_length", gguf::Value::u32(uint32_t(spec.n_ff_shexp)));
}

// The router and the experts' 3-D tensors.
void write_experts(TensorMaker& make, const RandomModelSpec& spec, const std::string& p) {
  make.matrix_of(GgmlType::F32, p + "ffn_gate_inp.weight", spec.n_expert, spec.n_embd);
  const GgmlType et = spec.expert_type.value_or(spec.weight_type);
  make.matrix_of(et, p + "ffn_gate_exps.weight", spec.n_ff_exp, spec.n_embd, spec.n_expert);
  make.matrix_of(et, p + "ffn_up_exps.weight", spec.n_ff_exp, spec.n_embd, spec.n_expert);
  make.matrix_of(et, p + "ffn_down_exps.weight", spec.n_embd, spec.n_ff_exp, spec.n_expert);
}

// gemma4's experts beside its dense FFN (model/gemma4_moe.h). The router's
// input scale is about sqrt(n_embd), undoing its 1/sqrt(n_embd), so the
// router logits are O(1) and the picks well apart.
void write_gemma4_experts(TensorMaker& make, const RandomModelSpec& spec, const std::string& p) {
  write_experts(make, spec, p);
  make.scales(p + "ffn_gate_inp.scale", spec.n_embd, std::sqrt(float(spec.n_embd)));
  make.scales(p + "ffn_down_exps.scale", spec.n_expert, 1.0f);
  make.norm(p + "pre_ffw_norm_2.weight", spec.n_embd);
  make.norm(p + "post_ffw_norm_1.weight", spec.n_embd);
  make.norm(p + "post_ffw_norm_2.weight", spec.n_embd);
}

// The dense FFN, or a mixture of experts' router and expert tensors (with
// gpt-oss's router and expert biases, qwen35moe's and qwen3next's shared
// expert), or both (gemma4_moe). n_ff: the dense FFN's rows in this layer.
void write_ffn(TensorMaker& make, const RandomModelSpec& spec, const std::string& p, int n_ff) {
  const std::string& arch = spec.arch;
  if (spec.gemma4_moe) write_gemma4_experts(make, spec, p);
  if (moe_arch(arch)) {
    write_experts(make, spec, p);
    if (arch == "qwen35moe" || arch == "qwen3next") {
      make.gate_vector(p + "ffn_gate_inp_shexp.weight", spec.n_embd);
      make.matrix(p + "ffn_gate_shexp.weight", spec.n_ff_shexp, spec.n_embd);
      make.matrix(p + "ffn_up_shexp.weight", spec.n_ff_shexp, spec.n_embd);
      make.matrix(p + "ffn_down_shexp.weight", spec.n_embd, spec.n_ff_shexp);
    }
    if (arch != "gpt-oss") return;
    make.bias(p + "ffn_gate_inp.bias", spec.n_expert);
    make.bias_table(p + "ffn_gate_exps.bias", spec.n_expert, spec.n_ff_exp);
    make.bias_table(p + "ffn_up_exps.bias", spec.n_expert, spec.n_ff_exp);
    make.bias_table(p + "ffn_down_exps.bias", spec.n_expert, spec.n_embd);
    return;
  }
  if (arch == "phi3") {
    make.matrix(p + "ffn_up.weight", 2 * int64_t(n_ff), spec.n_embd);  // gate rows, up rows
  } else {
    make.matrix(p + "ffn_gate.weight", n_ff, spec.n_embd);
    make.matrix(p + "ffn_up.weight", n_ff, spec.n_embd);
  }
  make.matrix(p + "ffn_down.weight", spec.n_embd, n_ff);
}

// The hybrids' keys: the Gated DeltaNet shapes, the layer pattern, the MTP
// blocks, and (not qwen3next) RoPE sections as Qwen 3.5's [11, 11, 10, 0] scaled to rope_dim.
void write_hybrid_keys(gguf::GgufWriter& w, const RandomModelSpec& spec, int head_dim) {
  const std::string a = spec.arch + ".";
  w.set(a + "ssm.conv_kernel", gguf::Value::u32(uint32_t(spec.ssm_conv_kernel)));
  w.set(a + "ssm.state_size", gguf::Value::u32(uint32_t(spec.ssm_head_dim)));
  w.set(a + "ssm.group_count", gguf::Value::u32(uint32_t(spec.ssm_k_heads)));
  w.set(a + "ssm.time_step_rank", gguf::Value::u32(uint32_t(spec.ssm_v_heads)));
  w.set(a + "ssm.inner_size", gguf::Value::u32(uint32_t(spec.ssm_v_heads * spec.ssm_head_dim)));
  w.set(a + "full_attention_interval", gguf::Value::u32(uint32_t(spec.full_attention_interval)));
  if (spec.n_mtp > 0) w.set(a + "nextn_predict_layers", gguf::Value::u32(uint32_t(spec.n_mtp)));
  if (spec.arch == "qwen3next") return;
  const int pairs = (spec.rope_dim > 0 ? spec.rope_dim : head_dim / 4) / 2;
  w.set(a + "rope.dimension_sections",
        gguf::Value::i32_array({(pairs + 2) / 3, (pairs + 1) / 3, pairs / 3, 0}));
}

// A linear-attention layer's tensors (model/gated_delta_net.h). The decay
// rates ssm_a = -exp(A_log) lie in (-1, -0.1), so that a state remembers
// a few dozen tokens.
void add_linear_attention(TensorMaker& make, const RandomModelSpec& spec, const std::string& p) {
  const int64_t d = spec.ssm_head_dim, hv = spec.ssm_v_heads;
  const int64_t value_dim = hv * d, channels = 2 * spec.ssm_k_heads * d + value_dim;
  make.matrix(p + "attn_qkv.weight", channels, spec.n_embd);
  make.matrix(p + "attn_gate.weight", value_dim, spec.n_embd);
  make.matrix_of(GgmlType::F32, p + "ssm_conv1d.weight", channels, spec.ssm_conv_kernel);
  make.bias(p + "ssm_dt.bias", hv);
  make.decay_rates(p + "ssm_a", hv);
  if (spec.arch == "qwen3next") {  // per key head: its value heads' betas, then their alphas
    make.matrix(p + "ssm_ba.weight", 2 * hv, spec.n_embd);
  } else {
    make.matrix(p + "ssm_beta.weight", hv, spec.n_embd);
    make.matrix(p + "ssm_alpha.weight", hv, spec.n_embd);
  }
  make.norm(p + "ssm_norm.weight", d);
  make.matrix(p + "ssm_out.weight", spec.n_embd, value_dim);
}

// A hybrid block: attn_norm, the layer's attention (gated full attention
// with Q/K norms, or linear), post_attention_norm (the FFN's input norm),
// the FFN (qwen35: SwiGLU; the others: experts and the shared expert). MTP
// blocks add nextn.* (llama.cpp's loader shapes).
void add_hybrid_block(TensorMaker& make, const RandomModelSpec& spec, int l, int head_dim) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const int64_t q_dim = int64_t(head_dim) * spec.n_head,
                kv_dim = int64_t(head_dim) * spec.n_kv_head;
  const bool mtp = l >= spec.n_layer;
  make.norm(p + "attn_norm.weight", spec.n_embd);
  if (!mtp && (l + 1) % spec.full_attention_interval != 0) {
    add_linear_attention(make, spec, p);
  } else {
    make.matrix(p + "attn_q.weight", 2 * q_dim, spec.n_embd);  // query | gate per head
    make.matrix(p + "attn_k.weight", kv_dim, spec.n_embd);
    make.matrix(p + "attn_v.weight", kv_dim, spec.n_embd);
    make.norm(p + "attn_q_norm.weight", head_dim);
    make.norm(p + "attn_k_norm.weight", head_dim);
    make.matrix(p + "attn_output.weight", spec.n_embd, q_dim);
  }
  make.norm(p + "post_attention_norm.weight", spec.n_embd);
  write_ffn(make, spec, p, spec.n_ff);
  if (!mtp) return;
  make.matrix(p + "nextn.eh_proj.weight", spec.n_embd, 2 * int64_t(spec.n_embd));
  make.norm(p + "nextn.enorm.weight", spec.n_embd);
  make.norm(p + "nextn.hnorm.weight", spec.n_embd);
}

void write_rope_factors(TensorMaker& make, const RandomModelSpec& spec, int head_dim) {
  if (spec.llama3_rope_freqs)
    make.add_f32("rope_freqs.weight",
                 llama3_rope_freqs(head_dim, spec.rope_freq_base,
                                   spec.rope_orig_ctx > 0 ? spec.rope_orig_ctx : 8192));
  if (spec.longrope_factors) {
    std::vector<float> long_f, short_f;
    for (int i = 0; i < head_dim / 2; ++i) {
      long_f.push_back(1.0f + 0.75f * float(i));
      short_f.push_back(1.0f + 0.05f * float(i));
    }
    make.add_f32("rope_factors_long.weight", long_f);
    make.add_f32("rope_factors_short.weight", short_f);
  }
}

}  // namespace

namespace {

// The hybrids: the n_layer blocks, the output, then the MTP blocks (after the
// output, so that a file with them has the same trunk weights as one without).
gguf::GgufWriter make_hybrid_model(gguf::GgufWriter& w, TensorMaker& make,
                                   const RandomModelSpec& spec, int n_vocab, int head_dim) {
  if (spec.ssm_v_heads % spec.ssm_k_heads != 0 || spec.full_attention_interval < 1 ||
      spec.ssm_conv_kernel < 1)
    throw std::invalid_argument("make_random_model: " + spec.arch +
                                " needs ssm_v_heads a multiple of ssm_k_heads, "
                                "full_attention_interval >= 1 and ssm_conv_kernel >= 1");
  write_hybrid_keys(w, spec, head_dim);
  make.matrix("token_embd.weight", n_vocab, spec.n_embd);
  for (int l = 0; l < spec.n_layer; ++l) add_hybrid_block(make, spec, l, head_dim);
  make.norm("output_norm.weight", spec.n_embd);
  if (!spec.tied_output) make.matrix("output.weight", n_vocab, spec.n_embd);
  for (int l = spec.n_layer; l < spec.n_layer + spec.n_mtp; ++l)
    add_hybrid_block(make, spec, l, head_dim);
  return std::move(w);
}

// gemma4's per-layer embedding tensors of one layer and its output scale.
void add_gemma4_layer_tail(TensorMaker& make, const RandomModelSpec& spec, const std::string& p) {
  if (spec.n_embd_per_layer > 0) {
    make.matrix(p + "inp_gate.weight", spec.n_embd_per_layer, spec.n_embd);
    make.matrix(p + "proj.weight", spec.n_embd, spec.n_embd_per_layer);
    make.norm(p + "post_norm.weight", spec.n_embd);
  }
  make.norm(p + "layer_output_scale.weight", 1);
}

// gemma4's keys beyond gemma3's, its model-wide per-layer embedding tensors,
// and its full layers' rope_freqs: proportional RoPE, the first half of the
// pairs rotating at their own frequency and the second half not at all
// (a divisor of 1e30).
void add_gemma4_globals(gguf::GgufWriter& w, TensorMaker& make, const RandomModelSpec& spec,
                        int n_vocab, int head_dim) {
  const std::string a = spec.arch + ".";
  std::vector<gguf::Value> swa;
  for (int l = 0; l < spec.n_layer; ++l)
    swa.push_back(
        gguf::Value::boolean(spec.swa_pattern == 0 || l % spec.swa_pattern < spec.swa_pattern - 1));
  w.set(a + "attention.sliding_window_pattern", gguf::Value::array(gguf::ValueType::BOOL, swa));
  w.set(a + "attention.shared_kv_layers", gguf::Value::u32(uint32_t(spec.n_kv_shared)));
  const int swa_dim = spec.head_dim_swa > 0 ? spec.head_dim_swa : head_dim;
  w.set(a + "attention.key_length_swa", gguf::Value::u32(uint32_t(swa_dim)));
  w.set(a + "attention.value_length_swa", gguf::Value::u32(uint32_t(swa_dim)));
  if (swa_dim != head_dim)
    w.set(a + "rope.dimension_count_swa", gguf::Value::u32(uint32_t(swa_dim)));
  if (spec.n_kv_head_swa > 0 && spec.n_kv_head_swa != spec.n_kv_head) {
    std::vector<gguf::Value> heads;  // per layer, as llama.cpp's converter writes the 31B's
    for (int l = 0; l < spec.n_layer; ++l)
      heads.push_back(gguf::Value::u32(uint32_t(spec.layer_n_kv_head(l))));
    w.set(a + "attention.head_count_kv", gguf::Value::array(gguf::ValueType::UINT32, heads));
  }
  w.set(a + "embedding_length_per_layer_input", gguf::Value::u32(uint32_t(spec.n_embd_per_layer)));
  std::vector<float> freqs(size_t(head_dim / 2), 1.0f);
  for (size_t i = freqs.size() / 2; i < freqs.size(); ++i) freqs[i] = 1e30f;
  make.add_f32("rope_freqs.weight", freqs);
  if (spec.n_embd_per_layer == 0) return;
  const int64_t all = int64_t(spec.n_layer) * spec.n_embd_per_layer;
  make.matrix("per_layer_token_embd.weight", n_vocab, all);
  make.matrix("per_layer_model_proj.weight", all, spec.n_embd);
  make.norm("per_layer_proj_norm.weight", spec.n_embd_per_layer);
}

// One block of the non-hybrid architectures: attn_norm, attention (Q/K/V
// fused or not, qwen2's and gpt-oss's biases, Q/K norms, gpt-oss's output
// bias and sinks), gemma's post norms, the FFN's norm (post_attention_norm
// in gpt-oss) and the FFN.
void add_block(TensorMaker& make, const RandomModelSpec& spec, int l, int head_dim, int n_kv_head) {
  const std::string& arch = spec.arch;
  const std::string p = "blk." + std::to_string(l) + ".";
  const bool gemma4 = arch == "gemma4", gpt_oss = arch == "gpt-oss";
  const bool gemma = arch == "gemma2" || arch == "gemma3" || gemma4;
  const bool qk_norm = arch == "qwen3" || arch == "gemma3" || arch == "qwen3moe" || gemma4;
  // gemma4's shared layers have no K/V weights (llama.cpp does not require them).
  const bool kv = !gemma4 || l < spec.n_layer - spec.n_kv_shared;
  const int64_t q_dim = int64_t(head_dim) * spec.n_head, kv_dim = int64_t(head_dim) * n_kv_head;
  make.norm(p + "attn_norm.weight", spec.n_embd);
  if (spec.fused_qkv || arch == "phi3") {
    make.matrix(p + "attn_qkv.weight", q_dim + 2 * kv_dim, spec.n_embd);
  } else {
    make.matrix(p + "attn_q.weight", q_dim, spec.n_embd);
    if (kv) make.matrix(p + "attn_k.weight", kv_dim, spec.n_embd);
    if (kv) make.matrix(p + "attn_v.weight", kv_dim, spec.n_embd);
  }
  if (arch == "qwen2" || gpt_oss) {
    make.bias(p + "attn_q.bias", q_dim);
    make.bias(p + "attn_k.bias", kv_dim);
    make.bias(p + "attn_v.bias", kv_dim);
  }
  if (qk_norm) {
    make.norm(p + "attn_q_norm.weight", head_dim);
    if (kv) make.norm(p + "attn_k_norm.weight", head_dim);
  }
  make.matrix(p + "attn_output.weight", spec.n_embd, q_dim);
  if (gpt_oss) {
    make.bias(p + "attn_output.bias", spec.n_embd);
    make.sinks(p + "attn_sinks.weight", spec.n_head);
  }
  if (gemma) make.norm(p + "post_attention_norm.weight", spec.n_embd);
  make.norm(p + (gpt_oss ? "post_attention_norm.weight" : "ffn_norm.weight"), spec.n_embd);
  write_ffn(make, spec, p, layer_n_ff(spec, l));
  if (gemma) make.norm(p + "post_ffw_norm.weight", spec.n_embd);
  if (gemma4) add_gemma4_layer_tail(make, spec, p);
}

// Refuses specs the architecture's loader could not read.
void check_spec(const RandomModelSpec& spec) {
  const std::string& arch = spec.arch;
  const bool known = arch == "llama" || arch == "qwen2" || arch == "qwen3" || arch == "gemma2" ||
                     arch == "gemma3" || arch == "phi3" || arch == "gemma4" || moe_arch(arch) ||
                     hybrid_arch(arch);
  if (!known)
    throw std::invalid_argument("make_random_model: unknown architecture '" + arch + "' (" +
                                random_model_architectures() + ")");
  if ((spec.head_dim == 0 && spec.n_embd % spec.n_head != 0) || spec.n_head % spec.n_kv_head != 0)
    throw std::invalid_argument(
        "make_random_model: n_embd must be a multiple of n_head (or head_dim given), and "
        "n_head a multiple of n_kv_head");
  if (spec.n_kv_head_swa > 0 && (arch != "gemma4" || spec.n_head % spec.n_kv_head_swa != 0))
    throw std::invalid_argument(
        "make_random_model: n_kv_head_swa needs the gemma4 architecture and must divide n_head");
  if ((spec.gemma4_moe || spec.double_wide_ffn) && arch != "gemma4")
    throw std::invalid_argument(
        "make_random_model: gemma4_moe and double_wide_ffn need the gemma4 architecture");
  if ((moe_arch(arch) || spec.gemma4_moe) &&
      (spec.n_expert < 1 || spec.n_expert_used < 1 || spec.n_expert_used > spec.n_expert ||
       spec.n_ff_exp < 1 || spec.n_ff_shexp < 1))
    throw std::invalid_argument(
        "make_random_model: a mixture of experts needs 1 <= n_expert_used <= n_expert, "
        "n_ff_exp >= 1 and n_ff_shexp >= 1");
}

}  // namespace

gguf::GgufWriter make_random_model(const RandomModelSpec& spec, const gguf::GgufFile* vocab) {
  check_spec(spec);
  gguf::GgufWriter w;
  const int n_vocab =
      vocab ? copy_vocab(w, *vocab) : add_byte_vocab(w, spec.n_vocab, spec.control_tokens);
  const int head_dim = spec.head_dim > 0 ? spec.head_dim : spec.n_embd / spec.n_head;
  write_hyperparameters(w, spec, n_vocab, head_dim);
  TensorMaker make(w, spec);
  if (hybrid_arch(spec.arch)) return make_hybrid_model(w, make, spec, n_vocab, head_dim);
  make.matrix("token_embd.weight", n_vocab, spec.n_embd);
  write_rope_factors(make, spec, head_dim);
  if (spec.arch == "gemma4") add_gemma4_globals(w, make, spec, n_vocab, head_dim);
  for (int l = 0; l < spec.n_layer; ++l)
    add_block(make, spec, l, spec.layer_head_dim(l, head_dim), spec.layer_n_kv_head(l));
  make.norm("output_norm.weight", spec.n_embd);
  if (!spec.tied_output && spec.arch != "gemma2")
    make.matrix("output.weight", n_vocab, spec.n_embd);
  return w;
}

}  // namespace kvforge
