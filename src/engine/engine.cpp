// The engine loop: schedule, run, sample, finish. See include/kvforge/engine.h.
#include "kvforge/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "engine/kv/disk_prefix_tier.h"
#include "engine/kv/kv_layer_groups.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/model_runner.h"
#include "engine/request_table.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/static_pipeline/fingerprint.h"

namespace kvforge {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Abort:
      return "abort";
  }
  return "?";
}

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

std::vector<int32_t> group_windows(const Model& model) {
  return KvLayerGroups::of(model.config()).windows();
}

// Blocks in the pool: --kv-blocks, else what --kv-memory holds, capped at
// max_seqs full contexts (more could never be used at once; a windowed layer
// group holds at most its window plus a chunk of each).
int32_t pool_blocks(const Model& model, const EngineOptions& o) {
  check_options(o);
  if (o.kv_blocks > 0) return o.kv_blocks;
  const size_t per_block =
      PagedKvCache::block_bytes(model.rank_config(), o.block_size, o.kv_format);
  const double by_memory = std::floor(o.kv_memory_mib * 1048576.0 / double(per_block));
  if (by_memory < 1)
    throw std::invalid_argument("engine: KV memory of " + std::to_string(o.kv_memory_mib) +
                                " MiB holds no block (one block of " +
                                std::to_string(o.block_size) + " tokens takes " +
                                std::to_string(per_block) + " bytes)");
  const int64_t per_seq = BlockManager::max_blocks_for_seq(
      group_windows(model), o.block_size, context_of(model, o), std::max(1, o.max_batched_tokens));
  const int64_t needed = per_seq * std::max(1, o.max_seqs);
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
  if (blocks.group_windows() != std::vector<int32_t>{0})
    return "the model has sliding-window layers, whose blocks the pool releases";
  if (model.tp() > 1) return "tensor-parallel ranks would each need their own files";
  if (!(o.kv_disk_gib > 0)) return "its size limit is not positive";
  return {};
}

std::unique_ptr<KvDiskTier> make_disk_tier(const Model& model, const EngineOptions& o,
                                           const BlockManager& blocks, const PagedKvCache& cache) {
  if (o.kv_disk_dir.empty()) return nullptr;
  KvDiskTier::WarnFn warn = o.on_warning;
  if (const std::string why = disk_tier_refusal(model, o, blocks); !why.empty()) {
    const std::string msg = "KV disk tier " + o.kv_disk_dir + " is off: " + why;
    if (warn)
      warn(msg);
    else
      std::fprintf(stderr, "kvforge: warning: %s\n", msg.c_str());
    return nullptr;
  }
  const KvBlockIdentity id{model_fingerprint(model), o.kv_format, blocks.block_size(),
                           cache.block_bytes()};
  return std::make_unique<KvDiskTier>(o.kv_disk_dir, uint64_t(o.kv_disk_gib * 1073741824.0), id,
                                      warn);
}

}  // namespace

struct Engine::Impl {
  Impl(const Model& m, ThreadPool& pool, EngineOptions o)
      : model(m),
        options(std::move(o)),
        blocks(pool_blocks(m, options), options.block_size, options.enable_prefix_cache,
               group_windows(m)),
        cache(m.rank_config(), blocks, options.kv_format),
        scheduler(blocks, {options.max_seqs, options.max_batched_tokens}),
        runner(m, blocks, cache, pool, options.comm ? *options.comm : one_process_communicator(),
               options.max_batched_tokens),
        n_ctx(context_of(m, options)),
        max_len(longest_sequence(blocks, n_ctx)),
        requests(m.config().n_vocab, options.eos_token_ids),
        disk(make_disk_tier(m, options, blocks, cache)) {
    if (!disk) return;
    disk_prefix = std::make_unique<DiskPrefixTier>(*disk, blocks, cache);
    scheduler.set_prefix_tier(disk_prefix.get());
    runner.set_disk_tier(disk_prefix.get());
  }

  const Model& model;
  EngineOptions options;
  BlockManager blocks;
  PagedKvCache cache;
  Scheduler scheduler;
  ModelRunner runner;
  int32_t n_ctx;
  int32_t max_len;
  RequestTable requests;
  std::unique_ptr<KvDiskTier> disk;  // null without --kv-disk
  std::unique_ptr<DiskPrefixTier> disk_prefix;
  SeqId next_seq = 0;
  int64_t steps = 0, tokens_computed = 0;
  int32_t blocks_used_peak = 0;
  double step_seconds = 0;  // whole step() calls that ran a forward pass

