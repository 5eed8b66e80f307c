// bench-serve's KV-tier workloads (the disk tier, engine/kv/kv_disk_tier.h):
//   1. time to first token of a request whose long prefix is not cached,
//      in the RAM pool, or on disk after a restart (a new engine on the same
//      directory; also with the files dropped from the page cache), per KV
//      format, with the bytes read;
//   1b. (with 1, per KV format) the step times of a decoding request while
//      another request's prefix loads from disk, page cache warm and dropped;
//      and the time to read such a prefix's files buffered vs O_DIRECT;
//   2. multi-turn chat: many conversations, each turn resending the whole
//      history, more of them than the pool holds, with the disk tier off
//      and on.
// Tier directories are fresh temporary ones, removed afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/tokenizer/tokenizer.h"
#include "core/threadpool.h"
#include "kvforge/engine.h"
#include "model/model.h"

namespace kvforge::cli {

struct KvTierBenchOptions {
  std::string parent_dir;  // where temporary tier directories go; "" = the system's temp dir
  uint32_t seed = 1;
  // 1. TTFT by tier
  int prefix_len = 2048;
  int suffix_len = 16;
  int rounds = 3;  // medians over this many prefixes
  std::vector<KvFormat> formats;
  // 2. multi-turn chat
  int conversations = 16;
  int turns = 4;
  int context_len = 512;  // each conversation's own opening tokens
  int user_len = 64;      // new tokens per turn
  int reply_len = 32;     // generated tokens per turn
};

void bench_tier_ttft(const Model& model, const Tokenizer& tok, ThreadPool& pool,
                     EngineOptions options, const KvTierBenchOptions& o);
void bench_tier_load_overlap(const Model& model, ThreadPool& pool, const EngineOptions& options,
                             const KvTierBenchOptions& o);
void bench_tier_read_modes(const Model& model, EngineOptions options, const KvTierBenchOptions& o);
void bench_multi_turn_chat(const Model& model, const Tokenizer& tok, ThreadPool& pool,
                           EngineOptions options, const KvTierBenchOptions& o);

}  // namespace kvforge::cli
