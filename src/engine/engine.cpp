// The engine loop shared by both KV modes: requests, sampling, forks,
// aborts, lockstep, stats. See include/kvforge/engine.h and engine_impl.h.
#include "kvforge/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "core/enum_names.h"
#include "engine/engine_impl.h"
#include "model/model_fingerprint.h"

namespace kvforge {

constexpr EnumName<FinishReason> kFinishReasonNames[] = {
    {FinishReason::Stop, "stop"},
    {FinishReason::Length, "length"},
    {FinishReason::Abort, "abort"},
};

const char* finish_reason_name(FinishReason reason) { return name_of(reason, kFinishReasonNames); }

std::unique_ptr<KvDiskTier> open_disk_tier(const Model& model, const EngineOptions& o,
                                           KvFormat format, int32_t block_size, size_t block_bytes,
                                           const std::string& refusal) {
  if (o.kv_disk_dir.empty()) return nullptr;
  if (!refusal.empty()) {
    const std::string msg = "KV disk tier " + o.kv_disk_dir + " is off: " + refusal;
    if (o.on_warning)
      o.on_warning(msg);
    else
      std::fprintf(stderr, "kvforge: warning: %s\n", msg.c_str());
    return nullptr;
  }
  KvBlockIdentity id{model_fingerprint(model), format, block_size, block_bytes};
  id.state_bytes = model.rank_config().state_bytes_per_sequence();  // hybrid models' snapshots
  return std::make_unique<KvDiskTier>(o.kv_disk_dir, uint64_t(o.kv_disk_gib * 1073741824.0), id,
                                      o.on_warning);
}

void Engine::Impl::check_request(std::span<const int32_t> prompt, const SamplingParams& params,
                                 int n, LogprobOptions lp) const {
  const int max_n = slot_kv ? slot_kv->runner.slots() : options.max_seqs;
  const std::string range = slot_kv ? "[1, " + std::to_string(max_n) +
                                          "] (one static slot per branch, --static-slots " +
                                          std::to_string(max_n) + ")"
                                    : "[1, max_seqs = " + std::to_string(max_n) + "]";
  requests.check(prompt, params, n, lp, max_n, range);
  if (params.context_shift.value_or(false) && !options.context_shift) {
    EngineOptions o = options;
    o.context_shift = true;
    try {
      check_context_shift(model, o, max_len,
                          slot_kv ? options.block_size : paged->blocks.block_size());
    } catch (const std::invalid_argument& e) {
      throw RequestRejected(std::string("request: ") + e.what());
    }
  }
  if (slot_kv)
    check_static_request(prompt, params, n);
  else
    check_paged_request(prompt, params, n);
}

std::unique_ptr<Sequence> Engine::Impl::make_sequence(RequestId id, int branch) {
  const RequestState& r = requests.at(id);
  const BranchLimits limits = requests.limits(id, max_len);
  auto seq = std::make_unique<Sequence>();
  seq->id = next_seq++;
  seq->request = id;
  seq->branch = branch;
  seq->tokens = r.prompt;
  seq->n_prompt = int32_t(r.prompt.size());
  // A context shift makes room: only max_tokens (if given) or the end of the text ends it.
  const bool shifts = r.params.context_shift.value_or(options.context_shift);
  const std::optional<int32_t> keep = r.params.n_keep;
  seq->shifts = shifts;
  seq->n_keep = !keep ? options.n_keep : *keep < 0 ? seq->n_prompt : *keep;
  seq->max_len = shifts ? INT32_MAX : limits.max_len;
  seq->max_tokens = shifts && !r.params.max_tokens ? INT32_MAX : limits.max_tokens;
  seq->sampler = requests.make_sampler(id, branch);
  return seq;
}

Sequence& Engine::Impl::add_branch(const Sequence& root, int branch) {
  std::unique_ptr<Sequence> child = make_sequence(root.request, branch);
  child->tokens = root.tokens;
  Sequence& added = *child;
  scheduler.add_running(std::move(child));
  return added;
}

void Engine::Impl::sample(Sequence& seq, std::span<const float> logits,
                          std::vector<StepEvent>& events, std::vector<Sequence*>& finished) {
  if (options.on_logits) options.on_logits(seq.request, seq.branch, logits);
  StepEvent ev = requests.sample(seq.request, seq.branch, *seq.sampler, logits, seq.n_generated(),
                                 seq.len(), {seq.max_tokens, seq.max_len});
  ev.cached_tokens = seq.n_cached;
  if (ev.token) seq.tokens.push_back(ev.token->id);
  if (ev.finish) finished.push_back(&seq);
  events.push_back(std::move(ev));
}

void Engine::Impl::remove(Sequence* seq) {
  requests.end_branches(seq->request, seq->width());
  scheduler.remove(seq);
}

void Engine::Impl::record_computed(std::span<const ScheduledChunk> chunks) {
  computed.clear();
  for (const ScheduledChunk& c : chunks) {
    Sequence& seq = *c.seq;
    seq.n_computed = c.start + c.n;
    kv.mark_computed(seq.id, seq.tokens, seq.n_computed);
    if (tier) computed.push_back({seq.id, seq.tokens, c.start, seq.n_computed, seq.n_prompt});
  }
  // While the new full blocks still hold what was just computed.
  if (tier) tier->store_computed(computed);
}

Engine::Engine(const Model& model, ThreadPool& pool, EngineOptions options)
    : impl_(std::make_unique<Impl>(model, options,
                                   std::make_unique<PagedKv>(model, pool, options))) {}

Engine::Engine(const Model& model, ThreadPool& pool, PlanSet plans, EngineOptions options)
    : impl_(std::make_unique<Impl>(
          model, options, std::make_unique<SlotKv>(model, pool, std::move(plans), options))) {}

Engine::~Engine() = default;

RequestId Engine::add_request(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                              LogprobOptions logprobs) {
  Impl& m = *impl_;
  m.check_request(prompt, params, n, logprobs);
  const std::span<const int32_t> kept =
      m.slot_kv ? fit_prompt(prompt, m.slot_kv->runner.config(), m.options.overflow) : prompt;
  const RequestId id = m.requests.add(kept, params, n, logprobs);
  auto seq = m.make_sequence(id, 0);
  seq->pending_forks = n - 1;
  m.scheduler.add(std::move(seq));
  if (m.leader) m.leader->added(id, prompt, m.requests.at(id).params, n, logprobs);
  return id;
}

std::vector<StepEvent> Engine::step() {
  Impl& m = *impl_;
  std::vector<StepEvent> events;
  if (m.leader) m.leader->step();
  if (m.scheduler.empty()) return events;
  const auto start = std::chrono::steady_clock::now();
  try {
    if (m.slot_kv)
      m.step_static(events);
    else
      m.step_paged(events);
  } catch (const CommunicationError&) {
    if (m.leader) m.leader->broke();
    throw;
  }
  m.step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return events;
}

bool Engine::abort(RequestId id) {
  if (impl_->leader) impl_->leader->aborted(id);
  const std::vector<Sequence*> seqs = impl_->scheduler.find_request(id);
  for (Sequence* s : seqs) impl_->remove(s);
  return !seqs.empty();
}

bool Engine::stop_branch(RequestId id, int branch) {
  if (impl_->leader) impl_->leader->stopped(id, branch);
  for (Sequence* s : impl_->scheduler.find_request(id))
    if (s->branch == branch && s->pending_forks == 0) {
      impl_->remove(s);
      return true;
    }
  return false;
}

bool Engine::has_unfinished() const { return !impl_->scheduler.empty(); }

void Engine::lead(Communicator& comm) {
  impl_->leader = std::make_unique<LockstepLeader>(comm, [this] { return has_unfinished(); });
}

void Engine::idle() {
  if (impl_->leader) impl_->leader->idle();
}

EngineStats Engine::stats() const {
  const Impl& m = *impl_;
  EngineStats s;
  s.running = m.scheduler.n_running();
  if (m.slot_kv)
    m.static_stats(s);
  else
    m.paged_stats(s);
  s.steps = m.steps;
  s.tokens_computed = m.tokens_computed;
  s.tokens_generated = m.requests.tokens_generated();
  s.context_shifts = m.context_shifts;
  s.step_seconds = m.step_seconds;
  const CommStats c = m.options.comm ? m.options.comm->stats() : CommStats{};
  s.comm_messages = c.messages;
  s.comm_bytes_sent = c.bytes_sent;
  s.comm_bytes_received = c.bytes_received;
  s.comm_seconds = c.seconds;
  return s;
}

int32_t Engine::block_size() const {
  return impl_->slot_kv ? impl_->slot_kv->runner.capacity() : impl_->paged->blocks.block_size();
}
int32_t Engine::n_blocks() const {
  return impl_->slot_kv ? impl_->slot_kv->runner.slots() : impl_->paged->blocks.n_blocks();
}
size_t Engine::kv_pool_bytes() const {
  if (impl_->slot_kv) return impl_->slot_kv->kv_bytes;
  const PagedKv& p = *impl_->paged;
  return p.cache.bytes() + (p.states ? p.states->bytes() : 0) +
         (p.snapshots ? p.snapshots->bytes() : 0);
}
int32_t Engine::max_sequence_tokens() const { return impl_->max_len; }
int32_t Engine::prompt_tokens_kept(int32_t n) const {
  const Impl& m = *impl_;
  if (!m.slot_kv || m.options.overflow != OverflowPolicy::TruncateLeft) return n;
  return std::min(n, m.slot_kv->runner.config().max_prompt_len);
}
const EngineOptions& Engine::options() const { return impl_->options; }
const StaticRunner* Engine::static_runner() const {
  return impl_->slot_kv ? &impl_->slot_kv->runner : nullptr;
}

}  // namespace kvforge
