// The batching engine, public face. Token ids in, token ids out; text lives
// in the app layer (app/text_engine.h). One engine, two KV modes under one
// scheduler (engine/scheduler.h) and one request table:
//   - paged (the first constructor): many requests share one paged KV pool
//     and one forward pass per step (continuous batching, chunked prefill,
//     prefix caching, preemption by recompute);
//   - static slots (the constructor taking compiled plans): the static
//     pipeline's B fixed slots of max_prompt_len + min_response_len
//     positions, one per branch; each step decodes every slot holding a
//     sampled token through ONE generate plan (idle slots are padding rows),
//     then admits waiting requests first come, first served (a request of n
//     branches waits for n free slots), each branch's slot prefilled through
//     the prefill plan. With a KV disk tier, the longest prefix of whole
//     blocks the tier holds (when longer than what the slot keeps) is
//     restored into the slot first; the prompt's full blocks are written
//     through. A slot reused under EngineOptions::reuse_slots keeps the
//     prefix it shares with the prompt (engine/static_pipeline/
//     static_slot_manager.h). A branch ends "length" at max_tokens or when
//     prompt + generated reaches the slot capacity.
//
// Driving it: add_request() any time, then call step() until
// has_unfinished() is false. Each step() schedules up to max_batched_tokens
// tokens of up to max_seqs sequences (running decodes first, then prefill
// chunks), runs them in one forward pass and returns what happened: one
// StepEvent per branch that produced a token or finished. Not thread-safe: one
// thread drives an Engine (the server's engine loop); others talk to it
// through queues.
//
// Greedy decoding gives the same tokens as a single sequence run alone,
// whatever else runs beside it, the block size, chunking, prefix-cache hits,
// preemption or thread count (tests/engine/engine_schedules_test.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/formats/kv_format.h"
#include "kvforge/engine_stats.h"
#include "kvforge/overflow_policy.h"
#include "kvforge/request.h"
#include "kvforge/sampling_params.h"

namespace kvforge {

class Communicator;
class Model;
class StaticRunner;
class ThreadPool;
struct PlanSet;

struct EngineOptions {
  // KV pool: kv_blocks blocks of block_size positions (power of two, 1..256).
  // kv_blocks = 0: as many blocks as kv_memory_mib holds (storage bytes per
  // block from PagedKvCache::block_bytes), but never more than max_seqs full
  // contexts need. A hybrid model's recurrent-state slots come out of the
  // same budget first, as many as fit at n_ctx tokens each (at most
  // max_seqs, src/engine/kv/kv_pool_split.h), and bound the sequences that
  // run at once (options().max_seqs says how many).
  int32_t block_size = 16;
  int32_t kv_blocks = 0;
  double kv_memory_mib = 512;
  KvFormat kv_format = {};
  bool enable_prefix_cache = true;
  // Hybrid models (recurrent layers): snapshots of the recurrent state kept
  // for prefix caching, each the size of a state slot, out of kv_memory_mib
  // before the slots and blocks (src/engine/kv/state_snapshots.h). A prompt
  // leaves one at its last block boundary; a later prompt starting with
  // those tokens reuses their K/V and restores the state. 0: a hybrid model
  // reuses no prefix.
  int32_t state_snapshots = 0;
  // Disk tier under the prefix cache (engine/kv/kv_disk_tier.h): empty = off.
  // Full prompt blocks are written through to kv_disk_dir and restored from
  // it on a RAM miss, across processes of the same model and KV format. Off
  // (with a warning) for models with sliding-window layers, tensor-parallel
  // runs and without the prefix cache.
  std::string kv_disk_dir{};
  double kv_disk_gib = 4;  // size limit of this model's files there

  // Tensor parallel: the channel between the ranks the model was loaded for
  // (it must outlive the engine); nullptr: one process.
  Communicator* comm = nullptr;

  int32_t max_seqs = 64;                 // sequences (branches) in the running set
  int32_t max_batched_tokens = 512;      // tokens per forward pass (decodes + prefill chunks)
  int32_t n_ctx = 0;                     // per-sequence context; 0 = the model's training context
  std::vector<int32_t> eos_token_ids{};  // end generation ("stop") unless ignore_eos

  // Warnings (the disk tier turning off); nullptr: stderr.
  std::function<void(const std::string&)> on_warning{};

  // For tests and debugging: called with the raw logits ([n_vocab]) each
  // branch samples from, before sampling.
  std::function<void(RequestId, int branch, std::span<const float> logits)> on_logits{};

  // Context shift (paged mode, one layer group, one process, no disk tier):
  // a sequence that reaches the end of its context keeps its first n_keep
  // tokens (rounded up to whole blocks), drops the older half of the rest
  // and goes on, its kept K re-rotated in place (engine_shift.cpp). Requests
  // then end only at max_tokens or an end-of-generation token.
  bool context_shift = false;
  int32_t n_keep = 1;

