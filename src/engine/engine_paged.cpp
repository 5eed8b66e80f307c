// The engine's paged mode: the block manager and the paged KV pool under the
// scheduler's paged policy, ModelRunner as the step executor.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <unordered_map>

#include "engine/engine_impl.h"
#include "engine/kv/kv_layer_groups.h"
#include "engine/kv/kv_pool_split.h"

namespace kvforge {
namespace {

int32_t context_of(const Model& model, const EngineOptions& o) {
  return o.n_ctx > 0 ? o.n_ctx : model.config().n_ctx_train;
}

void check_options(const EngineOptions& o) {
  const int32_t bs = o.block_size;
  if (bs < 1 || bs > 256 || (bs & (bs - 1)) != 0)
    throw std::invalid_argument("engine: block size must be a power of two in [1, 256], got " +
                                std::to_string(bs));
  if (o.kv_blocks < 0)
    throw std::invalid_argument("engine: kv_blocks must be >= 0, got " +
                                std::to_string(o.kv_blocks));
  if (o.kv_blocks == 0 && !(o.kv_memory_mib > 0))
    throw std::invalid_argument("engine: KV memory must be > 0 MiB, got " +
                                std::to_string(o.kv_memory_mib));
  if (o.n_ctx < 0)
    throw std::invalid_argument("engine: context must be >= 0, got " + std::to_string(o.n_ctx));
}

// --kv-memory less the state snapshots: what the state slots and blocks
// share, by the planner's rule (kv/kv_pool_split.h).
uint64_t kv_budget_bytes(const Model& model, const EngineOptions& o) {
  const uint64_t budget = uint64_t(std::floor(o.kv_memory_mib * 1048576.0));
  if (o.kv_blocks > 0) return budget;
  try {
    return kv_budget_after_snapshots(ModelShape::from_config(model.rank_config()), budget,
                                     o.state_snapshots);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("engine: ") + e.what() + " (--kv-memory " +
                                std::to_string(o.kv_memory_mib) + " MiB)");
  }
}

std::vector<int32_t> group_windows(const Model& model) {
  return KvLayerGroups::of(model.config()).windows();
}

// The recurrent-state slots of a hybrid model (0 otherwise): max_seqs with
// --kv-blocks, else what the budget holds at the engine's context, sized by
// the planner's rule (kv/kv_pool_split.h) so kv-plan prints the same split.
int32_t state_slots(const Model& model, const EngineOptions& o) {
  check_options(o);
  if (!model.config().hybrid()) return 0;
  if (o.kv_blocks > 0) return std::max(1, o.max_seqs);
  const ModelShape shape = ModelShape::from_config(model.rank_config());
  return int32_t(split_kv_pool(shape, o.kv_format, kv_budget_bytes(model, o), context_of(model, o),
                               o.block_size, std::max(1, o.max_seqs))
                     .state_slots);
}

// Blocks in the pool: --kv-blocks, else what --kv-memory holds after the
// state slots, capped at one full context per sequence that can run (more
// could never be used at once; a windowed layer group holds at most its
// window plus a chunk of each).
int32_t pool_blocks(const Model& model, const EngineOptions& o, int32_t slots) {
  if (o.kv_blocks > 0) return o.kv_blocks;
  const size_t per_block =
      PagedKvCache::block_bytes(model.rank_config(), o.block_size, o.kv_format);
  const uint64_t states = uint64_t(slots) * model.rank_config().state_bytes_per_sequence();
  const uint64_t budget = kv_budget_bytes(model, o);
  const double by_memory =
      budget > states ? std::floor(double(budget - states) / double(per_block)) : 0;
  if (by_memory < 1)
    throw std::invalid_argument(
        "engine: KV memory of " + std::to_string(o.kv_memory_mib) + " MiB holds no block (one " +
        "block of " + std::to_string(o.block_size) + " tokens takes " + std::to_string(per_block) +
        " bytes" +
        (slots > 0 ? ", after " + std::to_string(slots) + " recurrent-state slot(s) of " +
                         std::to_string(states / uint64_t(slots)) + " bytes"
                   : std::string()) +
        ")");
  const int64_t per_seq = BlockManager::max_blocks_for_seq(
      group_windows(model), o.block_size, context_of(model, o), std::max(1, o.max_batched_tokens));
  const int64_t needed = per_seq * (slots > 0 ? slots : std::max(1, o.max_seqs));
  return int32_t(std::min<double>({by_memory, double(needed), double(INT32_MAX / 2)}));
}

// Longest sequence the pool can hold alone, capped at the context: it can
// always be fed one token at a time. Without windows: n_blocks * block_size.
int32_t longest_sequence(const BlockManager& blocks, int32_t n_ctx) {
  int64_t lo = 0, hi = int64_t(n_ctx) + 1;  // lo fits, hi does not (or is past the context)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (blocks.max_blocks_for_seq(mid, 1) <= blocks.n_blocks() ? lo : hi) = mid;
  }
  return int32_t(lo);
}

