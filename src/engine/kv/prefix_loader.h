// One I/O thread that restores a sequence's prefix blocks from the disk tier
// into pool blocks reserved for it, so the engine's other sequences keep
// stepping while the files are read (DiskPrefixTier owns it).
//
// The thread blocks on reads and copies; it computes nothing, so it runs
// beside the compute thread pool without taking a core from it for long,
// and it never uses that pool. It touches only what a job names: the files
// (KvDiskTier::read_block) and the job's destination blocks of the pool
// (PagedKvCache::import_block), which no one else reads or writes while the
// job is queued or running: they belong to a sequence in the loading state
// and carry no prefix-cache entry yet.
//
// Hand-over: a finished job's result is published under the mutex, after
// the thread's last write into its blocks, and take() reads it under the
// same mutex; that orders the pool bytes before anything the engine thread
// (and the compute threads it starts afterwards) does with them. cancel()
// returns only once the thread no longer writes into the job's blocks, so
// the caller may free them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/kv/kv_disk_tier.h"
#include "engine/kv/paged_kv_cache.h"

namespace kvforge {

struct PrefixLoadJob {
  SeqId seq = 0;
  int32_t from_block = 0;        // depth of the first block to load
  std::vector<int32_t> tokens;   // [(from_block + n) * block_size] the prefix it ends
  std::vector<uint64_t> hashes;  // [n] chain hashes of blocks from_block ...
  std::vector<BlockId> dst;      // [n] pool blocks reserved for them
  int32_t eligible = 0;          // prompt blocks past the RAM prefix (miss count)
};

struct PrefixLoadResult {
  SeqId seq = 0;
  std::vector<uint64_t> hashes;              // the job's
  std::vector<KvDiskTier::BlockRead> reads;  // [≤ n] in order; all but the last are hits
  int32_t eligible = 0;
  // Leading blocks whose bytes are now in the pool.
  int32_t n_good() const;
};

class PrefixLoader {
 public:
  // disk and cache must outlive this; `mode`: how the thread reads files.
  PrefixLoader(const KvDiskTier& disk, PagedKvCache& cache, KvReadMode mode);
  // Stops after the job in flight (if any); queued jobs are dropped.
  ~PrefixLoader();
  PrefixLoader(const PrefixLoader&) = delete;
  PrefixLoader& operator=(const PrefixLoader&) = delete;

  void submit(PrefixLoadJob job);
  // Finished jobs since the last call, oldest first. wait: block until at
  // least one is finished, unless none is queued or running.
  std::vector<PrefixLoadResult> take(bool wait);
  // Forgets seq's job, queued, running or finished; returns once the thread
  // writes into none of its blocks any more.
  void cancel(SeqId seq);
  // Jobs submitted and not yet taken or cancelled.
  int32_t pending() const;

 private:
  void run();
  PrefixLoadResult load(const PrefixLoadJob& job);

  const KvDiskTier& disk_;
  PagedKvCache& cache_;
  BlockFileReader reader_;  // the thread's
  mutable std::mutex mu_;
  std::condition_variable wake_;  // the thread: a job or stop
  std::condition_variable done_;  // take(wait) and cancel(): a job ended
  std::deque<PrefixLoadJob> queue_;
  std::optional<SeqId> running_;  // the job being read
  std::atomic<bool> cancel_running_{false};
  std::vector<PrefixLoadResult> finished_;
  bool stop_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace kvforge
