// One I/O thread that restores a sequence's prefix blocks from the disk tier
// into room reserved for them (pool blocks of the paged engine, a staging
// buffer of a static slot), so the engine's other sequences keep stepping
// while the files are read (the disk tier's read side, disk_tier_reader.h,
// owns it).
//
// The thread blocks on reads and copies; it computes nothing, so it runs
// beside the compute thread pool without taking a core from it for long,
// and it never uses that pool. It touches only what a job names: the files
// (KvDiskTier::read_block) and the job's destination (its `import`), which
// no one else reads or writes while the job is queued or running: pool
// blocks of a sequence in the loading state that carry no prefix-cache
// entry yet, or a staging buffer only the loading sequence's landing reads.
//
// Hand-over: a finished job's result is published under the mutex, after
// the thread's last write into its destination, and take() reads it under
// the same mutex; that orders those bytes before anything the engine thread
// (and the compute threads it starts afterwards) does with them. cancel()
// returns only once the thread no longer writes into the job's destination,
// so the caller may free it.
//
// Stalls: a read can block (a hung network file system, a dying disk), and
// the engine waits on loads when it has nothing else to compute. When the
// job in flight has gone `stall_timeout` without finishing a block read
// (since it started or since its last one), take() abandons it and every
// queued one: their results come back at once (the blocks
// read so far, then a kIoError read naming the stuck file, which turns the
// tier off), and those positions are recomputed. Abandoning waits only for
// a block copy in progress, never for the read: the thread drops what it
// reads afterwards. Destroying the loader still joins the thread, so it
// waits for that read to return.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/kv/kv_disk_tier.h"
#include "engine/kv/kv_manager.h"

namespace kvforge {

struct PrefixLoadJob {
  SeqId seq = 0;
  int32_t from_block = 0;        // depth of the first block to load
  std::vector<int32_t> tokens;   // [(from_block + n) * block_size] the prefix it ends
  std::vector<uint64_t> hashes;  // [n] chain hashes of blocks from_block ...
  // Copies block i's verified payload (block_bytes) to where it goes; runs
  // on the loader thread.
  std::function<void(size_t i, std::span<const uint8_t> payload)> import;
  int32_t eligible = 0;  // prompt blocks past the prefix held in RAM (miss count)
  // A hybrid model's: once every block is a hit, the recurrent-state
  // snapshot after the whole prefix is read (KvDiskTier::read_state) and
  // its verified payload handed here, on the loader thread. Null: none.
  std::function<void(std::span<const uint8_t> payload)> import_state = nullptr;
};

struct PrefixLoadResult {
  SeqId seq = 0;
  std::vector<uint64_t> hashes;              // the job's
  std::vector<KvDiskTier::BlockRead> reads;  // [≤ n] in order; all but the last are hits
  int32_t eligible = 0;
  bool wants_state = false;  // the job had an import_state
  // The snapshot's read, when every block was a hit and the job wants one.
  std::optional<KvDiskTier::BlockRead> state = std::nullopt;
  // Leading blocks whose bytes are now at their destination.
  int32_t n_good() const;
  // Whether the state the job wants (if any) is at its destination.
  bool state_good() const;
};

// How long a load may go without finishing a block read before it is
// abandoned: far above a block read from any working disk, and short
// enough that requests waiting on it recompute instead of timing out.
inline constexpr std::chrono::milliseconds kPrefixLoadStallTimeout{2000};

class PrefixLoader {
 public:
  // KvDiskTier::read_block's signature; tests inject slow reads.
  using ReadBlockFn = std::function<KvDiskTier::BlockRead(
      uint64_t chain_hash, std::span<const int32_t> prefix_tokens, BlockFileReader& reader,
      std::span<const uint8_t>& payload)>;

  // disk must outlive this; `mode`: how the thread reads files;
  // read: how it reads one block (disk.read_block when null).
  PrefixLoader(const KvDiskTier& disk, KvReadMode mode,
               std::chrono::milliseconds stall_timeout = kPrefixLoadStallTimeout,
               ReadBlockFn read = nullptr);
  // Stops after the job in flight (if any); queued jobs are dropped.
  ~PrefixLoader();
  PrefixLoader(const PrefixLoader&) = delete;
  PrefixLoader& operator=(const PrefixLoader&) = delete;

  void submit(PrefixLoadJob job);
  // Finished (or abandoned, see Stalls) jobs since the last call, oldest
  // first. wait: block until at least one is finished, unless none is queued
  // or running; never longer than about stall_timeout.
  std::vector<PrefixLoadResult> take(bool wait);
  // Forgets seq's job, queued, running or finished; returns once the thread
  // writes to its destination no more (without waiting for a read).
  void cancel(SeqId seq);
  // Jobs submitted and not yet taken or cancelled.
  int32_t pending() const;

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  void load(const PrefixLoadJob& job, std::unique_lock<std::mutex>& lock);
  void load_state(const PrefixLoadJob& job, std::unique_lock<std::mutex>& lock);
  // Under mu_: the running job stops writing to its destination and its result
  // is dropped; returns once no block copy is in progress.
  void detach_running(std::unique_lock<std::mutex>& lock);
  // Under mu_: abandons the running and queued jobs if no read finished for
  // stall_timeout_ (see Stalls).
  void abandon_if_stalled(std::unique_lock<std::mutex>& lock);
  // Under mu_: nothing queued, and nothing running that anyone waits for.
  bool idle() const { return queue_.empty() && (!running_ || detached_); }

  const KvDiskTier& disk_;
  const std::chrono::milliseconds stall_timeout_;
  const ReadBlockFn read_;
  BlockFileReader reader_;  // the thread's
  mutable std::mutex mu_;
  std::condition_variable wake_;  // the thread: a job or stop
  std::condition_variable done_;  // take(wait) and cancel(): a job ended or a copy did
  std::deque<PrefixLoadJob> queue_;
  std::optional<SeqId> running_;   // the job being read
  PrefixLoadResult current_;       // its reads so far
  bool detached_ = false;          // its result is dropped; no more copies to its destination
  bool copying_ = false;           // the thread is copying a block to its destination
  Clock::time_point progress_at_;  // the running job started or its last read finished
  std::vector<PrefixLoadResult> finished_;
  bool stop_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace kvforge