// Why the disk tier cannot serve this engine; empty when it can.
std::string disk_tier_refusal(const Model& model, const EngineOptions& o,
                              const BlockManager& blocks) {
  if (!o.enable_prefix_cache) return "it needs the prefix cache";
  if (model.config().hybrid() && !(o.state_snapshots > 0))
    return "a hybrid model restores a prefix only with the recurrent-state snapshot after it, "
           "and state snapshots are off (--state-snapshots 0)";
  if (blocks.group_windows() != std::vector<int32_t>{0})
    return "the model has sliding-window layers, whose blocks the pool releases";
  if (model.tp() > 1) return "tensor-parallel ranks would each need their own files";
  if (!(o.kv_disk_gib > 0)) return "its size limit is not positive";
  return {};
}

// A hybrid model runs at most as many sequences as it has state slots.
EngineOptions limited_to_state_slots(EngineOptions o, const PagedKv& p) {
  if (p.states) o.max_seqs = std::min(o.max_seqs, p.states->n_slots());
  return o;
}

}  // namespace

PagedKv::PagedKv(const Model& model, ThreadPool& pool, const EngineOptions& o)
    // Hybrid models reuse no prefix: its K/V would come without the recurrent state after it.
    : n_state_slots(state_slots(model, o)),
      // A hybrid model reuses a prefix only with a snapshot of the state after it.
      blocks(pool_blocks(model, o, n_state_slots), o.block_size,
             o.enable_prefix_cache && (!model.config().hybrid() || o.state_snapshots > 0),
             group_windows(model)),
      states(n_state_slots > 0
                 ? std::make_unique<RecurrentStatePool>(model.rank_config(), n_state_slots)
                 : nullptr),
      snapshots(states && o.state_snapshots > 0 && o.enable_prefix_cache
                    ? std::make_unique<StateSnapshots>(model.rank_config(), o.state_snapshots)
                    : nullptr),
      hybrid(states ? std::make_unique<HybridKvManager>(blocks, *states, snapshots.get())
                    : nullptr),
      cache(model.rank_config(), blocks, o.kv_format),
      runner(model, cache, pool, o.comm ? *o.comm : one_process_communicator(),
             o.max_batched_tokens),
      disk(open_disk_tier(model, o, o.kv_format, blocks.block_size(), cache.block_bytes(),
                          o.kv_disk_dir.empty() ? "" : disk_tier_refusal(model, o, blocks))) {
  if (disk)
    tier = std::make_unique<DiskPrefixTier>(*disk, blocks, cache, hybrid.get(), snapshots.get());
  cache.attach_states(hybrid.get());
}

Engine::Impl::Impl(const Model& m, EngineOptions o, std::unique_ptr<PagedKv> p)
    : model(m),
      options(limited_to_state_slots(std::move(o), *p)),
      paged(std::move(p)),
      kv(paged->manager()),
      scheduler(kv, {options.max_seqs, options.max_batched_tokens}),
      n_ctx(context_of(m, options)),
      max_len(longest_sequence(paged->blocks, n_ctx)),
      requests(m.config().n_vocab, options.eos_token_ids) {
  check_context_shift(m, options, max_len, paged->blocks.block_size());
  tier = paged->tier.get();
  if (tier) scheduler.set_prefix_tier(paged->tier.get());
}

void Engine::Impl::check_paged_request(std::span<const int32_t> prompt,
                                       const SamplingParams& params, int n) const {
  const BlockManager& blocks = paged->blocks;
  if (paged->states && n > paged->states->n_slots())
    throw std::invalid_argument("n = " + std::to_string(n) + " branches need as many recurrent " +
                                "state slots; the pool has " +
                                std::to_string(paged->states->n_slots()) + " (max_seqs)");
  const std::string pool = "the KV pool of " + std::to_string(blocks.n_blocks()) + " blocks";
  const std::string context = "context " + std::to_string(n_ctx) + ")";
  std::string limit = "the context of " + std::to_string(n_ctx) + " tokens";
  if (n_ctx > max_len && blocks.group_windows() == std::vector<int32_t>{0})
    limit = pool + " x " + std::to_string(blocks.block_size()) + " = " + std::to_string(max_len) +
            " tokens (" + context;
  else if (n_ctx > max_len)
    limit = pool + " of " + std::to_string(blocks.block_size()) + " tokens, " +
            std::to_string(max_len) + " tokens per sequence over " +
            std::to_string(blocks.n_groups()) + " layer groups (" + context;
  RequestTable::check_length(int64_t(prompt.size()), params, max_len, limit,
                             params.context_shift.value_or(options.context_shift));
}

