// Where a sequence's K/V lives, as the scheduler sees it (engine/scheduler.h):
// a question, then an action, as in the block manager (an action whose
// question would have said "no" throws std::logic_error and changes nothing).
// Two implementations:
//   - the paged block manager (kv/block_manager.h): blocks of one shared
//     pool, a prefix cache of full blocks, copy-on-write forks;
//   - the static slot manager (static_pipeline/static_slot_manager.h): one
//     fixed slot of max_prompt_len + min_response_len positions per branch,
//     a free slot keeping its K/V for the next prompt that shares a prefix.
// Metadata only: neither touches K/V; the engine's step executor does.
#pragma once

#include <cstdint>
#include <span>

namespace kvforge {

using SeqId = int32_t;  // the KvStore's sequence id

class KvManager {
 public:
  virtual ~KvManager() = default;

  // Prefix lookup: leading tokens of `tokens` whose K/V is held for reuse;
  // always fewer than tokens.size() (the last token's logits are needed).
  virtual int32_t cached_prefix(std::span<const int32_t> tokens) const = 0;
  // Whether a new sequence standing for `width` branches (the forks of its
  // prompt to come) can be admitted holding the first n_tokens of `tokens`.
  virtual bool can_admit(std::span<const int32_t> tokens, int32_t n_tokens, int width) const = 0;
  // Admits `seq` (must not exist) holding the first n_tokens of `tokens`;
  // returns how many leading tokens already have K/V (cached_prefix), which
  // the caller must not recompute.
  virtual int32_t admit(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens) = 0;

  // Room for n more positions after the sequence's current length.
  virtual bool can_append(SeqId seq, int32_t n) const = 0;
  virtual void append(SeqId seq, int32_t n) = 0;
  // Gives back the positions past n_tokens (a prefix a lower tier restored
  // only in part).
  virtual void truncate(SeqId seq, int32_t n_tokens) = 0;
  // Positions [0, n_computed) of `seq` now hold the K/V of
  // tokens[0, n_computed): what later admissions may reuse.
  virtual void mark_computed(SeqId seq, std::span<const int32_t> tokens, int32_t n_computed) = 0;
  // Releases the sequence's K/V (what a prefix cache keeps stays reusable).
  virtual void free(SeqId seq) = 0;
};

}  // namespace kvforge
