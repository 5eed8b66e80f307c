#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/ops/argmax.h"

namespace kvforge {
namespace {

constexpr float kPosInf = std::numeric_limits<float>::infinity();
constexpr float kNegInf = -kPosInf;
constexpr double kFloatMax = std::numeric_limits<float>::max();
// First chunk ranked by top-p without top-k; each next chunk is 4x larger.
constexpr size_t kTopPFirstChunk = 128;
// rank_front() uses a heap when it keeps at most 1/16 of the elements.
constexpr size_t kHeapSelectRatio = 16;

// The one ranking used everywhere: higher logit first, ties to the lower id.
// A strict total order, so selections and sorts agree on every standard library.
bool ranks_before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

// Moves the best `count` of [first, last) to the front, ranked. Keeping few
// of many, a heap (partial_sort) is fastest: nearly every element costs one
// well-predicted comparison with the heap's worst, where nth_element
// mispredicts about every other one. Keeping many: nth_element, then a sort.
void rank_front(std::vector<Candidate>::iterator first, std::vector<Candidate>::iterator last,
                size_t count) {
  const size_t n = static_cast<size_t>(last - first);
  if (count >= n) {
    std::sort(first, last, ranks_before);
  } else if (count * kHeapSelectRatio <= n) {
    std::partial_sort(first, first + count, last, ranks_before);
  } else {
    std::nth_element(first, first + count, last, ranks_before);
    std::sort(first, first + count, ranks_before);
  }
}

// 53 random bits of one raw mt19937_64 output → a double in [0, 1).
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Penalties must not push a finite logit to ±inf (that would turn into NaN in softmax).
float clamp_to_finite(double v) { return static_cast<float>(std::clamp(v, -kFloatMax, kFloatMax)); }

uint64_t resolve_seed(const std::optional<uint64_t>& seed) {
  if (seed) return *seed;
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device();
}

const SamplingParams& checked(const SamplingParams& params, int vocab_size) {
  if (auto err = params.validate()) throw std::invalid_argument(*err);
  if (vocab_size < 1)
    throw std::invalid_argument("sampler: vocab_size must be >= 1, got " +
                                std::to_string(vocab_size));
  return params;
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int vocab_size)
    : params_(checked(params, vocab_size)),
      vocab_size_(vocab_size),
      seed_(resolve_seed(params.seed)),
      rng_(seed_),
      candidates_(vocab_size),
      seen_(vocab_size, 0) {
  if (params_.penalty_last_n > 0) history_.reserve(params_.penalty_last_n);
  if (params_.grammar) {
    const size_t grammar_vocab = params_.grammar->vocabulary().n_vocab();
    if (grammar_vocab > size_t(vocab_size))
      throw std::invalid_argument("sampler: the grammar's vocabulary has " +
                                  std::to_string(grammar_vocab) + " tokens, the model " +
                                  std::to_string(vocab_size));
    grammar_ = std::make_unique<GrammarMatcher>(params_.grammar);
  }
}

void Sampler::accept_prompt(std::span<const int> tokens) {
  for (int t : tokens) remember(t, false);
}

void Sampler::accept(int token) {
  remember(token, true);
  if (grammar_) grammar_->accept(token);
}

void Sampler::reset() {
  history_.clear();
  history_next_ = 0;
  rng_.seed(seed_);
  n_kept_ = 0;
  if (grammar_) grammar_->reset();
}

void Sampler::remember(int token, bool generated) {
  if (token < 0 || token >= vocab_size_)
    throw std::invalid_argument("sampler: token id " + std::to_string(token) +
                                " out of range [0, " + std::to_string(vocab_size_) + ")");
  const int limit = params_.penalty_last_n;
  if (limit == 0) return;
  if (limit < 0 || history_.size() < static_cast<size_t>(limit)) {
    history_.push_back({token, generated});
    return;
  }
  history_[history_next_] = {token, generated};
  history_next_ = (history_next_ + 1) % history_.size();
}

bool Sampler::reads_only_argmax() const {
  const bool penalized = params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                         params_.frequency_penalty != 0.0f;
  // A grammar's masked argmax reads every allowed token's logit.
  return params_.temperature == 0.0f && !penalized && !grammar_;
}

int Sampler::sample(std::span<const float> logits) {
  if (logits.size() != static_cast<size_t>(vocab_size_))
    throw std::invalid_argument("sampler: got " + std::to_string(logits.size()) +
                                " logits, expected vocab_size " + std::to_string(vocab_size_));
  if (grammar_) return sample_constrained(logits);
  if (reads_only_argmax()) return argmax_of(logits);
  load_candidates(logits);
  apply_penalties();
  return params_.temperature == 0.0f ? argmax() : sample_from_chain();
}

// Greedy without penalties: the candidates would be the logits as they are,
// so one pass finds the same token as load_candidates + argmax (lowest id on
// ties, the same errors) without writing vocab_size candidates per token.
int Sampler::argmax_of(std::span<const float> logits) {
  const ArgmaxResult r = argmax_checked(logits.data(), vocab_size_);
  if (r.first_invalid >= 0) invalid_logit(int(r.first_invalid), logits[size_t(r.first_invalid)]);
  const int best = int(r.index);
  const float max = logits[size_t(best)];
  if (max == kNegInf) all_masked();
  raw_max_ = max;
  candidates_[0] = {best, max, 1.0f};
  n_kept_ = 1;
  return best;
}

// The chain of sample() over the logits the grammar allows; tokens past the
// grammar's vocabulary (a model's padding rows) are never allowed.
int Sampler::sample_constrained(std::span<const float> logits) {
  if (reads_only_argmax()) {
    const int best = argmax_of(logits);
    if (grammar_->allows(best)) return best;
    return masked_argmax(logits, grammar_->allowed());
  }
  load_candidates(logits);
  const TokenMask& mask = grammar_->allowed();
  const int n_grammar = int(params_.grammar->vocabulary().n_vocab());
  bool any = false;
  for (int i = 0; i < vocab_size_; ++i) {
    if (i >= n_grammar || !mask_test(mask, i))
      candidates_[i].logit = kNegInf;
    else
      any = any || candidates_[i].logit != kNegInf;
  }
  if (!any) all_masked();
  apply_penalties();
  return params_.temperature == 0.0f ? argmax() : sample_from_chain();
}

// argmax_of() has checked every logit; ties go to the lowest id, as there.
int Sampler::masked_argmax(std::span<const float> logits, const TokenMask& mask) {
  const int n = std::min(vocab_size_, int(params_.grammar->vocabulary().n_vocab()));
  int best = -1;
  for (int i = 0; i < n; ++i)
    if (mask_test(mask, i) && logits[i] != kNegInf && (best < 0 || logits[i] > logits[best]))
      best = i;
  if (best < 0) all_masked();
  candidates_[0] = {best, logits[size_t(best)], 1.0f};
  n_kept_ = 1;
  return best;
}

SampleResult Sampler::sample_with_logprobs(std::span<const float> logits,
                                           std::span<TokenLogprob> top) {
  const int token = sample(logits);
  return {token, raw_logprob(logits, token, top)};
}

void Sampler::load_candidates(std::span<const float> logits) {
  float max = kNegInf;
  for (int i = 0; i < vocab_size_; ++i) {
    const float l = logits[i];
    if (std::isnan(l) || l == kPosInf) invalid_logit(i, l);
    candidates_[i] = {i, l, 0.0f};
    max = std::max(max, l);
  }
  if (max == kNegInf) all_masked();
  raw_max_ = max;
}

[[noreturn]] void Sampler::invalid_logit(int token, float logit) const {
  throw std::invalid_argument("sampler: logit of token " + std::to_string(token) + " is " +
                              (std::isnan(logit) ? "NaN" : "+inf") +
                              "; logits must be finite or -inf");
}

[[noreturn]] void Sampler::all_masked() const {
  throw std::invalid_argument("sampler: all " + std::to_string(vocab_size_) +
                              " logits are -inf; nothing can be sampled");
}

// candidates_ is in id order here. Masked (-inf) logits stay masked.
void Sampler::apply_penalties() {
  const float rep = params_.repetition_penalty;
  const float presence = params_.presence_penalty;
  const float frequency = params_.frequency_penalty;
  // Repetition first, so its sign test sees the model's logit (as llama.cpp does).
  if (rep != 1.0f) {
    for (const HistoryEntry& e : history_) {
      if (seen_[e.token]) continue;
      seen_[e.token] = 1;
      float& l = candidates_[e.token].logit;
      if (l != kNegInf) l = clamp_to_finite(l > 0 ? double{l} / rep : double{l} * rep);
    }
    for (const HistoryEntry& e : history_) seen_[e.token] = 0;
  }
  if (presence != 0.0f || frequency != 0.0f) {
    for (const HistoryEntry& e : history_) {
      if (!e.generated) continue;
      float& l = candidates_[e.token].logit;
      const double p = seen_[e.token] ? 0.0 : presence;
      seen_[e.token] = 1;
      if (l != kNegInf) l = clamp_to_finite(double{l} - frequency - p);
    }
    for (const HistoryEntry& e : history_) seen_[e.token] = 0;
  }
}

int Sampler::argmax() {
  size_t best = 0;
  for (size_t i = 1; i < candidates_.size(); ++i)
    if (candidates_[i].logit > candidates_[best].logit) best = i;  // strict: ties keep the lower id
  candidates_[0] = {candidates_[best].token, candidates_[best].logit, 1.0f};
  n_kept_ = 1;
  return candidates_[0].token;
}

int Sampler::sample_from_chain() {
  size_t n = candidates_.size();
  const bool ranked = params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n;
  if (ranked) n = cut_top_k(n);
  const double total = soften(n, ranked);
  if (params_.top_p < 1.0f) n = cut_top_p(n, total, ranked);
  // cut_top_p leaves [0, n) ranked.
  if (params_.min_p > 0.0f) n = cut_min_p(n, ranked || params_.top_p < 1.0f);
  return draw(n);
}

size_t Sampler::cut_top_k(size_t n) {
  const size_t k = static_cast<size_t>(params_.top_k);
  rank_front(candidates_.begin(), candidates_.begin() + n, k);
  return k;
}

// prob = exp((logit - max) / T): unnormalised, the most likely token weighs
// exactly 1. Returns the total weight.
double Sampler::soften(size_t n, bool ranked) {
  float max = candidates_[0].logit;
  if (!ranked)
    for (size_t i = 1; i < n; ++i) max = std::max(max, candidates_[i].logit);
  // Divide, not multiply by 1/T: a tiny T would make 1/T inf and 0 * inf NaN.
  const float t = params_.temperature;
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    Candidate& c = candidates_[i];
    c.prob = std::exp((c.logit - max) / t);
    total += c.prob;
  }
  return total;
}

// Keeps the best-ranked tokens up to the first whose cumulative weight reaches
// top_p * total; afterwards [0, result) is ranked. Unranked candidates are
// ranked chunk by chunk, each the best of the rest, so a narrow nucleus (the
// usual case) costs O(V); a flat distribution costs about one full sort.
size_t Sampler::cut_top_p(size_t n, double total, bool ranked) {
  const double target = params_.top_p * total;
  auto first = candidates_.begin();
  size_t ranked_end = ranked ? n : 0;
  size_t chunk = kTopPFirstChunk;
  double cumulative = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i == ranked_end) {
      const size_t end = std::min(n, ranked_end + chunk);
      rank_front(first + ranked_end, first + n, end - ranked_end);
      ranked_end = end;
      chunk *= 4;
    }
    cumulative += candidates_[i].prob;
    if (cumulative >= target) return i + 1;
  }
  return n;
}

