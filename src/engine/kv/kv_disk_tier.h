// The disk tier of the prefix cache: full KV blocks as content-addressed
// files in one directory, surviving the process. A tier is an optimisation:
// losing or corrupting it only costs recomputation, never a wrong token.
//
// Names: "<tier fingerprint>-<chained block hash>.kvb", both 16 hex digits,
// so nothing from a request reaches a path and files of another model, KV
// format or block size never collide with ours (they are left alone, and
// not counted against our size limit). Contents: kv_block_file.h; a load
// compares every token id of the prefix, the identity and the checksum, and
// a file that fails is counted, deleted and treated as a miss.
//
// Writes are atomic: a temporary ".tmp-<fingerprint>-<hash>-<pid>.kvb" is
// written, then renamed over the final name. A kill -9 leaves at worst a
// temporary file (deleted by the next process that finds its writer dead)
// or nothing. No fsync: after a power loss a renamed file may hold garbage,
// which the checksum rejects; paying an fsync per block would cost more than
// the recompute it saves.
//
// Snapshots: a hybrid model's tier (identity().state_bytes > 0) also holds
// recurrent-state snapshots at block boundaries, each a file of the same
// format under its own identity (KvBlockIdentity::for_state), named by
// state_key() of the chain hash of the prefix it follows. They share the
// blocks' index, LRU, size limit and faults; a snapshot file that fails
// verification is counted, deleted and a miss, as a block's is.
//
// Size: an LRU by bytes over our fingerprint's files, capacity_bytes in all;
// recency is the file's mtime, refreshed on each hit, so it outlives the
// process. A store that would pass the capacity first deletes the least
// recently used files.
//
// Threads: load() and store() and the other members run on the thread that
// owns the tier (the engine's). read_block() alone may run on another one
// (the paged engine's loader thread, prefix_loader.h) concurrently with
// them: it reads only what the constructor fixed and the files; its caller
// hands the outcome back to the owning thread for note_read().
//
// Faults: any I/O error (a directory that cannot be created or listed, a
// full disk or a file-size limit, a read-only directory, a failing read)
// turns the tier off for the rest of the process with one warning; serving
// goes on from RAM alone and stats().degraded says so. Constructing a tier
// sets SIGXFSZ to ignored (unless the process handles it) so that a
// file-size limit gives EFBIG instead of ending the process. A file deleted
// under us (another process sharing the directory evicted it) is a plain
// miss.
//
// Untrusted entries: only regular files with one name are indexed, read,
// touched or deleted as blocks; links are never followed (lstat, O_NOFOLLOW,
// AT_SYMLINK_NOFOLLOW; unlink removes a link, not its target) and special
// files are never opened (block_file_reader.h). A link, FIFO, socket or
// directory under a block's name costs that block alone: the scan skips it,
// a read refuses it (counted as rejected), a store cannot replace a
// directory and gives up on that block only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/kv/block_file_reader.h"
#include "engine/kv/kv_block_file.h"
#include "kvforge/engine_stats.h"

namespace kvforge {

class KvDiskTier {
 public:
  using WarnFn = std::function<void(const std::string&)>;

  // Creates `dir` if needed and indexes the files of `id` in it. On failure
  // the tier starts degraded (one warning). warn = nullptr: stderr.
  KvDiskTier(std::filesystem::path dir, uint64_t capacity_bytes, KvBlockIdentity id,
             WarnFn warn = nullptr);

  bool enabled() const { return !stats_.degraded; }
  const KvBlockIdentity& identity() const { return id_; }
  // Is a file for this hash indexed? No I/O.
  bool contains(uint64_t chain_hash) const;
  // Writes the block unless its file exists. False when the tier is off or
  // the write failed (which turns it off).
  bool store(uint64_t chain_hash, std::span<const int32_t> prefix_tokens,
             std::span<const uint8_t> payload);
  // Reads and verifies the block of `prefix_tokens` (its last block_size ids
  // being this block's) into out[payload_bytes]. False on a miss or a
  // rejected file; `out` may then hold anything.
  bool load(uint64_t chain_hash, std::span<const int32_t> prefix_tokens, std::span<uint8_t> out);

