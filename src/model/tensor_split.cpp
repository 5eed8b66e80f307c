#include "model/tensor_split.h"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kvforge {
namespace {

// Whether `cols` columns hold whole blocks of every type.
bool whole_blocks(int64_t cols, std::span<const GgmlType> types) {
  for (GgmlType t : types)
    if (cols % int64_t(type_traits(t).block_elems) != 0) return false;
  return true;
}

// The largest divisor d of `units` (at most kMaxColumnParts) with each of
// `widths` / d whole blocks of every type.
int parts_of(std::span<const int64_t> widths, int units, std::span<const GgmlType> types) {
  const auto splits = [&](int d, int64_t cols) {
    return cols % d == 0 && whole_blocks(cols / d, types);
  };
  for (int d = std::min(units, kMaxColumnParts); d > 1; --d)
    if (units % d == 0 &&
        std::all_of(widths.begin(), widths.end(), [&](int64_t cols) { return splits(d, cols); }))
      return d;
  return 1;
}

// attn_output's columns in each layer: Gemma 4's windowed layers have heads
// of their own size, and every layer's must split into the same parts.
std::vector<int64_t> attention_widths(const ModelConfig& c) {
  std::vector<int64_t> widths;
  for (int l = 0; l < c.n_layer; ++l) widths.push_back(int64_t(c.n_head) * c.layer_head_dim(l));
  return widths;
}

// ffn_down's columns in each layer (Gemma 4's double-wide FFN layers have more).
std::vector<int64_t> ffn_widths(const ModelConfig& c) {
  std::vector<int64_t> widths;
  for (int l = 0; l < c.n_layer; ++l) widths.push_back(c.layer_n_ff(l));
  return widths;
}

[[noreturn]] void refuse(int n_ranks, const std::string& why) {
  throw std::invalid_argument("tensor parallelism over " + std::to_string(n_ranks) +
                              " ranks: " + why);
}

// Each rank holds an equal share of every expert's rows and of its outputs.
void check_experts(const ModelConfig& c, int n_ranks) {
  const std::pair<int, const char*> dims[] = {{c.moe.n_ff_exp, "rows of each expert"},
                                              {c.moe.n_ff_shexp, "rows of the shared expert"},
                                              {c.n_embd, "embedding rows (each expert's outputs)"}};
  for (const auto& [n, what] : dims)
    if (n % n_ranks != 0)
      refuse(n_ranks, "the model's " + std::to_string(n) + " " + what + " do not divide evenly");
}

// Each rank holds whole linear-attention key heads (and their value heads)
// and an equal share of ssm_out's output rows.
void check_linear_heads(const ModelConfig& c, int n_ranks) {
  if (c.linear.n_k_heads % n_ranks != 0)
    refuse(n_ranks, "the model's " + std::to_string(c.linear.n_k_heads) +
                        " linear-attention key heads do not divide evenly; each rank holds whole "
                        "key heads and the value heads that read them");
  if (c.n_embd % n_ranks != 0)
    refuse(n_ranks, "the model's " + std::to_string(c.n_embd) +
                        " embedding rows (ssm_out's outputs) do not divide evenly");
}

// Each rank holds whole KV heads, or with more ranks than heads one head
// replicated; `kind` names the layers for messages ("" when all have `count`).
void check_kv_heads(int count, const std::string& kind, const ModelConfig& c, int n_ranks) {
  if (n_ranks <= count && count % n_ranks != 0)
    refuse(n_ranks, "the model's" + kind + " " + std::to_string(count) +
                        " KV heads do not divide evenly; each rank holds whole KV heads");
  if (n_ranks > count && (n_ranks % count != 0 || c.n_head % n_ranks != 0))
    refuse(n_ranks, "more ranks than the model's" + kind + " " + std::to_string(count) +
                        " KV heads replicate them, which needs a multiple of the KV heads that "
                        "divides the " +
                        std::to_string(c.n_head) + " query heads");
}

}  // namespace

