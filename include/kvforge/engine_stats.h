// What the Engine (kvforge/engine.h) reports about its work: sequences, KV
// blocks, the prefix cache, and where its time goes.
#pragma once

#include <cstdint>

namespace kvforge {

struct PrefixCacheStats {
  int64_t hits = 0;           // full blocks served from the cache
  int64_t misses = 0;         // full prompt blocks cached_prefix could serve, not served
  int64_t evictions = 0;      // cached blocks reused for other content
  int64_t tokens_reused = 0;  // prompt tokens whose K/V was not recomputed
};

// The disk tier under the prefix cache (engine/kv/kv_disk_tier.h). Blocks are
// full KV blocks of block_size positions; bytes are file bytes.
struct KvDiskStats {
  bool enabled = false;         // a directory is configured and in use
  bool degraded = false;        // turned off by an I/O error: RAM-only since
  int64_t hits = 0;             // blocks restored from disk instead of recomputed
  int64_t tokens_restored = 0;  // hits * block_size: prompt tokens not recomputed
  int64_t misses = 0;           // prompt blocks found neither in RAM nor on disk
  int64_t bytes_read = 0;       // restored and rejected files
  int64_t bytes_written = 0;
  int64_t blocks_stored = 0;   // files written
  int64_t states_stored = 0;   // recurrent-state snapshot files written (hybrid models)
  int64_t state_hits = 0;      // snapshots restored from disk
  int64_t files_rejected = 0;  // truncated, corrupted, other model/format/tokens: deleted
  int64_t files_evicted = 0;   // deleted to stay under the size limit
  int64_t io_errors = 0;
  int64_t files = 0;          // this model's files in the directory now
  int64_t bytes_on_disk = 0;  // their bytes
  double load_seconds = 0;    // reading and verifying restored blocks
  double store_seconds = 0;   // encoding and writing blocks
};

struct EngineStats {
  int32_t running = 0;  // sequences (branches) holding KV blocks
  int32_t waiting = 0;  // sequences queued for (re)admission
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;  // refcount > 0
  int32_t kv_blocks_free = 0;  // includes evictable prefix-cache blocks
  // Most blocks in use at once so far: measured right after each step's
  // scheduling, when the step's blocks are reserved and before sliding
  // windows release what the step's queries were the last to read.
  int32_t kv_blocks_used_peak = 0;
  int64_t kv_slots_allocated = 0;  // kv_blocks_used * block_size
  int64_t kv_slots_used = 0;       // positions holding K/V of running sequences (shared once)
  PrefixCacheStats prefix;
  int64_t prefix_bytes_reused = 0;  // prefix.hits * K/V bytes of a block: the RAM tier's hits
  KvDiskStats disk;
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t tokens_computed = 0;   // tokens fed through forward passes (prefill + decode + recompute)
  int64_t tokens_generated = 0;  // tokens sampled
  int64_t context_shifts = 0;    // context shifts done (EngineOptions::context_shift)
  // Wall time summed over all step() calls, in seconds: the whole calls, the
  // forward passes inside them, and three phases of those passes: the
  // layers' weight matmuls, the output (logits) matmul and attention. What
  // forward leaves of a step is scheduling, K/V block bookkeeping and
  // sampling; what the phases leave of forward is the per-token vector work.
  double step_seconds = 0;
  double forward_seconds = 0;
  double weight_matmul_seconds = 0;
  double output_matmul_seconds = 0;
  double attention_seconds = 0;
  // Tensor parallel only (0 on one process): this rank's collectives since
  // the run began (core/comm/communicator.h: CommStats), step messages included.
  int64_t comm_messages = 0;
  int64_t comm_bytes_sent = 0;
  int64_t comm_bytes_received = 0;
  double comm_seconds = 0;
};

}  // namespace kvforge
