// The batched forward pass: any number of tokens of any number of sequences
// in one call. Weight matrices are applied to all tokens at once ([n_tokens,
// n_embd] activations), so each weight is read from memory once per step;
// attention reads each token's own sequence through the KvStore.
//
// Its oracle is the plain scalar single-sequence pass in llama2.c's shape,
// tests/model/reference_forward.cpp: the model tests hold this one to it
// (tests/model/forward_oracle_test.cpp) and to llama.cpp's logits
// (tests/model/golden_logits_test.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/kernels/column_parts.h"
#include "core/kernels/matmul.h"
#include "core/threadpool.h"
#include "model/forward_steps.h"
#include "model/kv_store.h"
#include "model/model.h"
#include "model/moe_ffn.h"

namespace kvforge {

struct StepInputs {
  std::span<const int32_t> tokens;      // [n_tokens] token ids
  std::span<const int32_t> positions;   // [n_tokens] position of each token in its sequence
  std::span<const int32_t> seq_ids;     // [n_tokens] KV sequence of each token; empty = all 0
  std::span<const int32_t> logit_rows;  // indices into tokens whose logits are wanted, in order
  // The logits feed nothing but an argmax (greedy sampling without
  // penalties, logprobs or a logits callback). On several ranks each then
  // sends a summary of its vocabulary slice instead of its logits, and the
  // rows hold only what the argmax reads (model/vocab_argmax.h).
  bool argmax_only = false;
  // Embeddings: when set, the final-normed hidden states of logit_rows
  // ([logit_rows.size()][n_embd]) are written here instead of logits.
  float* final_hidden = nullptr;
};

// Activation buffers for up to `max_tokens` tokens per step. Sized once by
// reserve(); forward() never allocates when the step fits (on more than one
// rank, the exchange buffers grow on the first steps of each size). The
// config is the model's rank_config().
class ForwardScratch {
 public:
  explicit ForwardScratch(const ModelConfig& config) : config_(config) {}
  // Grows the buffers to hold steps of `max_tokens` tokens run on `n_threads` threads.
  void reserve(int max_tokens, int n_threads);
  int capacity() const { return capacity_; }
  // Accumulated by every forward() that uses this scratch.
  const ForwardTimes& times() const { return times_; }

 private:
  friend class ForwardPass;
  const ModelConfig& config_;
  int capacity_ = 0;
  std::vector<float> x_;   // [n_tokens][n_embd] residual stream
  std::vector<float> xn_;  // [n_tokens][max(n_embd, q_dim)] normalised input / gathered rows
  std::vector<float> q_;   // [n_tokens][q_dim] ([2 q_dim] with attn_gate: query | gate per head)
  std::vector<float> attn_gate_;        // [n_tokens][q_dim] attention output gates (attn_gate)
  std::vector<float> k_;                // [n_tokens][kv_dim]
  std::vector<float> v_;                // [n_tokens][kv_dim]
  std::vector<float> attn_;             // [n_tokens][q_dim]
  std::vector<float> gate_;             // [n_tokens][n_ff]
  std::vector<float> up_;               // [n_tokens][n_ff]
  std::vector<float> proj_;             // [n_tokens][n_embd] output of attn_output / ffn_down
  std::vector<float> ple_;              // [n_tokens][n_layer][n_embd_per_layer] (gemma4)
  std::vector<float> ple_gate_;         // [n_tokens][n_embd_per_layer] (gemma4)
  std::vector<float> cos_sin_;          // [rope tables][n_tokens][max_rope_dim]
  std::vector<float> head_scratch_;     // [n_threads][attention_queries_scratch_floats]
  std::vector<int32_t> step_seqs_;      // distinct sequences of the step
  std::vector<int32_t> seq_n_keys_;     // [distinct seq] KV positions attention reads
  std::vector<int32_t> seq_first_key_;  // [distinct seq] first of them in this layer
  std::vector<std::vector<KvSpan>> seq_spans_;  // [distinct seq] spans of the current layer
  std::vector<int32_t> token_seq_slot_;         // [n_tokens] index into step_seqs_
  std::vector<KeyRange> token_keys_;            // [n_tokens] positions each token attends
  std::vector<int32_t> query_runs_;             // [runs] first token of each attention run
  std::vector<int64_t> run_work_;               // [runs + 1] prefix sums of keys walked per run
  // Tensor parallel only: every rank's column-part products ([parts][n_tokens][n_embd]) or
  // logits ([ranks][logit rows][rank's vocab rows]) or argmax_only's slice summaries
  // ([ranks][logit rows][kSliceMaxFloats]), this rank's block filled in, then gathered.
  TpExchange tp_;
  std::vector<uint64_t> digests_;  // [ranks] step digests (lockstep check)
  GatedDeltaNetScratch gdn_;       // recurrent layers' buffers (hybrid models)
  MatmulScratch matmul_;
  MoeScratch moe_;  // mixture-of-experts models only
  ForwardTimes times_;
};

// Runs the model over the step; writes K/V of every input token into `kv` and
// [logit_rows.size()][n_vocab] logits into `logits`. Throws std::out_of_range
// for a token id outside the vocabulary (before touching the KV store).
//
// Tensor parallel (model.tp() > 1): every rank calls it with the same step
// (checked: a digest of the inputs is compared across ranks, and a
// difference throws on every rank), `kv` holding this rank's KV heads. Each
// rank computes its heads and FFN rows; after attention and after the FFN
// the ranks gather their column-part products and every rank adds all parts
// in part order; the output rows of each rank's vocabulary share are
// gathered so that every rank gets all the logits. The logits are bitwise
// those of one process (core/kernels/column_parts.h); with argmax_only, their
// argmax is (model/vocab_argmax.h).
//
// `comm` is the channel the model was loaded for (checked: std::invalid_argument
// otherwise); the overload without one is for a model of one process.
void forward(const Model& model, const StepInputs& in, KvStore& kv, ForwardScratch& scratch,
             ThreadPool& pool, Communicator& comm, float* logits);
void forward(const Model& model, const StepInputs& in, KvStore& kv, ForwardScratch& scratch,
             ThreadPool& pool, float* logits);

}  // namespace kvforge