TensorSplit TensorSplit::of(const ModelConfig& c, std::span<const GgmlType> attn_output_types,
                            std::span<const GgmlType> ffn_down_types, int rank, int n_ranks) {
  if (n_ranks < 1 || rank < 0 || rank >= n_ranks)
    throw std::invalid_argument("tensor split: rank " + std::to_string(rank) + " of " +
                                std::to_string(n_ranks));
  TensorSplit s;
  s.rank = rank;
  s.n_ranks = n_ranks;
  // The most ranks the model could ever take: a power of two dividing the
  // query heads (each rank holds whole ones), at most kMaxColumnParts. Parts
  // are groups of query heads (attention) or FFN rows, as many as it allows
  // in whole blocks: ranks up to it share them whatever their number.
  int most = 1;
  while (most < kMaxColumnParts && c.n_head % (2 * most) == 0) most *= 2;
  s.attn_parts = parts_of(attention_widths(c), most, attn_output_types);
  const std::vector<int64_t> ffn = ffn_widths(c);
  int ffn_max = most;
  while (ffn_max > 1 && std::any_of(ffn.begin(), ffn.end(), [&](int64_t w) { return w % ffn_max; }))
    ffn_max /= 2;
  // A mixture of experts has no dense ffn_down (but Gemma 4's, beside its
  // experts): its experts split by rows instead.
  const bool dense = c.moe.n_expert == 0 || c.experts_beside_ffn();
  s.ffn_parts = dense ? parts_of(ffn, ffn_max, ffn_down_types) : 1;
  check_kv_heads(c.n_kv_head, c.n_kv_head_swa > 0 ? " full-attention layers'" : "", c, n_ranks);
  if (c.n_kv_head_swa > 0) check_kv_heads(c.n_kv_head_swa, " windowed layers'", c, n_ranks);
  if (s.attn_parts % n_ranks != 0)
    refuse(n_ranks, "attn_output splits into " + std::to_string(s.attn_parts) +
                        " column parts of whole quantization blocks, which the ranks must share");
  if (c.moe.n_expert > 0) check_experts(c, n_ranks);
  if (c.hybrid()) check_linear_heads(c, n_ranks);
  if (dense && s.ffn_parts % n_ranks != 0)
    refuse(n_ranks, "ffn_down splits into " + std::to_string(s.ffn_parts) +
                        " column parts of whole quantization blocks, which the ranks must share");
  s.n_head = c.n_head / n_ranks;
  // Beyond the KV heads, each rank holds the one its query heads read (vLLM's way).
  s.kv_replicas = n_ranks > c.n_kv_head ? n_ranks / c.n_kv_head : 1;
  s.n_kv_head = n_ranks > c.n_kv_head ? 1 : c.n_kv_head / n_ranks;
  if (c.n_kv_head_swa > 0) {
    s.kv_replicas_swa = n_ranks > c.n_kv_head_swa ? n_ranks / c.n_kv_head_swa : 1;
    s.n_kv_head_swa = n_ranks > c.n_kv_head_swa ? 1 : c.n_kv_head_swa / n_ranks;
    for (int l = 0; l < c.n_layer; ++l) s.swa_kv.push_back(c.window(l) ? 1 : 0);
  }
  s.n_ff = c.n_ff / n_ranks;
  s.n_ff_exp = c.moe.n_ff_exp / n_ranks;
  s.n_ff_shexp = c.moe.n_ff_shexp / n_ranks;
  s.n_embd_rows = c.n_embd / n_ranks;
  s.n_k_heads = c.linear.n_k_heads / n_ranks;
  s.n_v_heads = c.linear.n_v_heads / n_ranks;
  // Vocabulary rows in multiples of kVocabRowQuantum, the last rank taking what is left.
  const int64_t v = c.n_vocab;
  const int64_t per = (v / n_ranks + kVocabRowQuantum - 1) / kVocabRowQuantum * kVocabRowQuantum;
  for (int r = 0; r < n_ranks; ++r) {
    const int64_t first = std::min(v, per * r);
    const int64_t end = r + 1 == n_ranks ? v : std::min(v, per * (r + 1));
    s.vocab_first.push_back(first);
    s.vocab_rows.push_back(end - first);
  }
  return s;
}

ModelConfig TensorSplit::rank_config(const ModelConfig& c) const {
  ModelConfig r = c;
  r.n_head = n_head;
  r.n_kv_head = n_kv_head;
  r.n_kv_head_swa = n_kv_head_swa;
  r.n_ff = n_ff;
  for (int& ff : r.n_ff_layers) ff /= n_ranks;
  r.moe.n_ff_exp = c.moe.n_ff_exp / n_ranks;
  r.moe.n_ff_shexp = c.moe.n_ff_shexp / n_ranks;
  r.linear.n_k_heads = n_k_heads;
  r.linear.n_v_heads = n_v_heads;
  return r;
}

}  // namespace kvforge