bool Engine::Impl::argmax_only(const SchedulerOutput& plan) const {
  if (options.on_logits) return false;
  for (const ScheduledChunk& c : plan.chunks)
    if (c.wants_logits &&
        (!c.seq->sampler->reads_only_argmax() || requests.at(c.seq->request).logprobs.enabled))
      return false;
  return true;
}

void Engine::Impl::step_paged(std::vector<StepEvent>& events) {
  BlockManager& blocks = paged->blocks;
  shift_full_sequences();
  const SchedulerOutput plan = scheduler.schedule();
  if (plan.chunks.empty())
    throw std::logic_error("engine: nothing schedulable with " +
                           std::to_string(scheduler.n_running()) + " running and " +
                           std::to_string(scheduler.n_waiting()) + " waiting sequences, " +
                           std::to_string(blocks.n_free_blocks()) + " free blocks");
  blocks_used_peak = std::max(blocks_used_peak, blocks.n_blocks() - blocks.n_free_blocks());
  const std::span<const float> logits =
      paged->runner.run(blocks.take_pending_copies(), plan.chunks, argmax_only(plan));
  record_computed(plan.chunks);
  ++steps;
  tokens_computed += plan.n_tokens;
  const size_t n_vocab = size_t(model.config().n_vocab);
  std::vector<Sequence*> finished;
  size_t row = 0;
  for (const ScheduledChunk& c : plan.chunks) {
    if (!c.wants_logits) continue;
    const std::span<const float> row_logits = logits.subspan(row++ * n_vocab, n_vocab);
    std::vector<Sequence*> branches{c.seq};
    // The prompt is computed: the other branches share its blocks from here on.
    for (int b = 1; b <= c.seq->pending_forks; ++b) {
      Sequence& child = add_branch(*c.seq, b);
      child.n_computed = c.seq->n_computed;
      child.n_cached = c.seq->n_cached;
      if (paged->hybrid)
        paged->hybrid->fork(c.seq->id, child.id);
      else
        blocks.fork(c.seq->id, child.id);
      branches.push_back(&child);
    }
    c.seq->pending_forks = 0;
    for (Sequence* s : branches) sample(*s, row_logits, events, finished);
  }
  for (Sequence* s : finished) remove(s);
}

void Engine::Impl::paged_stats(EngineStats& s) const {
  const BlockManager& blocks = paged->blocks;
  s.waiting = scheduler.n_waiting();
  s.kv_blocks_total = blocks.n_blocks();
  s.kv_blocks_free = blocks.n_free_blocks();
  s.kv_blocks_used = s.kv_blocks_total - s.kv_blocks_free;
  s.kv_blocks_used_peak = blocks_used_peak;
  s.kv_slots_allocated = int64_t(s.kv_blocks_used) * blocks.block_size();
  // A shared block counts once, filled as far as its fullest owner.
  std::unordered_map<BlockId, int32_t> filled;
  const int32_t bs = blocks.block_size();
  for (const auto& seq : scheduler.running()) {
    const int32_t n = blocks.seq_tokens(seq->id);
    for (int32_t g = 0; g < blocks.n_groups(); ++g) {
      const std::span<const BlockId> table = blocks.block_table(seq->id, g);
      for (size_t i = 0; i < table.size(); ++i) {
        if (table[i] == BlockManager::kNoBlock) continue;  // released by a window
        int32_t& f = filled[table[i]];
        f = std::max(f, std::min(bs, n - int32_t(i) * bs));
      }
    }
  }
  for (const auto& [block, n] : filled) s.kv_slots_used += n;
  s.prefix = blocks.prefix_stats();
  s.prefix_bytes_reused = s.prefix.hits * int64_t(paged->cache.block_bytes());
  if (paged->disk) s.disk = paged->disk->stats();
  s.preemptions = scheduler.preemptions();
  const ForwardTimes& f = paged->runner.forward_times();
  s.forward_seconds = f.total;
  s.weight_matmul_seconds = f.weight_matmuls;
  s.output_matmul_seconds = f.output_matmul;
  s.attention_seconds = f.attention;
}

}  // namespace kvforge