  // Static slots only. The plans fix the slots, their capacity and the KV
  // format; max_seqs, max_batched_tokens, n_ctx and the pool sizes do not
  // apply, and block_size is the disk tier's (files shared with the paged
  // mode when the block sizes agree).
  OverflowPolicy overflow = OverflowPolicy::Error;  // a prompt over max_prompt_len
  // Free slots keep their K/V for the next request sharing a prefix (the
  // static counterpart of the prefix cache; `chat --static` keeps a
  // conversation in its slot between turns this way).
  bool reuse_slots = false;
};

class Engine {
 public:
  // The model and pool must outlive the engine. Throws std::invalid_argument
  // for bad options (block size, zero budget, a pool of no blocks).
  Engine(const Model& model, ThreadPool& pool, EngineOptions options);
  // Static slots running `plans` (validated for `model`: compile_plans and
  // load_plan_file guarantee it); `pool` must have plans.n_threads threads.
  Engine(const Model& model, ThreadPool& pool, PlanSet plans, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request of n branches (parallel sampling: the prompt is
  // computed once, then forked; branch b samples with seed + b when a seed
  // is set). Throws RequestRejected naming the limit when it can never be
  // served (nothing is queued then). Static slots: n > slots, a prompt over
  // max_prompt_len (unless OverflowPolicy::TruncateLeft, which keeps its last
  // max_prompt_len tokens), or prompt + max_tokens over the capacity.
  RequestId add_request(std::span<const int32_t> prompt, const SamplingParams& params, int n = 1,
                        LogprobOptions logprobs = {});
  // One scheduling iteration and forward pass; empty when nothing is unfinished.
  std::vector<StepEvent> step();
  // Ends every branch of the request now and frees its blocks; no event
  // follows. False if the request is unknown or already finished.
  bool abort(RequestId id);
  // Ends one branch (a stop string matched in the app layer). False if it is
  // unknown, finished, or does not exist yet: before the prompt is computed
  // and forked a request has only branch 0, which the others wait for (use
  // abort() to end them all).
  bool stop_branch(RequestId id, int branch);
  bool has_unfinished() const;

  // Tensor parallel, rank 0: from now on every command this engine takes is
  // sent to the other ranks, which follow it (engine/lockstep/). `comm` must
  // outlive the engine.
  void lead(Communicator& comm);
  // Nothing to run for now: a leading engine tells the other ranks it is
  // alive (the server calls it about once a second); otherwise nothing.
  void idle();

  // Static slots: a slot stands for a KV block. kv_blocks_total = B,
  // kv_blocks_used = occupied slots, kv_slots_allocated = occupied *
  // capacity, kv_slots_used = positions filled; running and waiting count
  // branches; prefix.tokens_reused: prompt tokens whose K/V a reused slot
  // kept (restored ones are disk.tokens_restored).
  EngineStats stats() const;
  int32_t block_size() const;    // static slots: the slot capacity
  int32_t n_blocks() const;      // static slots: the slots
  size_t kv_pool_bytes() const;  // K/V storage plus a hybrid model's state slots
  // Longest sequence (prompt + generated) a request may reach:
  // min(context, pool capacity); static slots: the slot capacity.
  int32_t max_sequence_tokens() const;
  // Tokens of an n-token prompt a request computes: n, or the last
  // max_prompt_len on static slots under OverflowPolicy::TruncateLeft.
  int32_t prompt_tokens_kept(int32_t n) const;
  const EngineOptions& options() const;
  // The static slots' plans and runner; null in the paged mode.
  const StaticRunner* static_runner() const;

  // Whole prefix blocks out of and into the paged pool's prefix cache, or a
  // free static slot (reuse_slots on; static_pipeline/static_slot_io.h), for
  // llama-server's slot save and restore (engine_prefix_io.cpp). One
  // process, one full-attention layer group, prefix cache on; otherwise both
  // throw std::invalid_argument saying why.
  // The leading whole blocks of `tokens` the prefix cache holds, each encoded
  // as a disk-tier block file (engine/kv/kv_block_file.h: this engine's
  // identity, every token id of its prefix, a checksum).
  std::vector<std::vector<uint8_t>> export_prefix(std::span<const int32_t> tokens);
  // Checks every file against this engine's identity, the chained hash and
  // the token ids of tokens[0, (b + 1) * block_size) and its checksum, then
  // puts the blocks in the prefix cache (a later prompt starting with those
  // tokens reuses them) and writes them through to the disk tier. Returns the
  // tokens restored. Throws std::invalid_argument naming the first bad file
  // and why (nothing is kept then), or when the pool has no room.
  int32_t import_prefix(std::span<const int32_t> tokens,
                        std::span<const std::vector<uint8_t>> files);
  // KvBlockIdentity::fingerprint() of this engine's blocks (0 where they cannot move).
  uint64_t block_fingerprint() const;
  // Forgets the K/V kept for `tokens` (llama-server's slot erase): paged, the
  // prefix-cache entries of its leading whole blocks that no running request
  // holds; static, every free slot holding a prefix of `tokens` (or holding
  // `tokens` and more) is emptied. The disk tier keeps its files. Returns the
  // tokens forgotten (blocks times their size, or the emptied slots' tokens).
  int32_t forget_prefix(std::span<const int32_t> tokens);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvforge
