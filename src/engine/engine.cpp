// The engine loop: schedule, run, sample, finish. See include/kvforge/engine.h.
#include "kvforge/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <unordered_map>

#include "engine/draw_token.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/model_runner.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"

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

// Blocks in the pool: --kv-blocks, else what --kv-memory holds, capped at
// max_seqs full contexts (more could never be used at once).
int32_t pool_blocks(const Model& model, const EngineOptions& o) {
  check_options(o);
  if (o.kv_blocks > 0) return o.kv_blocks;
  const size_t per_block = PagedKvCache::block_bytes(model.config(), o.block_size, o.kv_format);
  const double by_memory = std::floor(o.kv_memory_mib * 1048576.0 / double(per_block));
  if (by_memory < 1)
    throw std::invalid_argument("engine: KV memory of " + std::to_string(o.kv_memory_mib) +
                                " MiB holds no block (one block of " +
                                std::to_string(o.block_size) + " tokens takes " +
                                std::to_string(per_block) + " bytes)");
  const int64_t per_seq = (int64_t(context_of(model, o)) + o.block_size - 1) / o.block_size;
  const int64_t needed = per_seq * std::max(1, o.max_seqs);
  return int32_t(std::min<double>({by_memory, double(needed), double(INT32_MAX / 2)}));
}

struct RequestState {
  SamplingParams params;
  std::vector<int32_t> prompt;
  int remaining = 0;  // branches not yet finished
};

}  // namespace

struct Engine::Impl {
  Impl(const Model& m, ThreadPool& pool, EngineOptions o)
      : model(m),
        options(std::move(o)),
        blocks(pool_blocks(m, options), options.block_size, options.enable_prefix_cache),
        cache(m.config(), blocks, options.kv_format),
        scheduler(blocks, {options.max_seqs, options.max_batched_tokens}),
        runner(m, blocks, cache, pool, options.max_batched_tokens),
        n_ctx(context_of(m, options)),
        max_len(
            int32_t(std::min<int64_t>(n_ctx, int64_t(blocks.n_blocks()) * blocks.block_size()))) {}

  const Model& model;
  EngineOptions options;
  BlockManager blocks;
  PagedKvCache cache;
  Scheduler scheduler;
  ModelRunner runner;
  int32_t n_ctx;
  int32_t max_len;
  RequestId next_request = 1;
  SeqId next_seq = 0;
  std::unordered_map<RequestId, RequestState> requests;  // unfinished ones
  int64_t steps = 0, tokens_computed = 0, tokens_generated = 0;
  double step_seconds = 0;  // whole step() calls that ran a forward pass
  std::vector<TokenLogprob> top;

  void check_request(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                     LogprobOptions lp) const;
  std::unique_ptr<Sampler> make_sampler(const RequestState& r, int branch) const;
  std::unique_ptr<Sequence> make_sequence(RequestId id, const RequestState& r, int branch);
  void fork(Sequence& root, std::vector<Sequence*>& branches);
  void sample(Sequence& seq, std::span<const float> logits, std::vector<StepEvent>& events,
              std::vector<Sequence*>& finished);
  void remove(Sequence* seq);
  bool is_eos(int32_t token) const {
    return std::find(options.eos_token_ids.begin(), options.eos_token_ids.end(), token) !=
           options.eos_token_ids.end();
  }
};

void Engine::Impl::check_request(std::span<const int32_t> prompt, const SamplingParams& params,
                                 int n, LogprobOptions lp) const {
  if (auto err = params.validate()) throw RequestRejected(*err);
  if (n < 1 || n > options.max_seqs)
    throw RequestRejected("request: n must be in [1, max_seqs = " +
                          std::to_string(options.max_seqs) + "], got " + std::to_string(n));
  if (lp.top < 0 || lp.top > model.config().n_vocab || (lp.top > 0 && !lp.enabled))
    throw RequestRejected(
        "request: top logprobs must be in [0, n_vocab] with logprobs enabled, "
        "got " +
        std::to_string(lp.top));
  if (prompt.empty()) throw RequestRejected("request: empty prompt");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= model.config().n_vocab)
      throw RequestRejected("request: prompt token " + std::to_string(i) + " has id " +
                            std::to_string(prompt[i]) + ", outside the vocabulary [0, " +
                            std::to_string(model.config().n_vocab) + ")");
  const int64_t pool_tokens = int64_t(blocks.n_blocks()) * blocks.block_size();
  const std::string limit = n_ctx <= pool_tokens
                                ? "the context of " + std::to_string(n_ctx) + " tokens"
                                : "the KV pool of " + std::to_string(blocks.n_blocks()) +
                                      " blocks x " + std::to_string(blocks.block_size()) + " = " +
                                      std::to_string(pool_tokens) + " tokens (context " +
                                      std::to_string(n_ctx) + ")";
  const int64_t p = int64_t(prompt.size());
  if (p >= max_len)
    throw RequestRejected("request: prompt of " + std::to_string(p) +
                          " tokens leaves no room to generate in " + limit);
  if (params.max_tokens && p + *params.max_tokens > max_len)
    throw RequestRejected("request: prompt of " + std::to_string(p) + " tokens + max_tokens " +
                          std::to_string(*params.max_tokens) + " = " +
                          std::to_string(p + *params.max_tokens) + " tokens exceeds " + limit);
}

std::unique_ptr<Sampler> Engine::Impl::make_sampler(const RequestState& r, int branch) const {
  SamplingParams p = r.params;
  if (p.seed) p.seed = *p.seed + uint64_t(branch);
  auto sampler = std::make_unique<Sampler>(p, model.config().n_vocab);
  sampler->accept_prompt(std::vector<int>(r.prompt.begin(), r.prompt.end()));
  return sampler;
}

std::unique_ptr<Sequence> Engine::Impl::make_sequence(RequestId id, const RequestState& r,
                                                      int branch) {
  auto seq = std::make_unique<Sequence>();
  seq->id = next_seq++;
  seq->request = id;
  seq->branch = branch;
  seq->tokens = r.prompt;
  seq->n_prompt = int32_t(r.prompt.size());
  seq->max_len = max_len;
  seq->max_tokens = r.params.max_tokens.value_or(max_len - seq->n_prompt);
  seq->sampler = make_sampler(r, branch);
  return seq;
}

// The prompt is computed: the other branches share its blocks from here on.
void Engine::Impl::fork(Sequence& root, std::vector<Sequence*>& branches) {
  const RequestState& r = requests.at(root.request);
  for (int b = 1; b <= root.pending_forks; ++b) {
    std::unique_ptr<Sequence> child = make_sequence(root.request, r, b);
    child->tokens = root.tokens;
    child->n_computed = root.n_computed;
    child->logprobs = root.logprobs;
    blocks.fork(root.id, child->id);
    branches.push_back(child.get());
    scheduler.add_running(std::move(child));
  }
  root.pending_forks = 0;
}

void Engine::Impl::sample(Sequence& seq, std::span<const float> logits,
                          std::vector<StepEvent>& events, std::vector<Sequence*>& finished) {
  if (options.on_logits) options.on_logits(seq.request, seq.branch, logits);
  const GeneratedToken t = draw_token(*seq.sampler, logits, seq.logprobs, top);
  ++tokens_generated;
  StepEvent ev{seq.request, seq.branch, std::nullopt, std::nullopt};
  if (is_eos(t.id) && !requests.at(seq.request).params.ignore_eos) {
    ev.finish = FinishReason::Stop;
  } else {
    seq.sampler->accept(t.id);
    seq.tokens.push_back(t.id);
    ev.token = std::move(t);
    if (seq.n_generated() >= seq.max_tokens || seq.len() >= seq.max_len)
      ev.finish = FinishReason::Length;
  }
  if (ev.finish) finished.push_back(&seq);
  events.push_back(std::move(ev));
}

void Engine::Impl::remove(Sequence* seq) {
  auto it = requests.find(seq->request);
  it->second.remaining -= seq->width();
  if (it->second.remaining <= 0) requests.erase(it);
  scheduler.remove(seq);
}

Engine::Engine(const Model& model, ThreadPool& pool, EngineOptions options)
    : impl_(std::make_unique<Impl>(model, pool, std::move(options))) {}

Engine::~Engine() = default;

RequestId Engine::add_request(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                              LogprobOptions logprobs) {
  Impl& m = *impl_;
  m.check_request(prompt, params, n, logprobs);
  const RequestId id = m.next_request++;
  RequestState& r = m.requests[id];
  r.params = params;
  if (!r.params.seed)
    r.params.seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
  r.prompt.assign(prompt.begin(), prompt.end());
  r.remaining = n;
  auto seq = m.make_sequence(id, r, 0);
  seq->pending_forks = n - 1;
  seq->logprobs = logprobs;
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
  const std::span<const float> logits = m.runner.run(plan.chunks);
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
  s.kv_slots_allocated = int64_t(s.kv_blocks_used) * m.blocks.block_size();
  // A shared block counts once, filled as far as its fullest owner.
  std::unordered_map<BlockId, int32_t> filled;
  const int32_t bs = m.blocks.block_size();
  for (const auto& seq : m.scheduler.running()) {
    const int32_t n = m.blocks.seq_tokens(seq->id);
    const std::span<const BlockId> table = m.blocks.block_table(seq->id);
    for (size_t i = 0; i < table.size(); ++i) {
      int32_t& f = filled[table[i]];
      f = std::max(f, std::min(bs, n - int32_t(i) * bs));
    }
  }
  for (const auto& [block, n] : filled) s.kv_slots_used += n;
  s.prefix = m.blocks.prefix_stats();
  s.preemptions = m.scheduler.preemptions();
  s.steps = m.steps;
  s.tokens_computed = m.tokens_computed;
  s.tokens_generated = m.tokens_generated;
  s.step_seconds = m.step_seconds;
  const ForwardTimes& f = m.runner.forward_times();
  s.forward_seconds = f.total;
  s.weight_matmul_seconds = f.weight_matmuls;
  s.output_matmul_seconds = f.output_matmul;
  s.attention_seconds = f.attention;
  return s;
}

int32_t Engine::block_size() const { return impl_->blocks.block_size(); }
int32_t Engine::n_blocks() const { return impl_->blocks.n_blocks(); }
size_t Engine::kv_pool_bytes() const { return impl_->cache.bytes(); }
int32_t Engine::max_sequence_tokens() const { return impl_->max_len; }
const EngineOptions& Engine::options() const { return impl_->options; }

}  // namespace kvforge
