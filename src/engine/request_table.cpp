#include "engine/request_table.h"

#include <algorithm>
#include <random>

namespace kvforge {
namespace {

// top_scratch: reused between calls so a step does not allocate for it.
GeneratedToken draw_token(Sampler& sampler, std::span<const float> logits,
                          const LogprobOptions& logprobs, std::vector<TokenLogprob>& top_scratch) {
  GeneratedToken t;
  if (logprobs.enabled) {
    top_scratch.resize(size_t(logprobs.top));
    const SampleResult s = sampler.sample_with_logprobs(logits, top_scratch);
    t.id = s.token;
    t.logprob = s.logprob;
    t.top_logprobs = top_scratch;
  } else {
    t.id = sampler.sample(logits);
  }
  return t;
}

}  // namespace

RequestTable::RequestTable(int32_t n_vocab, std::vector<int32_t> eos_token_ids)
    : n_vocab_(n_vocab), eos_token_ids_(std::move(eos_token_ids)) {}

void RequestTable::check(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                         LogprobOptions logprobs, int max_n, const std::string& n_range) const {
  if (auto err = params.validate()) throw RequestRejected(*err);
  if (n < 1 || n > max_n)
    throw RequestRejected("request: n must be in " + n_range + ", got " + std::to_string(n));
  if (logprobs.top < 0 || logprobs.top > n_vocab_ || (logprobs.top > 0 && !logprobs.enabled))
    throw RequestRejected(
        "request: top logprobs must be in [0, n_vocab] with logprobs enabled, got " +
        std::to_string(logprobs.top));
  if (prompt.empty()) throw RequestRejected("request: empty prompt");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= n_vocab_)
      throw RequestRejected("request: prompt token " + std::to_string(i) + " has id " +
                            std::to_string(prompt[i]) + ", outside the vocabulary [0, " +
                            std::to_string(n_vocab_) + ")");
}

void RequestTable::check_length(int64_t prompt_len, const SamplingParams& params, int64_t max_len,
                                const std::string& limit, bool shifts) {
  if (prompt_len >= max_len)
    throw RequestRejected("request: prompt of " + std::to_string(prompt_len) +
                          " tokens leaves no room to generate in " + limit);
  if (!shifts && params.max_tokens && prompt_len + *params.max_tokens > max_len)
    throw RequestRejected("request: prompt of " + std::to_string(prompt_len) +
                          " tokens + max_tokens " + std::to_string(*params.max_tokens) + " = " +
                          std::to_string(prompt_len + *params.max_tokens) + " tokens exceeds " +
                          limit);
}

RequestId RequestTable::add(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                            LogprobOptions logprobs) {
  const RequestId id = next_id_++;
  RequestState& r = requests_[id];
  r.prompt.assign(prompt.begin(), prompt.end());
  r.params = params;
  if (!r.params.seed)
    r.params.seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
  r.logprobs = logprobs;
  r.n = n;
  r.open = n;
  return id;
}

std::unique_ptr<Sampler> RequestTable::make_sampler(RequestId id, int branch) const {
  const RequestState& r = at(id);
  SamplingParams p = r.params;
  if (p.seed) p.seed = *p.seed + uint64_t(branch);
  auto sampler = std::make_unique<Sampler>(p, n_vocab_);
  sampler->accept_prompt(std::vector<int>(r.prompt.begin(), r.prompt.end()));
  return sampler;
}

BranchLimits RequestTable::limits(RequestId id, int32_t max_len) const {
  const RequestState& r = at(id);
  return {r.params.max_tokens.value_or(max_len - int32_t(r.prompt.size())), max_len};
}

StepEvent RequestTable::sample(RequestId id, int branch, Sampler& sampler,
                               std::span<const float> logits, int32_t generated, int32_t len,
                               BranchLimits limits) {
  const RequestState& r = at(id);
  GeneratedToken t = draw_token(sampler, logits, r.logprobs, top_);
  ++tokens_generated_;
  StepEvent ev{id, branch, std::nullopt, std::nullopt};
  // A grammar allows an end token only where its output is whole: it ends
  // the branch even with ignore_eos.
  if (is_eos(t.id) && (!r.params.ignore_eos || r.params.grammar)) {
    ev.finish = FinishReason::Stop;
    return ev;
  }
  sampler.accept(t.id);
  ev.token = std::move(t);
  if (generated + 1 >= limits.max_tokens || len + 1 >= limits.max_len)
    ev.finish = FinishReason::Length;
  return ev;
}

void RequestTable::end_branches(RequestId id, int count) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) return;
  it->second.open -= count;
  if (it->second.open <= 0) requests_.erase(it);
}

bool RequestTable::is_eos(int32_t token) const {
  return std::find(eos_token_ids_.begin(), eos_token_ids_.end(), token) != eos_token_ids_.end();
}

}  // namespace kvforge
