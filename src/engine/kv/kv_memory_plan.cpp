#include "engine/kv/kv_memory_plan.h"

#include <algorithm>
#include <stdexcept>

#include "core/gguf/gguf_file.h"
#include "engine/kv/kv_layer_groups.h"

namespace kvforge {
namespace {

ModelShape shape(std::string name, int64_t vocab, int64_t embd, int64_t layers, int64_t heads,
                 int64_t kv_heads, int64_t ff, int64_t ctx) {
  ModelShape s;
  s.name = std::move(name);
  s.n_vocab = vocab;
  s.n_embd = embd;
  s.n_layer = layers;
  s.n_head = heads;
  s.n_kv_head = kv_heads;
  s.head_dim = embd / heads;
  s.n_ff = ff;
  s.n_ctx_train = ctx;
  return s;
}

// Shapes whose head size is not n_embd / n_head, with sliding windows.
ModelShape windowed(ModelShape s, int64_t head_dim, int64_t window, int64_t n_swa_layers,
                    bool tied) {
  s.head_dim = head_dim;
  s.sliding_window = window;
  s.n_swa_layers = n_swa_layers;
  s.tied_output = tied;
  return s;
}

void check(const ModelShape& s) {
  if (s.n_layer <= 0 || s.n_kv_head <= 0 || s.head_dim <= 0)
    throw std::invalid_argument("model shape " + s.name +
                                ": layers, KV heads and head_dim must be positive");
  if (s.n_swa_layers < 0 || s.n_swa_layers > s.n_layer || s.sliding_window < 0 ||
      (s.n_swa_layers > 0) != (s.sliding_window > 0))
    throw std::invalid_argument("model shape " + s.name + ": " + std::to_string(s.n_swa_layers) +
                                " windowed layers of " + std::to_string(s.n_layer) +
                                " with window " + std::to_string(s.sliding_window));
}

// One layer's K and V of one token: a windowed layer's (head_dim_swa,
// n_kv_head_swa) or a full one's.
uint64_t kv_bytes_per_layer_token(const ModelShape& s, KvFormat f, bool windowed = false) {
  const int hd = int(windowed && s.head_dim_swa > 0 ? s.head_dim_swa : s.head_dim);
  const int64_t heads = windowed && s.n_kv_head_swa > 0 ? s.n_kv_head_swa : s.n_kv_head;
  return uint64_t(heads) * uint64_t(kv_head_bytes(f.k, hd) + kv_head_bytes(f.v, hd));
}

// K/V bytes of `full` positions in each full layer and `windowed` in each windowed one.
uint64_t kv_positions_bytes(const ModelShape& s, KvFormat f, int64_t full, int64_t windowed) {
  return uint64_t((s.n_kv_layers() - s.n_swa_layers) * full) * kv_bytes_per_layer_token(s, f) +
         uint64_t(s.n_swa_layers * windowed) * kv_bytes_per_layer_token(s, f, true);
}

}  // namespace

// Matrix parameters with `experts` of a mixture's experts per layer.
int64_t matrix_params(const ModelShape& s, int64_t experts) {
  const int64_t q_dim = s.n_head * s.head_dim, kv_dim = s.n_kv_head * s.head_dim;
  const int64_t dense_rows = s.n_ff_all_layers > 0 ? s.n_ff_all_layers : s.n_layer * s.n_ff;
  int64_t ffn = s.n_expert > 0 ? s.n_embd * s.n_expert + experts * 3 * s.n_embd * s.n_ff_exp : 0;
  if (s.n_ff_shexp > 0) ffn += 3 * s.n_embd * s.n_ff_shexp + s.n_embd;
  const int64_t attn =
      s.n_embd * q_dim * (s.attn_gate ? 2 : 1) + 2 * s.n_embd * kv_dim + q_dim * s.n_embd;
  const LinearAttentionConfig& l = s.linear;
  const int64_t channels = l.conv_channels(), value = l.value_dim();
  const int64_t linear =
      s.n_embd * (channels + value + 2 * l.n_v_heads) + value * s.n_embd + channels * l.conv_kernel;
  const int64_t shared_attn = 2 * s.n_embd * q_dim;  // Q and O only
  return s.n_vocab * s.n_embd * (s.tied_output ? 1 : 2) + s.n_kv_layers() * attn +
         s.n_shared_kv_layers * shared_attn + s.n_recurrent_layers * linear + s.n_layer * ffn +
         (s.n_expert > 0 && !s.experts_beside_ffn ? 0 : 3 * s.n_embd * dense_rows);
}

namespace {

// Qwen3-Next and Qwen 3.5's MoE models (config.json of each): every 4th
// layer gated full attention, the others Gated DeltaNet with 16 key and 32
// value heads of 128 and a conv of 4 taps; experts of 512 rows beside a shared
// expert of 512.
ModelShape qwen_hybrid_moe(std::string name, int64_t vocab, int64_t layers, int64_t experts,
                           int64_t used) {
  ModelShape s = shape(std::move(name), vocab, 2048, layers, 16, 2, 512, 262144);
  s.head_dim = 256;
  s.attn_gate = true;
  s.n_expert = experts;
  s.n_expert_used = used;
  s.n_ff_exp = 512;
  s.n_ff_shexp = 512;
  s.linear =
      LinearAttentionConfig{.conv_kernel = 4, .n_k_heads = 16, .n_v_heads = 32, .head_dim = 128};
  s.n_recurrent_layers = layers - layers / 4;
  s.state_bytes_per_sequence =
      uint64_t(s.n_recurrent_layers) * s.linear.state_floats() * sizeof(float);
  return s;
}

}  // namespace

int64_t ModelShape::n_matrix_params() const { return matrix_params(*this, n_expert); }

int64_t ModelShape::n_active_params() const {
  return matrix_params(*this, n_expert_used) + n_norm_params();
}

int64_t ModelShape::n_params() const { return n_matrix_params() + n_norm_params(); }

std::optional<ModelShape> ModelShape::preset(const std::string& name) {
  if (name == "llama-7b") return shape(name, 32000, 4096, 32, 32, 32, 11008, 2048);
  if (name == "llama-2-7b") return shape(name, 32000, 4096, 32, 32, 32, 11008, 4096);
  if (name == "llama-2-13b") return shape(name, 32000, 5120, 40, 40, 40, 13824, 4096);
  if (name == "llama-2-70b") return shape(name, 32000, 8192, 80, 64, 8, 28672, 4096);
  if (name == "llama-3-8b") return shape(name, 128256, 4096, 32, 32, 8, 14336, 8192);
  if (name == "llama-3-70b") return shape(name, 128256, 8192, 80, 64, 8, 28672, 8192);
  if (name == "tinyllama-1.1b") return shape(name, 32000, 2048, 22, 32, 4, 5632, 2048);
  // Hugging Face config.json of each model. Llama 3.1 and Qwen3 attend
  // every position; Gemma 2 alternates windowed and global layers (even
  // layers windowed), Gemma 3 has 5 windowed layers to each global one;
  // Phi-3-mini-4k sets a window of 2047 on every layer.
  if (name == "llama-3.1-8b") return shape(name, 128256, 4096, 32, 32, 8, 14336, 131072);
  if (name == "qwen3-8b")
    return windowed(shape(name, 151936, 4096, 36, 32, 8, 12288, 40960), 128, 0, 0, false);
  if (name == "gemma-2-2b")
    return windowed(shape(name, 256000, 2304, 26, 8, 4, 9216, 8192), 256, 4096, 13, true);
  if (name == "gemma-3-4b")
    return windowed(shape(name, 262208, 2560, 34, 8, 4, 10240, 131072), 256, 1024, 29, true);
  if (name == "phi-3-mini")
    return windowed(shape(name, 32064, 3072, 32, 32, 32, 8192, 4096), 96, 2047, 32, false);
  if (name == "qwen3-30b-a3b") {  // 128 experts of 768 rows, 8 per token
    ModelShape s = windowed(shape(name, 151936, 2048, 48, 32, 4, 6144, 40960), 128, 0, 0, false);
    s.n_expert = 128;
    s.n_expert_used = 8;
    s.n_ff_exp = 768;
    return s;
  }
  // Gemma 4 E2B: 35 layers, 4 windowed (of 512, heads of 256) to each full
  // one (heads of 512); the last 20 read the K/V of layers 13 (windowed) and
  // 14 (full), so 15 layers keep K/V: 12 windowed and 3 full.
  if (name == "gemma-4-e2b") {
    ModelShape s = windowed(shape(name, 262144, 1536, 35, 8, 1, 6144, 131072), 512, 512, 12, true);
    s.head_dim_swa = 256;
    s.n_ff_all_layers = 15 * 6144 + 20 * 2 * 6144;  // use_double_wide_mlp
    s.n_shared_kv_layers = 20;
    s.n_shared_swa_layers = 16;
    return s;
  }
  if (name == "gpt-oss-20b") {  // 32 experts of 2880 rows, 4 per token; even layers windowed
    ModelShape s = windowed(shape(name, 201088, 2880, 24, 64, 8, 2880, 131072), 64, 128, 12, false);
    s.n_expert = 32;
    s.n_expert_used = 4;
    s.n_ff_exp = 2880;
    return s;
  }
  // 48 layers, 512 experts with 10 per token; 40 layers, 256 experts with 8.
  if (name == "qwen3-next-80b-a3b") return qwen_hybrid_moe(name, 151936, 48, 512, 10);
  if (name == "qwen3.5-35b-a3b") return qwen_hybrid_moe(name, 248320, 40, 256, 8);
  return std::nullopt;
}

std::vector<std::string> ModelShape::preset_names() {
  return {"llama-7b",        "llama-2-7b",     "llama-2-13b",   "llama-2-70b", "llama-3-8b",
          "llama-3-70b",     "tinyllama-1.1b", "llama-3.1-8b",  "qwen3-8b",    "gemma-2-2b",
          "gemma-3-4b",      "phi-3-mini",     "qwen3-30b-a3b", "gpt-oss-20b", "qwen3-next-80b-a3b",
          "qwen3.5-35b-a3b", "gemma-4-e2b"};
}

ModelShape ModelShape::from_config(const ModelConfig& c) {
  ModelShape s = shape(c.name.empty() ? c.arch_name : c.name, c.n_vocab, c.n_embd, c.n_layer,
                       c.n_head, c.n_kv_head, c.n_ff, c.n_ctx_train);
  s.head_dim = c.head_dim;
  s.head_dim_swa = c.head_dim_swa > 0 && c.head_dim_swa != c.head_dim ? c.head_dim_swa : 0;
  s.n_kv_head_swa = c.n_kv_head_swa;
  s.tied_output = c.tied_output;
  for (int l = 0; l < c.n_layer; ++l) s.n_swa_layers += c.owns_kv(l) && c.window(l) > 0 ? 1 : 0;
  s.sliding_window = s.n_swa_layers > 0 ? c.sliding_window : 0;
  s.n_expert = c.moe.n_expert;
  s.n_expert_used = c.moe.n_expert_used;
  s.experts_beside_ffn = c.experts_beside_ffn();
  for (int l = 0; l < c.n_layer && !c.n_ff_layers.empty(); ++l) {
    s.n_ff_all_layers += c.layer_n_ff(l);
    s.n_ff_min = l == 0 ? c.layer_n_ff(l) : std::min<int64_t>(s.n_ff_min, c.layer_n_ff(l));
  }
  s.n_ff_exp = c.moe.n_ff_exp;
  s.n_ff_shexp = c.moe.n_ff_shexp;
  s.linear = c.linear;
  s.attn_gate = c.attn_gate;
  s.n_shared_kv_layers = c.n_kv_shared;
  for (int l = c.n_layer - c.n_kv_shared; l < c.n_layer; ++l)
    s.n_shared_swa_layers += c.window(l) > 0 ? 1 : 0;
  s.n_recurrent_layers = c.n_layer - c.n_kv_layers() - c.n_kv_shared;
  s.state_bytes_per_sequence = c.state_bytes_per_sequence();
  return s;
}

uint64_t weight_bytes(const ModelShape& s, GgmlType matrix_type) {
  const TypeTraits tr = type_traits(matrix_type);
  const int64_t block = int64_t(tr.block_elems);
  if (s.n_embd % block || s.n_ff % block)
    throw std::invalid_argument("model " + s.name + ": n_embd " + std::to_string(s.n_embd) +
                                " and n_ff " + std::to_string(s.n_ff) +
                                " must be multiples of the " + std::string(type_name(matrix_type)) +
                                " block of " + std::to_string(block));
  return uint64_t(s.n_matrix_params() / block) * tr.block_bytes + uint64_t(s.n_norm_params()) * 4;
}

GgufWeights read_gguf_weights(const std::filesystem::path& path) {
  return gguf_weights(gguf::GgufFile::open(path));
}

GgufWeights gguf_weights(const gguf::GgufFile& file) {
  GgufWeights w;
  w.shape = ModelShape::from_config(ModelConfig::from_gguf(file));
  for (const auto& t : file.tensors()) w.bytes += t.n_bytes;
  return w;
}

uint64_t kv_bytes_per_token(const ModelShape& s, KvFormat f) {
  check(s);
  return kv_positions_bytes(s, f, 1, 1);
}

ModelShape without_kv_sharing(ModelShape s) {
  s.n_swa_layers += s.n_shared_swa_layers;
  s.n_shared_kv_layers = s.n_shared_swa_layers = 0;
  return s;
}

int64_t kv_window_positions(const ModelShape& s, int64_t block_tokens) {
  if (block_tokens <= 0) throw std::invalid_argument("block size must be ≥ 1 token");
  // BlockManager::max_blocks_for_seq with one token per step.
  return ((s.sliding_window + block_tokens - 1) / block_tokens + 1) * block_tokens;
}

uint64_t kv_bytes_per_sequence(const ModelShape& s, KvFormat f, int64_t n_ctx,
                               int64_t block_tokens) {
  check(s);
  if (n_ctx < 0) throw std::invalid_argument("context must be ≥ 0");
  const int64_t windowed = std::min(n_ctx, kv_window_positions(s, block_tokens));
  return kv_positions_bytes(s, f, n_ctx, windowed) + s.state_bytes_per_sequence;
}

KvMemoryPlan plan_kv_memory(const ModelShape& s, KvFormat f, uint64_t weights, int64_t n_ctx,
                            int64_t batch, int64_t block_tokens) {
  if (n_ctx < 0 || batch < 0) throw std::invalid_argument("context and batch must be ≥ 0");
  KvMemoryPlan p;
  p.weight_bytes = weights;
  p.kv_per_token = kv_bytes_per_token(s, f);
  p.kv_per_sequence = kv_bytes_per_sequence(s, f, n_ctx, block_tokens);
  p.kv_per_sequence_full = p.kv_per_token * uint64_t(n_ctx);
  p.kv_total = p.kv_per_sequence * uint64_t(batch);
  p.total = weights + p.kv_total;
  return p;
}

int64_t max_context_for(const ModelShape& s, KvFormat f, uint64_t weights, int64_t batch,
                        uint64_t budget, int64_t block_tokens) {
  if (batch <= 0) throw std::invalid_argument("batch must be ≥ 1");
  if (budget <= weights) return 0;
  const uint64_t kv_budget = budget - weights;
  if (s.n_swa_layers == 0 && s.state_bytes_per_sequence == 0)
    return int64_t(kv_budget / (kv_bytes_per_token(s, f) * uint64_t(batch)));
  // Per-sequence KV is monotone in the context: the longest that fits.
  int64_t lo = 0, hi = kMaxPlannedContext + 1;  // lo fits, hi does not
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    const uint64_t per_seq = kv_bytes_per_sequence(s, f, mid, block_tokens);
    (per_seq <= kv_budget / uint64_t(batch) ? lo : hi) = mid;
  }
  return lo;
}