  // What read_block found; note_read() accounts for it.
  struct BlockRead {
    enum Outcome { kHit, kMissing, kRejected, kIoError } outcome = kMissing;
    int64_t bytes = 0;   // read from the file
    double seconds = 0;  // read + verify
    std::string error;   // kIoError: what failed
  };
  // The I/O of load(), for any thread: reads and verifies the block's file
  // with `reader`; on kHit `payload` views the block's bytes in the reader's
  // buffer. Touches neither the index nor the stats.
  BlockRead read_block(uint64_t chain_hash, std::span<const int32_t> prefix_tokens,
                       BlockFileReader& reader, std::span<const uint8_t>& payload) const;
  // Accounts for a read_block() outcome on the owning thread: a hit refreshes
  // the file's recency, a rejected file is counted and deleted, a missing one
  // forgotten, an I/O error turns the tier off. True on a hit.
  bool note_read(uint64_t chain_hash, const BlockRead& r);
  // How files are read (buffered by default, see reader_): set before the
  // first read; DiskPrefixTier's loader thread copies it when constructed.
  KvReadMode read_mode() const { return reader_.mode(); }
  void set_read_mode(KvReadMode mode) { reader_ = BlockFileReader(mode); }

  // Snapshots (see above): the same calls for the snapshot after the
  // prefix whose last block has this chain hash; `payload` holds
  // identity().state_bytes.
  bool contains_state(uint64_t chain_hash) const;
  bool store_state(uint64_t chain_hash, std::span<const int32_t> prefix_tokens,
                   std::span<const uint8_t> payload);
  BlockRead read_state(uint64_t chain_hash, std::span<const int32_t> prefix_tokens,
                       BlockFileReader& reader, std::span<const uint8_t>& payload) const;
  bool note_state_read(uint64_t chain_hash, const BlockRead& r);
  // The file key of the snapshot after the prefix ending in that block.
  static uint64_t state_key(uint64_t chain_hash);

  // Prompt blocks the caller looked for in neither tier (for stats()).
  void note_misses(int64_t n) { stats_.misses += n; }
  const KvDiskStats& stats() const { return stats_; }
  // The file of a block (its chain hash) or a snapshot (its state_key).
  std::filesystem::path path_of(uint64_t key) const;

 private:
  struct Entry {
    uint64_t bytes = 0;
    std::list<uint64_t>::iterator lru;  // position in lru_
  };
  bool store_file(uint64_t key, const KvBlockIdentity& id, uint64_t chain_hash,
                  std::span<const int32_t> prefix_tokens, std::span<const uint8_t> payload);
  BlockRead read_file(uint64_t key, const KvBlockIdentity& id, uint64_t chain_hash,
                      std::span<const int32_t> prefix_tokens, BlockFileReader& reader,
                      std::span<const uint8_t>& payload) const;
  bool note_file_read(uint64_t key, const BlockRead& r);  // all but the hit counts
  void scan();
  void index(uint64_t chain_hash, uint64_t bytes);  // as the most recently used
  void forget(uint64_t chain_hash, bool unlink_file);
  void touch(uint64_t chain_hash);
  bool make_room(uint64_t bytes);
  bool write_file(const std::filesystem::path& tmp, std::span<const uint8_t> bytes);
  void degrade(const std::string& what);

  std::filesystem::path dir_;
  uint64_t capacity_;
  KvBlockIdentity id_;
  KvBlockIdentity state_id_;  // id_.for_state()
  uint64_t fingerprint_;
  std::string prefix_;  // "<fingerprint>-"
  WarnFn warn_;
  std::list<uint64_t> lru_;  // chain hashes, least recently used first
  std::unordered_map<uint64_t, Entry> index_;
  // Buffered, the best overall: O_DIRECT wins only cold (docs/bench/kv-tiers.md).
  BlockFileReader reader_{KvReadMode::kBuffered};  // load()'s; the loader thread copies its mode
  KvDiskStats stats_;
};

}  // namespace kvforge
