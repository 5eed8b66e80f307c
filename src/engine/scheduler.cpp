#include "engine/scheduler.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvforge {

Scheduler::Scheduler(KvManager& kv, SchedulerOptions options) : kv_(kv), options_(options) {
  if (options_.max_seqs < 1)
    throw std::invalid_argument("scheduler: max_seqs must be >= 1, got " +
                                std::to_string(options_.max_seqs));
  if (options_.max_batched_tokens < 1)
    throw std::invalid_argument("scheduler: max_batched_tokens must be >= 1, got " +
                                std::to_string(options_.max_batched_tokens));
}

void Scheduler::add(std::unique_ptr<Sequence> seq) { waiting_.push_back(std::move(seq)); }

void Scheduler::add_running(std::unique_ptr<Sequence> seq) {
  // Behind the last running sequence of the same request: forks count as
  // admitted together with their parent.
  auto pos = running_.end();
  for (auto it = running_.begin(); it != running_.end(); ++it)
    if ((*it)->request == seq->request) pos = it + 1;
  running_.insert(pos, std::move(seq));
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int32_t budget = options_.max_batched_tokens;
  land_loads(false);
  schedule_decodes(out, budget);
  schedule_prefill_chunks(out, budget);
  admit_waiting(out, budget);
  // Nothing to compute before a load lands: waiting for it stalls no one.
  while (out.chunks.empty() && n_loading_ > 0) {
    land_loads(true);
    schedule_decodes(out, budget);
    schedule_prefill_chunks(out, budget);
  }
  return out;
}

std::vector<Sequence*> Scheduler::land_loads(bool wait) {
  std::vector<Sequence*> landed;
  if (n_loading_ == 0) return landed;
  for (const LoadedPrefix& l : tier_->take_loaded(wait)) {
    const auto it = std::find_if(running_.begin(), running_.end(),
                                 [&](const auto& s) { return s->id == l.seq && s->loading; });
    if (it == running_.end())
      throw std::logic_error("scheduler: a load ended for sequence " + std::to_string(l.seq) +
                             ", which is not loading");
    Sequence& seq = **it;
    const int32_t n = seq.n_computed + l.blocks * tier_->block_size();
    kv_.truncate(seq.id, n);  // blocks whose files failed are recomputed
    kv_.mark_computed(seq.id, seq.tokens, n);
    if (!seq.preempted) seq.n_cached += l.blocks * tier_->block_size();
    seq.n_computed = n;
    seq.loading = false;
    --n_loading_;
    landed.push_back(&seq);
  }
  return landed;
}

bool Scheduler::begin_load(Sequence& seq, int32_t from_block, int32_t n, int32_t eligible) {
  if (n == 0) {
    if (tier_ && eligible > 0) tier_->note_misses(eligible);
    return false;
  }
  tier_->start_load(seq.id, seq.tokens, from_block, n, eligible);
  seq.loading = true;
  ++n_loading_;
  return true;
}

bool Scheduler::load_prefix(Sequence& seq) {
  if (!tier_) return false;
  const int32_t bs = tier_->block_size();
  const int32_t from_block = seq.n_computed / bs;
  // As in the paged policy: whole blocks past the kept ones, never the last token.
  const int32_t eligible = (seq.len() - 1) / bs - from_block;
  const int32_t n = eligible > 0 ? tier_->available(seq.tokens, from_block, eligible) : 0;
  if (n > 0) seq.n_computed = from_block * bs;  // the load lands after the kept whole blocks
  return begin_load(seq, from_block, n, eligible);
}

void Scheduler::release(Sequence& seq) {
  if (seq.loading) {
    tier_->cancel_load(seq.id);
    seq.loading = false;
    --n_loading_;
  }
  kv_.free(seq.id);
}

int Scheduler::running_width() const {
  int w = 0;
  for (const auto& s : running_) w += s->width();
  return w;
}

void Scheduler::preempt_last() {
  std::unique_ptr<Sequence> seq = std::move(running_.back());
  running_.pop_back();
  release(*seq);
  seq->n_computed = 0;
  seq->preempted = true;
  waiting_.push_front(std::move(seq));
  ++preemptions_;
}

int32_t Scheduler::appendable(const Sequence& seq, int32_t want) const {
  if (want <= 0) return 0;
  if (kv_.can_append(seq.id, want)) return want;
  int32_t lo = 0, hi = want;  // can_append(lo) holds, can_append(hi) does not
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    (kv_.can_append(seq.id, mid) ? lo : hi) = mid;
  }
  return lo;
}

void Scheduler::schedule_decodes(SchedulerOutput& out, int32_t& budget) {
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence& seq = *running_[i];
    if (seq.loading || seq.n_pending() != 1) continue;
    // Everything behind i is newer and not yet scheduled: preempt from the
    // back until the decode fits, this sequence itself last.
    bool preempted_self = false;
    while (!kv_.can_append(seq.id, 1)) {
      preempted_self = i + 1 == running_.size();
      preempt_last();
      ++out.n_preempted;
      if (preempted_self) break;
    }
    if (preempted_self) break;
    kv_.append(seq.id, 1);
    out.chunks.push_back({&seq, seq.n_computed, 1, true});
    --budget;
    ++out.n_tokens;
  }
}