// Weights are relative to the most likely token (weight 1), so the threshold is min_p itself.
size_t Sampler::cut_min_p(size_t n, bool ranked) {
  const float threshold = params_.min_p;
  if (ranked) {
    while (n > 1 && candidates_[n - 1].prob < threshold) --n;
    return n;
  }
  auto first = candidates_.begin();
  auto kept_end =
      std::remove_if(first, first + n, [&](const Candidate& c) { return c.prob < threshold; });
  return static_cast<size_t>(kept_end - first);
}

int Sampler::draw(size_t n) {
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += candidates_[i].prob;
  const double target = uniform01(rng_) * total;
  // Rounding may leave target just above the running sum; then the last token
  // with weight takes it (a zero-weight token is never drawn).
  size_t chosen = 0;
  double cumulative = 0;
  for (size_t i = 0; i < n; ++i) {
    if (candidates_[i].prob > 0) chosen = i;
    cumulative += candidates_[i].prob;
    if (target < cumulative) break;
  }
  const double scale = 1.0 / total;
  for (size_t i = 0; i < n; ++i)
    candidates_[i].prob = static_cast<float>(candidates_[i].prob * scale);
  n_kept_ = n;
  return candidates_[chosen].token;
}

float Sampler::raw_logprob(std::span<const float> logits, int token,
                           std::span<TokenLogprob> top) const {
  double sum = 0;
  for (float l : logits) sum += std::exp(double{l} - raw_max_);
  const double log_z = raw_max_ + std::log(sum);

  // Insertion into a short sorted list: O(V) when top.size() is small.
  const size_t n = std::min(top.size(), logits.size());
  size_t filled = 0;
  for (int t = 0; n > 0 && t < vocab_size_; ++t) {
    const float l = logits[t];
    if (filled == n && !(l > top[n - 1].logprob)) continue;
    size_t pos = filled < n ? filled++ : n - 1;
    for (; pos > 0 && l > top[pos - 1].logprob; --pos) top[pos] = top[pos - 1];
    top[pos] = {t, l};
  }
  for (size_t i = 0; i < n; ++i) top[i].logprob = static_cast<float>(top[i].logprob - log_z);
  return static_cast<float>(logits[token] - log_z);
}

}  // namespace kvforge
