// How a model is cut over the ranks of a tensor-parallel run (Megatron
// style), and the fixed column parts that make its results independent of
// the number of ranks.
//
//   attn_q        rows of this rank's query heads
//   attn_k/v      rows of the KV heads they read: n_kv_head / n ranks each,
//                 or, with more ranks than KV heads, one replicated on
//                 n / n_kv_head ranks (as vLLM does)
//   ffn_gate/up   rows [rank * n_ff / n, (rank + 1) * n_ff / n), n_ff the layer's
//                 (Gemma 4's double-wide layers have more)
//   attn_output   column parts [rank * attn_parts / n, ...), groups of query heads
//   ffn_down      column parts [rank * ffn_parts / n, ...) of n_ff / ffn_parts columns
//                 each: one part count for every layer, whole blocks at each layer's n_ff
//   output        vocabulary rows vocab_first[rank] .. + vocab_rows[rank]
//   token_embd, norms: whole on every rank
//
// A mixture of experts (model/moe_tensor_parallel.h) keeps the router whole
// on every rank (every rank picks the same experts) and splits each expert:
//   ffn_gate/up_exps   rows [rank * n_ff_exp / n, ...) of every expert (and
//                      the shared expert's n_ff_shexp rows likewise)
//   ffn_down_exps      output rows [rank * n_embd / n, ...) of every expert,
//                      over all n_ff_exp columns (the activations gathered
//                      first), so each output is one whole dot product as on
//                      one process; the tokens' sums over their experts are
//                      taken per output row and the rows gathered.
// Gemma 4's MoE layers have both: a dense FFN split as above beside experts
// split so (model/gemma4_moe.h).
//
// A hybrid model's linear-attention layers (model/linear_attention_tp.h)
// split like attention: each rank holds n_k_heads / n key heads and the
// value heads that read them (q/k/v conv channels, gate, beta/alpha rows and
// their recurrent state); ssm_out splits by output rows over all columns,
// the heads' outputs gathered first.
//
// attn_parts and ffn_parts depend on the model only (shapes and the weight
// types' block sizes), never on the rank count: every rank count that
// divides both computes the same partial sums and adds them in the same
// order (core/kernels/column_parts.h), so the logits are bitwise the same
// at 1, 2 or 4 ranks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "model/model_config.h"

namespace kvforge {

// Most column parts of attn_output or ffn_down (and no more than the largest
// power of two dividing n_head, the most ranks a model can take): more parts
// let more ranks share them; on one process the
// parts of a matrix run in one matmul_batch_own_tokens call of at most 8
// weights, and each costs a write and an add of its products.
inline constexpr int kMaxColumnParts = 8;
// Output rows per rank are a multiple of this (the 16-row groups of the
// Tiles16 / Interleaved16 kernel layouts), so that each rank's rows take the
// layout the whole matrix takes, and give the same bits.
inline constexpr int64_t kVocabRowQuantum = 16;

struct TensorSplit {
  int rank = 0;
  int n_ranks = 1;
  int attn_parts = 1;                // column parts of attn_output (divides n_head)
  int ffn_parts = 1;                 // column parts of ffn_down
  int n_head = 0;                    // this rank's query heads
  int n_kv_head = 0;                 // this rank's KV heads
  int kv_replicas = 1;               // ranks holding each KV head (> 1: more ranks than KV heads)
  int n_ff = 0;                      // this rank's FFN rows (of the widest layer)
  int n_ff_exp = 0;                  // this rank's rows of each expert's gate/up (mixtures)
  int n_ff_shexp = 0;                // this rank's rows of the shared expert's gate/up
  int n_embd_rows = 0;               // this rank's output rows of each expert's down / ssm_out
  int n_k_heads = 0;                 // this rank's linear-attention key heads (hybrids)
  int n_v_heads = 0;                 // this rank's linear-attention value heads (hybrids)
  std::vector<int64_t> vocab_first;  // [n_ranks] first output row of each rank
  std::vector<int64_t> vocab_rows;   // [n_ranks] output rows of each rank

  // Gemma 4 files whose windowed layers have their own KV-head count
  // (ModelConfig::n_kv_head_swa): those layers' share, split as above.
  int n_kv_head_swa = 0;        // this rank's KV heads of windowed layers; 0 = as full
  int kv_replicas_swa = 1;      // ranks holding each windowed layer's KV head
  std::vector<uint8_t> swa_kv;  // [n_layer] 1 = the layer has the windowed layers' share

  int first_kv_head() const { return rank / kv_replicas * n_kv_head; }
  bool swa_kv_layer(int layer) const { return !swa_kv.empty() && swa_kv[size_t(layer)]; }
  int layer_n_kv_head(int layer) const { return swa_kv_layer(layer) ? n_kv_head_swa : n_kv_head; }
  int layer_kv_replicas(int layer) const {
    return swa_kv_layer(layer) ? kv_replicas_swa : kv_replicas;
  }
  int layer_first_kv_head(int layer) const {
    return rank / layer_kv_replicas(layer) * layer_n_kv_head(layer);
  }
  int first_head() const { return rank * n_head; }
  int first_ff_exp() const { return rank * n_ff_exp; }
  int first_ff_shexp() const { return rank * n_ff_shexp; }
  int first_embd_row() const { return rank * n_embd_rows; }

  // The split for `rank` of `n_ranks`. attn_output_types / ffn_down_types:
  // each layer's type (a part must hold whole blocks of it). Throws
  // std::invalid_argument saying which dimension n_ranks does not divide.
  static TensorSplit of(const ModelConfig& c, std::span<const GgmlType> attn_output_types,
                        std::span<const GgmlType> ffn_down_types, int rank, int n_ranks);

  // The config this rank computes with: n_head, n_kv_head, n_ff (each layer's), the
  // experts' n_ff_exp / n_ff_shexp and the linear-attention heads of its share (so KV caches built
  // from it hold this rank's KV heads only).
  ModelConfig rank_config(const ModelConfig& c) const;
};

}  // namespace kvforge