void Scheduler::schedule_prefill_chunks(SchedulerOutput& out, int32_t& budget) {
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence& seq = *running_[i];
    if (seq.loading || seq.n_pending() <= 1) continue;
    const int32_t want = std::min(seq.n_pending(), budget);
    int32_t n = appendable(seq, want);
    // Prefill chunks only fill what decodes leave, except when nothing at
    // all could run: then the oldest stuck sequence makes room by preemption.
    while (n == 0 && out.chunks.empty() && i + 1 < running_.size()) {
      preempt_last();
      ++out.n_preempted;
      n = appendable(seq, want);
    }
    if (n == 0) continue;
    kv_.append(seq.id, n);
    out.chunks.push_back({&seq, seq.n_computed, n, n == seq.n_pending()});
    budget -= n;
    out.n_tokens += n;
  }
}

int32_t Scheduler::tier_blocks(const Sequence& seq, int32_t ram) const {
  if (!tier_) return 0;
  const int32_t bs = tier_->block_size();
  const std::span<const int32_t> tokens(seq.tokens);
  // As in RAM: whole blocks only, and the last token is always computed.
  const int32_t eligible = (seq.len() - 1) / bs - ram / bs;
  if (eligible <= 0) return 0;
  const int32_t on_tier = tier_->available(tokens, ram / bs, eligible);
  int32_t lo = 0, hi = on_tier + 1;  // lo blocks fit beside one computed token; hi do not
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    (kv_.can_admit(tokens, ram + mid * bs + 1, seq.width()) ? lo : hi) = mid;
  }
  return lo;
}

void Scheduler::admit_waiting(SchedulerOutput& out, int32_t& budget) {
  if (out.n_preempted > 0) return;
  const int32_t bs = tier_ ? tier_->block_size() : 1;  // only tier admissions count blocks
  while (!waiting_.empty() && budget > 0) {
    Sequence& seq = *waiting_.front();
    if (!running_.empty() && running_width() + seq.width() > options_.max_seqs) break;
    const std::span<const int32_t> tokens(seq.tokens);
    const int32_t ram = kv_.cached_prefix(tokens);
    if (!kv_.can_admit(tokens, ram + 1, seq.width())) break;  // first come, first served
    const int32_t on_tier = tier_blocks(seq, ram);
    // Restored blocks first, computed ones once they landed (a later step).
    const int32_t cached = ram + on_tier * bs;
    const int32_t most = on_tier > 0 ? cached : ram + std::min(seq.len() - ram, budget);
    int32_t lo = ram + 1, hi = most + 1;  // can_admit(lo) holds; hi is out of range or fails
    if (kv_.can_admit(tokens, most, seq.width())) lo = most;
    while (hi - lo > 1) {
      const int32_t mid = lo + (hi - lo) / 2;
      (kv_.can_admit(tokens, mid, seq.width()) ? lo : hi) = mid;
    }
    const int32_t target = lo;
    const int32_t reused = kv_.admit(seq.id, tokens, target);
    if (reused != ram)
      throw std::logic_error("scheduler: block manager reused " + std::to_string(reused) + " of " +
                             std::to_string(target) + " tokens, cached_prefix said " +
                             std::to_string(ram));
    seq.n_computed = ram;
    if (!seq.preempted) seq.n_cached = ram;
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    const int32_t eligible = (seq.len() - 1) / bs - ram / bs;  // prompt blocks past RAM's
    if (begin_load(seq, ram / bs, on_tier, eligible)) continue;
    const int32_t n = target - ram;
    out.chunks.push_back({&seq, ram, n, target == seq.len()});
    budget -= n;
    out.n_tokens += n;
  }
}

SchedulerOutput Scheduler::schedule_decodes() {
  SchedulerOutput out;
  int32_t budget = options_.max_batched_tokens;
  schedule_decodes(out, budget);
  return out;
}

std::optional<ScheduledChunk> Scheduler::admit_next() {
  if (waiting_.empty()) return std::nullopt;
  Sequence& seq = *waiting_.front();
  if (running_width() + seq.width() > options_.max_seqs) return std::nullopt;
  const std::span<const int32_t> tokens(seq.tokens);
  if (!kv_.can_admit(tokens, seq.len(), seq.width())) return std::nullopt;
  seq.n_computed = kv_.admit(seq.id, tokens, seq.len());
  running_.push_back(std::move(waiting_.front()));
  waiting_.pop_front();
  return ScheduledChunk{&seq, seq.n_computed, seq.n_pending(), true};
}

int32_t Scheduler::waiting_width() const {
  int32_t w = 0;
  for (const auto& s : waiting_) w += s->width();
  return w;
}

void Scheduler::remove(const Sequence* seq) {
  for (auto it = running_.begin(); it != running_.end(); ++it)
    if (it->get() == seq) {
      release(**it);
      running_.erase(it);
      return;
    }
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
    if (it->get() == seq) {
      waiting_.erase(it);
      return;
    }
  throw std::logic_error("scheduler: removing unknown sequence " + std::to_string(seq->id));
}

std::vector<Sequence*> Scheduler::find_request(RequestId request) const {
  std::vector<Sequence*> found;
  for (const auto& s : running_)
    if (s->request == request) found.push_back(s.get());
  for (const auto& s : waiting_)
    if (s->request == request) found.push_back(s.get());
  return found;
}

}  // namespace kvforge
