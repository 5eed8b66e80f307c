#include "engine/static_pipeline/static_batch_engine.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "engine/static_pipeline/fingerprint.h"

namespace kvforge {

StaticBatchEngine::StaticBatchEngine(const Model& model, ThreadPool& pool, PlanSet plans,
                                     StaticBatchOptions options)
    : model_(model),
      runner_(model, pool, std::move(plans), options.comm),
      options_(std::move(options)),
      requests_(model.config().n_vocab, options_.eos_token_ids),
      slots_(size_t(runner_.slots())),
      step_tokens_(size_t(runner_.slots()), kIdleSlot),
      kv_bytes_(runner_.cache().bytes()) {
  for (Slot& slot : slots_) slot.tokens.reserve(size_t(runner_.capacity()));
  open_disk_tier();
}

void StaticBatchEngine::open_disk_tier() {
  const StaticBatchOptions& o = options_;
  if (o.kv_disk_dir.empty()) return;
  if (runner_.cache().ring_positions() > 0) {
    const std::string msg = "KV disk tier " + o.kv_disk_dir +
                            " is off: the model has sliding-window layers, whose slots keep "
                            "only their window";
    if (o.on_warning)
      o.on_warning(msg);
    else
      std::fprintf(stderr, "kvforge: warning: %s\n", msg.c_str());
    return;
  }
  const int32_t bs = o.kv_disk_block_size;
  const KvBlockIdentity id{model_fingerprint(model_), runner_.config().kv_format, bs,
                           runner_.cache().run_bytes(bs)};
  disk_ = std::make_unique<KvDiskTier>(o.kv_disk_dir, uint64_t(o.kv_disk_gib * 1073741824.0), id,
                                       o.on_warning);
  tier_ = std::make_unique<StaticPrefixTier>(*disk_, runner_);
}

void StaticBatchEngine::check_request(std::span<const int32_t> prompt, const SamplingParams& params,
                                      int n, LogprobOptions lp) const {
  const std::string slots = std::to_string(runner_.slots());
  requests_.check(prompt, params, n, lp, runner_.slots(),
                  "[1, " + slots + "] (one static slot per branch, --static-slots " + slots + ")");
  const StaticConfig& c = runner_.config();
  if (int64_t(prompt.size()) > c.max_prompt_len && options_.overflow == OverflowPolicy::Error)
    throw RequestRejected("request: prompt of " + std::to_string(prompt.size()) +
                          " tokens exceeds the static pipeline's max_prompt_len of " +
                          std::to_string(c.max_prompt_len) +
                          " (--max-prompt-len; or --overflow truncate-left keeps the last " +
                          std::to_string(c.max_prompt_len) + " tokens)");
  const int64_t kept = std::min<int64_t>(int64_t(prompt.size()), c.max_prompt_len);
  RequestTable::check_length(kept, params, c.capacity(),
                             "the static slot capacity of " + std::to_string(c.capacity()) +
                                 " tokens (max_prompt_len " + std::to_string(c.max_prompt_len) +
                                 " + min_response_len " + std::to_string(c.min_response_len) + ")");
}

RequestId StaticBatchEngine::add_request(std::span<const int32_t> prompt,
                                         const SamplingParams& params, int n,
                                         LogprobOptions logprobs) {
  check_request(prompt, params, n, logprobs);
  const RequestId id =
      requests_.add(fit_prompt(prompt, runner_.config(), options_.overflow), params, n, logprobs);
  waiting_.push_back(id);
  return id;
}

std::vector<StepEvent> StaticBatchEngine::step() {
  std::vector<StepEvent> events;
  if (!has_unfinished()) return events;
  decode_active(events);
  admit_waiting(events);
  ++steps_;
  return events;
}

void StaticBatchEngine::decode_active(std::vector<StepEvent>& events) {
  int32_t active = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    step_tokens_[i] = slots_[i].request >= 0 ? slots_[i].next_token : kIdleSlot;
    if (step_tokens_[i] != kIdleSlot) ++active;
  }
  if (active == 0) return;
  const std::span<const float> logits = runner_.decode(step_tokens_);
  tokens_computed_ += active;
  const size_t n_vocab = size_t(model_.config().n_vocab);
  // step_tokens_ still says who took part: sample() may free slots as it goes.
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (step_tokens_[i] == kIdleSlot) continue;
    slots_[i].tokens.push_back(step_tokens_[i]);
    sample(int32_t(i), logits.subspan(i * n_vocab, n_vocab), events);
  }
}

void StaticBatchEngine::admit_waiting(std::vector<StepEvent>& events) {
  while (!waiting_.empty()) {
    const RequestId id = waiting_.front();
    const RequestState& r = requests_.at(id);
    if (runner_.slots() - occupied_ < r.n) return;  // first come, first served: no overtaking
    waiting_.pop_front();
    const std::vector<int32_t> prompt = r.prompt;  // `r` may be erased by the last sample()
    // Claim every branch's slot before sampling: the request lives until the last one finishes.
    std::vector<int32_t> claimed;
    for (int branch = 0; branch < r.n; ++branch) claimed.push_back(claim_slot(id, branch, prompt));
    // Each branch fills its own slot (the plans have no slot-to-slot copy).
    for (int32_t s : claimed) sample(s, fill_slot(s, prompt), events);
  }
}

int32_t StaticBatchEngine::claim_slot(RequestId id, int branch, std::span<const int32_t> prompt) {
  int32_t best = -1, best_kept = -1;
  for (int32_t s = 0; s < runner_.slots(); ++s) {
    if (slots_[size_t(s)].request >= 0) continue;
    const int32_t kept = reusable(s, prompt);
    if (kept > best_kept) {
      best = s;
      best_kept = kept;
    }
  }
  Slot& slot = slots_[size_t(best)];
  slot.request = id;
  slot.branch = branch;
  slot.sampler = requests_.make_sampler(id, branch);
  // The last token's K/V is never needed, so prompt + generated may reach the capacity.
  slot.limits = requests_.limits(id, runner_.capacity());
  slot.generated = 0;
  slot.next_token = kIdleSlot;
  ++occupied_;
  return best;
}

int32_t StaticBatchEngine::reusable(int32_t index, std::span<const int32_t> prompt) const {
  const Slot& slot = slots_[size_t(index)];
  // At least the last prompt token is computed: its logits give the first sample.
  const size_t limit = std::min(slot.tokens.size(), prompt.size() - 1);
  size_t common = 0;
  while (common < limit && slot.tokens[common] == prompt[common]) ++common;
  // The rest goes through the generate plan one token at a time: beyond a
  // prefill chunk of it, recomputing the whole prompt chunk by chunk is cheaper.
  if (prompt.size() - common > size_t(runner_.config().prefill_chunk)) return 0;
  // A sliding-window ring keeps only the last positions the slot wrote.
  if (!runner_.window_intact(index, int32_t(common))) return 0;
  return int32_t(common);
}

std::span<const float> StaticBatchEngine::fill_slot(int32_t index,
                                                    std::span<const int32_t> prompt) {
  Slot& slot = slots_[size_t(index)];
  int32_t kept = reusable(index, prompt);
  const int32_t restored = tier_ ? tier_->fetch(prompt, kept) : 0;
  const bool from_disk = restored > kept;  // stats().disk counts these tokens
  if (from_disk) {
    tier_->install(index);
    kept = restored;
  } else {
    if (runner_.length(index) != kept) runner_.truncate(index, kept);
    tokens_reused_ += kept;
  }
  tokens_computed_ += int64_t(prompt.size()) - kept;
  slot.tokens.assign(prompt.begin(), prompt.end());  // the kept part is the prompt's own
  std::span<const float> logits;
  if (kept == 0 || from_disk) {
    logits = runner_.prefill(index, prompt, kept);
  } else {
    for (size_t i = size_t(kept); i < prompt.size(); ++i)
      logits = runner_.decode_one(index, prompt[i]);
  }
  if (tier_) tier_->store(index, prompt);  // reads the cache only: `logits` stays valid
  return logits;
}

void StaticBatchEngine::sample(int32_t index, std::span<const float> logits,
                               std::vector<StepEvent>& events) {
  Slot& slot = slots_[size_t(index)];
  const int32_t prompt_len = int32_t(requests_.at(slot.request).prompt.size());
  StepEvent ev = requests_.sample(slot.request, slot.branch, *slot.sampler, logits, slot.generated,
                                  prompt_len + slot.generated, slot.limits);
  if (ev.token) {
    slot.next_token = ev.token->id;
    ++slot.generated;
  }
  const bool done = ev.finish.has_value();
  events.push_back(std::move(ev));
  if (done) free_slot(index);
}

void StaticBatchEngine::free_slot(int32_t index) {
  Slot& slot = slots_[size_t(index)];
  requests_.end_branches(slot.request, 1);
  slot.request = -1;
  slot.sampler.reset();
  slot.next_token = kIdleSlot;
  if (!options_.reuse_slots) {
    runner_.release(index);
    slot.tokens.clear();
  }
  --occupied_;
}

bool StaticBatchEngine::abort(RequestId id) {
  bool found = false;
  const auto w = std::find(waiting_.begin(), waiting_.end(), id);
  if (w != waiting_.end()) {
    waiting_.erase(w);
    found = true;
  }
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].request == id) {
      free_slot(int32_t(i));
      found = true;
    }
  requests_.erase(id);
  return found;
}

bool StaticBatchEngine::stop_branch(RequestId id, int branch) {
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].request == id && slots_[i].branch == branch) {
      free_slot(int32_t(i));
      return true;
    }
  return false;
}

EngineStats StaticBatchEngine::stats() const {
  EngineStats s;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].request < 0) continue;
    ++s.running;
    s.kv_slots_used += runner_.length(int32_t(i));
  }
  for (RequestId id : waiting_) s.waiting += requests_.at(id).n;
  s.kv_blocks_total = runner_.slots();
  s.kv_blocks_used = occupied_;
  s.kv_blocks_free = runner_.slots() - occupied_;
  s.kv_slots_allocated = int64_t(occupied_) * runner_.capacity();
  s.steps = steps_;
  s.tokens_computed = tokens_computed_;
  s.tokens_generated = requests_.tokens_generated();
  s.prefix.tokens_reused = tokens_reused_;
  if (disk_) s.disk = disk_->stats();
  return s;
}

int32_t StaticBatchEngine::prompt_tokens_kept(int32_t n) const {
  if (options_.overflow != OverflowPolicy::TruncateLeft) return n;
  return std::min(n, runner_.config().max_prompt_len);
}

}  // namespace kvforge