int64_t max_sequences_for(const ModelShape& s, KvFormat f, uint64_t weights, int64_t n_ctx,
                          uint64_t budget, int64_t block_tokens) {
  if (n_ctx <= 0) throw std::invalid_argument("context must be ≥ 1 token");
  if (budget <= weights) return 0;
  return int64_t((budget - weights) / kv_bytes_per_sequence(s, f, n_ctx, block_tokens));
}

int64_t kv_block_slots(const ModelShape& s) {
  check(s);
  const int64_t full = s.n_kv_layers() - s.n_swa_layers;
  return full == 0 || s.n_swa_layers == 0 ? s.n_kv_layers() : std::min(full, s.n_swa_layers);
}

uint64_t kv_block_bytes(const ModelShape& s, KvFormat f, int64_t block_tokens) {
  check(s);
  if (block_tokens <= 0) throw std::invalid_argument("block size must be ≥ 1 token");
  // The layers keeping K/V, full ones first (their order in the model does
  // not change the groups' widths), grouped as PagedKvCache groups them.
  const int64_t full = s.n_kv_layers() - s.n_swa_layers;
  const int64_t swa_dim = (s.head_dim_swa > 0 ? s.head_dim_swa : s.head_dim) *
                          (s.n_kv_head_swa > 0 ? s.n_kv_head_swa : s.n_kv_head);
  std::vector<int32_t> windows(size_t(s.n_kv_layers()), 0);
  std::vector<int64_t> widths(size_t(s.n_kv_layers()), s.head_dim * s.n_kv_head);
  for (size_t l = size_t(full); l < windows.size(); ++l) {
    windows[l] = int32_t(std::max<int64_t>(s.sliding_window, 1));
    widths[l] = swa_dim;
  }
  uint64_t block = 0;
  for (const KvLayerGroup& g : KvLayerGroups::of_windows(windows, widths).groups) {
    uint64_t bytes = 0;
    for (int l : g.layers) bytes += kv_bytes_per_layer_token(s, f, l >= full);
    block = std::max(block, bytes * uint64_t(block_tokens));
  }
  return block;
}

int64_t kv_pool_blocks(const ModelShape& s, KvFormat f, uint64_t kv_budget, int64_t block_tokens) {
  return int64_t(kv_budget / kv_block_bytes(s, f, block_tokens));
}

}  // namespace kvforge
