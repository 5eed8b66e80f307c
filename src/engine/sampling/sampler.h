// Turns one row of logits into one token. One Sampler per sequence: it owns
// the sequence's RNG and penalty history, and scratch sized to the vocabulary
// at construction, so sample() never allocates.
//
// The chain, in order (the order of HF transformers and vLLM):
//   1. penalties    repetition, presence, frequency. They change the ranking,
//                   so everything after them, greedy included, sees them.
//   2. greedy       temperature == 0: argmax, ties to the lowest id. Done.
//   3. top-k        by logit: a heap select (partial_sort) for small k, else
//                   nth_element + sort of the k; never a sort of the vocabulary.
//                   Temperature cannot change a ranking, so cutting first
//                   leaves less work for the rest.
//   4. temperature  and softmax over the survivors.
//   5. top-p        on the tempered distribution, so temperature widens or
//                   narrows the nucleus (llama.cpp tempers last instead).
//                   Without top-k the survivors are ranked in growing chunks
//                   until the nucleus is covered, not by a full sort.
//   6. min-p        drop p < min_p * p_max. Cutting the tail does not move
//                   p_max, so its place after top-p changes nothing but cost.
//   7. draw         one uniform from the RNG, inverse CDF over the survivors.
//
// With a grammar (params.grammar) the tokens it refuses are -inf before step
// 1, so every step sees only what the grammar allows. Greedy without
// penalties first tries the plain argmax: when the grammar allows it, it is
// also the argmax of the masked logits, and the mask is never computed.
//
// Reproducibility: std::mt19937_64 is specified bit for bit by the standard,
// and the uniform is built here from its raw output (the std distributions
// are implementation-defined). Candidates are ranked by a strict total order
// (logit descending, id ascending), so the walk order never depends on the
// standard library. Same seed, same logits → same tokens; across platforms the
// only possible difference is the last bit of expf.
//
// Log-probabilities are those of the model itself: log-softmax of the raw
// logits, before penalties, temperature and truncation (vLLM's default, and
// what OpenAI's `logprobs` reports).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "engine/sampling/grammar/grammar_matcher.h"
#include "kvforge/request.h"
#include "kvforge/sampling_params.h"

namespace kvforge {

struct SampleResult {
  int token;
  float logprob;  // of `token` under the raw model distribution
};

// One surviving token of the chain.
struct Candidate {
  int token;
  float logit;  // after penalties, before temperature
  float prob;   // after temperature and truncation, renormalised over survivors
};

class Sampler {
 public:
  // Throws std::invalid_argument if params.validate() fails or vocab_size < 1.
  Sampler(const SamplingParams& params, int vocab_size);

  // logits: (vocab_size). Each must be finite or -inf (a mask); NaN, +inf or
  // all -inf throw std::invalid_argument naming the token.
  int sample(std::span<const float> logits);
  // As sample(), plus log-probabilities, at the cost of one more exp pass over
  // the vocabulary. If top_logprobs is non-empty, its first
  // min(size, vocab_size) entries receive the most likely tokens of the raw
  // distribution, best first, ties to the lower id.
  SampleResult sample_with_logprobs(std::span<const float> logits,
                                    std::span<TokenLogprob> top_logprobs = {});

  // Penalty history. Prompt tokens count for the repetition penalty only;
  // generated tokens (accept) also for presence and frequency.
  void accept_prompt(std::span<const int> tokens);
  // Also advances the grammar, if any (GrammarError if it refuses the token).
  void accept(int token);
  // Forgets the history and rewinds the RNG to seed(): the same calls replay
  // the same tokens.
  void reset();

  // Greedy without penalties or grammar: sample() reads nothing of the logits but
  // their argmax (and its checks).
  bool reads_only_argmax() const;

  uint64_t seed() const { return seed_; }
  int vocab_size() const { return vocab_size_; }
  const SamplingParams& params() const { return params_; }
  // What the last sample() drew from, in walk order (greedy: the argmax, p = 1).
  std::span<const Candidate> last_distribution() const { return {candidates_.data(), n_kept_}; }

 private:
  struct HistoryEntry {
    int token;
    bool generated;
  };

  void remember(int token, bool generated);
  void load_candidates(std::span<const float> logits);
  void apply_penalties();
  int argmax();
  int argmax_of(std::span<const float> logits);
  [[noreturn]] void invalid_logit(int token, float logit) const;
  [[noreturn]] void all_masked() const;
  int sample_from_chain();
  size_t cut_top_k(size_t n);
  double soften(size_t n, bool ranked);
  size_t cut_top_p(size_t n, double total, bool ranked);
  size_t cut_min_p(size_t n, bool ranked);
  int draw(size_t n);
  float raw_logprob(std::span<const float> logits, int token, std::span<TokenLogprob> top) const;
  int sample_constrained(std::span<const float> logits);
  int masked_argmax(std::span<const float> logits, const TokenMask& mask);

  SamplingParams params_;
  int vocab_size_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  std::vector<Candidate> candidates_;  // (vocab_size): id order after load, then ranked/cut
  size_t n_kept_ = 0;
  float raw_max_ = 0;          // max raw logit of the current call
  std::vector<uint8_t> seen_;  // (vocab_size): "already penalised" marks, all 0 between calls
  std::vector<HistoryEntry>
      history_;              // the penalty window: a ring of penalty_last_n, or everything
  size_t history_next_ = 0;  // oldest entry once the ring is full
  std::unique_ptr<GrammarMatcher> grammar_;  // null without params.grammar
};

}  // namespace kvforge