  void check_request(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                     LogprobOptions lp) const;
  std::unique_ptr<Sequence> make_sequence(RequestId id, int branch);
  void fork(Sequence& root, std::vector<Sequence*>& branches);
  void sample(Sequence& seq, std::span<const float> logits, std::vector<StepEvent>& events,
              std::vector<Sequence*>& finished);
  void remove(Sequence* seq);
  // Whether every branch sampling this step reads only the argmax of its
  // logits: greedy without penalties or logprobs, and no logits callback.
  bool argmax_only(const SchedulerOutput& plan) const;
};

void Engine::Impl::check_request(std::span<const int32_t> prompt, const SamplingParams& params,
                                 int n, LogprobOptions lp) const {
  requests.check(prompt, params, n, lp, options.max_seqs,
                 "[1, max_seqs = " + std::to_string(options.max_seqs) + "]");
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
  RequestTable::check_length(int64_t(prompt.size()), params, max_len, limit);
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
  seq->max_len = limits.max_len;
  seq->max_tokens = limits.max_tokens;
  seq->sampler = requests.make_sampler(id, branch);
  return seq;
}

// The prompt is computed: the other branches share its blocks from here on.
void Engine::Impl::fork(Sequence& root, std::vector<Sequence*>& branches) {
  for (int b = 1; b <= root.pending_forks; ++b) {
    std::unique_ptr<Sequence> child = make_sequence(root.request, b);
    child->tokens = root.tokens;
    child->n_computed = root.n_computed;
    blocks.fork(root.id, child->id);
    branches.push_back(child.get());
    scheduler.add_running(std::move(child));
  }
  root.pending_forks = 0;
}

void Engine::Impl::sample(Sequence& seq, std::span<const float> logits,
                          std::vector<StepEvent>& events, std::vector<Sequence*>& finished) {
  if (options.on_logits) options.on_logits(seq.request, seq.branch, logits);
  StepEvent ev = requests.sample(seq.request, seq.branch, *seq.sampler, logits, seq.n_generated(),
                                 seq.len(), {seq.max_tokens, seq.max_len});
  if (ev.token) seq.tokens.push_back(ev.token->id);
  if (ev.finish) finished.push_back(&seq);
  events.push_back(std::move(ev));
}

bool Engine::Impl::argmax_only(const SchedulerOutput& plan) const {
  if (options.on_logits) return false;
  for (const ScheduledChunk& c : plan.chunks)
    if (c.wants_logits &&
        (!c.seq->sampler->reads_only_argmax() || requests.at(c.seq->request).logprobs.enabled))
      return false;
  return true;
}

void Engine::Impl::remove(Sequence* seq) {
  requests.end_branches(seq->request, seq->width());
  scheduler.remove(seq);
}

Engine::Engine(const Model& model, ThreadPool& pool, EngineOptions options)
    : impl_(std::make_unique<Impl>(model, pool, std::move(options))) {}

Engine::~Engine() = default;

RequestId Engine::add_request(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                              LogprobOptions logprobs) {
  Impl& m = *impl_;
  m.check_request(prompt, params, n, logprobs);
  const RequestId id = m.requests.add(prompt, params, n, logprobs);
  auto seq = m.make_sequence(id, 0);
  seq->pending_forks = n - 1;
  m.scheduler.add(std::move(seq));
  return id;
}

