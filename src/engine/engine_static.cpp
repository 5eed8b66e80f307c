// The engine's static-slot mode: the static slot manager under the
// scheduler's static policy (decode every slot, then admit whole prompts),
// StaticRunner and its compiled plans as the step executor.
#include <algorithm>
#include <string>

#include "engine/engine_impl.h"

namespace kvforge {

namespace {

// The disk tier for slots of `runner`, or null (see open_disk_tier). A
// window layer's ring keeps only its window: no whole prefix to write.
// Tensor-parallel ranks load off their engine threads: a load could land
// in different steps on different ranks, whose steps must match.
std::unique_ptr<KvDiskTier> open_slots_disk_tier(const Model& model, const EngineOptions& o,
                                                 StaticRunner& runner) {
  const StaticKvCache& cache = runner.cache();
  const KvFormat format = runner.config().kv_format;
  if (cache.ring_positions() > 0)
    return open_disk_tier(model, o, format, o.block_size, 0,
                          "the model has sliding-window layers, whose slots keep only their "
                          "window");
  if (model.tp() > 1)
    return open_disk_tier(model, o, format, o.block_size, 0,
                          "tensor-parallel ranks could restore a prefix in different steps");
  if (model.config().hybrid())
    return open_disk_tier(model, o, format, o.block_size, 0,
                          "hybrid models keep no recurrent states in the slots' disk tier yet");
  if (!cache.runs_supported())
    return open_disk_tier(model, o, format, o.block_size, 0,
                          "the model's shared-KV layers have no records of their own to write");
  return open_disk_tier(model, o, format, o.block_size, cache.run_bytes(o.block_size), "");
}

}  // namespace

SlotKv::SlotKv(const Model& model, ThreadPool& pool, PlanSet plans, const EngineOptions& o)
    : runner(model, pool, std::move(plans), o.comm),
      slots(runner, o.reuse_slots),
      disk(open_slots_disk_tier(model, o, runner)),
      kv_bytes(runner.cache().bytes()),
      step_tokens(size_t(runner.slots()), kIdleSlot),
      step_seqs(size_t(runner.slots()), nullptr) {
  if (disk) tier = std::make_unique<StaticPrefixTier>(*disk, runner, slots);
}

// The scheduler's static policy needs no token budget: a step decodes every
// slot, and admissions take whole prompts.
Engine::Impl::Impl(const Model& m, EngineOptions o, std::unique_ptr<SlotKv> s)
    : model(m),
      options(std::move(o)),
      slot_kv(std::move(s)),
      kv(slot_kv->slots),
      scheduler(kv, {slot_kv->runner.slots(), INT32_MAX}),
      n_ctx(slot_kv->runner.capacity()),
      max_len(slot_kv->runner.capacity()),
      requests(m.config().n_vocab, options.eos_token_ids) {
  check_context_shift(m, options, max_len, options.block_size);
  options.max_seqs = slot_kv->runner.slots();
  tier = slot_kv->tier.get();
  if (tier) scheduler.set_prefix_tier(slot_kv->tier.get());
}

void Engine::Impl::check_static_request(std::span<const int32_t> prompt,
                                        const SamplingParams& params, int) const {
  const StaticConfig& c = slot_kv->runner.config();
  if (int64_t(prompt.size()) > c.max_prompt_len && options.overflow == OverflowPolicy::Error)
    throw RequestRejected("request: prompt of " + std::to_string(prompt.size()) +
                          " tokens exceeds the static pipeline's max_prompt_len of " +
                          std::to_string(c.max_prompt_len) +
                          " (--max-prompt-len; or --overflow truncate-left keeps the last " +
                          std::to_string(c.max_prompt_len) + " tokens)");
  const int64_t kept = std::min<int64_t>(int64_t(prompt.size()), c.max_prompt_len);
  RequestTable::check_length(kept, params, c.capacity(),
                             "the static slot capacity of " + std::to_string(c.capacity()) +
                                 " tokens (max_prompt_len " + std::to_string(c.max_prompt_len) +
                                 " + min_response_len " + std::to_string(c.min_response_len) + ")",
                             params.context_shift.value_or(options.context_shift));
}

// Decodes, then the slots whose prefix loads landed are filled, then
// admissions. With nothing else to run, the step waits for a load.
void Engine::Impl::step_static(std::vector<StepEvent>& events) {
  shift_full_sequences();
  const SchedulerOutput decodes = scheduler.schedule_decodes();
  if (!decodes.chunks.empty()) decode_slots(decodes, events);
  for (Sequence* seq : scheduler.land_loads(false)) fill_slot(*seq, true, events);
  while (const std::optional<ScheduledChunk> admitted = scheduler.admit_next())
    admit_to_slots(*admitted, events);
  if (events.empty() && scheduler.n_loading() > 0)
    for (Sequence* seq : scheduler.land_loads(true)) fill_slot(*seq, true, events);
  ++steps;
}

// One generate plan for every slot holding a sampled token; idle slots are
// padding rows. Branches sample in slot order.
void Engine::Impl::decode_slots(const SchedulerOutput& plan, std::vector<StepEvent>& events) {
  SlotKv& s = *slot_kv;
  std::fill(s.step_tokens.begin(), s.step_tokens.end(), kIdleSlot);
  std::fill(s.step_seqs.begin(), s.step_seqs.end(), nullptr);
  for (const ScheduledChunk& c : plan.chunks) {
    const int32_t slot = s.slots.slot_of(c.seq->id);
    s.step_tokens[size_t(slot)] = c.seq->tokens[size_t(c.start)];
    s.step_seqs[size_t(slot)] = c.seq;
  }
  const std::span<const float> logits = s.runner.decode(s.step_tokens);
  tokens_computed += plan.n_tokens;
  record_computed(plan.chunks);
  const size_t n_vocab = size_t(model.config().n_vocab);
  std::vector<Sequence*> finished;
  for (size_t i = 0; i < s.step_seqs.size(); ++i)
    if (s.step_seqs[i])
      sample(*s.step_seqs[i], logits.subspan(i * n_vocab, n_vocab), events, finished);
  for (Sequence* seq : finished) remove(seq);
}

// Every branch takes its own slot before any is filled (the plans have no
// slot-to-slot copy); then each loads its prompt blocks past what its slot
// keeps from the tier (filled when the load lands) or is filled now. A later
// branch finds on the tier what an earlier one wrote through.
void Engine::Impl::admit_to_slots(const ScheduledChunk& admitted, std::vector<StepEvent>& events) {
  Sequence& root = *admitted.seq;
  std::vector<Sequence*> branches{&root};
  for (int b = 1; b <= root.pending_forks; ++b) {
    Sequence& child = add_branch(root, b);
    child.n_computed = kv.admit(child.id, child.tokens, child.len());
    branches.push_back(&child);
  }
  root.pending_forks = 0;
  for (Sequence* seq : branches) {
    const int32_t kept = seq->n_computed;  // what the slot manager keeps of the slot
    if (scheduler.load_prefix(*seq)) {
      tokens_reused += seq->n_computed;  // the kept whole blocks
      seq->n_cached = seq->n_computed;   // the restored ones added when they land
      continue;
    }
    slot_kv->slots.truncate(seq->id, kept);
    tokens_reused += kept;
    seq->n_cached = kept;
    fill_slot(*seq, false, events);
  }
}

void Engine::Impl::fill_slot(Sequence& seq, bool restored, std::vector<StepEvent>& events) {
  SlotKv& s = *slot_kv;
  const int32_t slot = s.slots.slot_of(seq.id);
  const std::span<const int32_t> prompt(seq.tokens);
  const int32_t kept = seq.n_computed;
  tokens_computed += int64_t(prompt.size()) - kept;
  std::span<const float> logits;
  if (kept == 0 || restored) {
    logits = s.runner.prefill(slot, prompt, kept);
  } else {
    for (size_t i = size_t(kept); i < prompt.size(); ++i)
      logits = s.runner.decode_one(slot, prompt[i]);
  }
  // The tier's write-through reads the cache only: `logits` stays valid.
  const ScheduledChunk filled{&seq, kept, seq.len() - kept, true};
  record_computed({&filled, 1});
  std::vector<Sequence*> finished;
  sample(seq, logits, events, finished);
  for (Sequence* f : finished) remove(f);
}

void Engine::Impl::static_stats(EngineStats& s) const {
  const StaticSlotManager& slots = slot_kv->slots;
  s.waiting = scheduler.waiting_width();
  s.kv_blocks_total = slots.slots();
  s.kv_blocks_used = slots.occupied();
  s.kv_blocks_free = slots.slots() - slots.occupied();
  s.kv_slots_allocated = int64_t(slots.occupied()) * slot_kv->runner.capacity();
  s.kv_slots_used = slots.positions_filled();
  s.prefix.tokens_reused = tokens_reused;
  if (slot_kv->disk) s.disk = slot_kv->disk->stats();
}

}  // namespace kvforge