std::vector<StepEvent> Engine::step() {
  Impl& m = *impl_;
  std::vector<StepEvent> events;
  if (m.scheduler.empty()) return events;
  const auto start = std::chrono::steady_clock::now();
  const SchedulerOutput plan = m.scheduler.schedule();
  if (plan.chunks.empty())
    throw std::logic_error("engine: nothing schedulable with " +
                           std::to_string(m.scheduler.n_running()) + " running and " +
                           std::to_string(m.scheduler.n_waiting()) + " waiting sequences, " +
                           std::to_string(m.blocks.n_free_blocks()) + " free blocks");
  m.blocks_used_peak = std::max(m.blocks_used_peak, m.blocks.n_blocks() - m.blocks.n_free_blocks());
  const std::span<const float> logits = m.runner.run(plan.chunks, m.argmax_only(plan));
  ++m.steps;
  m.tokens_computed += plan.n_tokens;
  const size_t n_vocab = size_t(m.model.config().n_vocab);
  std::vector<Sequence*> finished;
  size_t row = 0;
  for (const ScheduledChunk& c : plan.chunks) {
    if (!c.wants_logits) continue;
    const std::span<const float> row_logits = logits.subspan(row++ * n_vocab, n_vocab);
    std::vector<Sequence*> branches{c.seq};
    if (c.seq->pending_forks > 0) m.fork(*c.seq, branches);
    for (Sequence* s : branches) m.sample(*s, row_logits, events, finished);
  }
  for (Sequence* s : finished) m.remove(s);
  m.step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return events;
}

bool Engine::abort(RequestId id) {
  const std::vector<Sequence*> seqs = impl_->scheduler.find_request(id);
  for (Sequence* s : seqs) impl_->remove(s);
  return !seqs.empty();
}

bool Engine::stop_branch(RequestId id, int branch) {
  for (Sequence* s : impl_->scheduler.find_request(id))
    if (s->branch == branch && s->pending_forks == 0) {
      impl_->remove(s);
      return true;
    }
  return false;
}

bool Engine::has_unfinished() const { return !impl_->scheduler.empty(); }

EngineStats Engine::stats() const {
  const Impl& m = *impl_;
  EngineStats s;
  s.running = m.scheduler.n_running();
  s.waiting = m.scheduler.n_waiting();
  s.kv_blocks_total = m.blocks.n_blocks();
  s.kv_blocks_free = m.blocks.n_free_blocks();
  s.kv_blocks_used = s.kv_blocks_total - s.kv_blocks_free;
  s.kv_blocks_used_peak = m.blocks_used_peak;
  s.kv_slots_allocated = int64_t(s.kv_blocks_used) * m.blocks.block_size();
  // A shared block counts once, filled as far as its fullest owner.
  std::unordered_map<BlockId, int32_t> filled;
  const int32_t bs = m.blocks.block_size();
  for (const auto& seq : m.scheduler.running()) {
    const int32_t n = m.blocks.seq_tokens(seq->id);
    for (int32_t g = 0; g < m.blocks.n_groups(); ++g) {
      const std::span<const BlockId> table = m.blocks.block_table(seq->id, g);
      for (size_t i = 0; i < table.size(); ++i) {
        if (table[i] == BlockManager::kNoBlock) continue;  // released by a window
        int32_t& f = filled[table[i]];
        f = std::max(f, std::min(bs, n - int32_t(i) * bs));
      }
    }
  }
  for (const auto& [block, n] : filled) s.kv_slots_used += n;
  s.prefix = m.blocks.prefix_stats();
  s.prefix_bytes_reused = s.prefix.hits * int64_t(m.cache.block_bytes());
  if (m.disk) s.disk = m.disk->stats();
  s.preemptions = m.scheduler.preemptions();
  s.steps = m.steps;
  s.tokens_computed = m.tokens_computed;
  s.tokens_generated = m.requests.tokens_generated();
  s.step_seconds = m.step_seconds;
  const ForwardTimes& f = m.runner.forward_times();
  s.forward_seconds = f.total;
  s.weight_matmul_seconds = f.weight_matmuls;
  s.output_matmul_seconds = f.output_matmul;
  s.attention_seconds = f.attention;
  const CommStats c = m.options.comm ? m.options.comm->stats() : CommStats{};
  s.comm_messages = c.messages;
  s.comm_bytes_sent = c.bytes_sent;
  s.comm_bytes_received = c.bytes_received;
  s.comm_seconds = c.seconds;
  return s;
}

int32_t Engine::block_size() const { return impl_->blocks.block_size(); }
int32_t Engine::n_blocks() const { return impl_->blocks.n_blocks(); }
size_t Engine::kv_pool_bytes() const { return impl_->cache.bytes(); }
int32_t Engine::max_sequence_tokens() const { return impl_->max_len; }
const EngineOptions& Engine::options() const { return impl_->options; }

}  // namespace kvforge
