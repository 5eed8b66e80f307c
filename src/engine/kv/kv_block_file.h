// The file format of one KV block in the disk tier (kv_disk_tier.h): the K/V
// of one full block of group 0 (every layer of a model without sliding
// windows) plus what proves which prefix it belongs to. Little-endian:
//
//   offset size
//        0    8  magic "KVFBLK\0\1"
//        8    4  u32 version (1)
//       12    4  u32 header bytes (64)
//       16    8  u64 tier fingerprint: model, KV format, block size, layout
//                (KvBlockIdentity::fingerprint)
//       24    2  u8 K dtype, u8 V dtype (KvDtype)
//       26    2  u16 reserved, 0
//       28    4  u32 block size (positions per block)
//       32    4  u32 n_tokens: token ids of the whole prefix [0, n_tokens),
//                this block being its last block_size positions
//       36    4  u32 reserved, 0
//       40    8  u64 chained block hash (PrefixCache::chain_hash from the root)
//       48    8  u64 payload bytes
//       56    8  u64 reserved, 0
//       64       i32 token ids [n_tokens]
//        …       payload [payload bytes]: PagedKvCache::export_block's layout
//                ([slots] × (K block bytes, V block bytes))
//      end-8    8  u64 XXH64 of every byte before it
//
// A hybrid model's recurrent-state snapshot (state_snapshots.h) after a
// prefix is a file of the same format under the state identity
// (KvBlockIdentity::for_state): the prefix's token ids, then every
// recurrent layer's conv window and matrices in f32 (the snapshot's layout),
// verified the same way; its fingerprint differs from the blocks', so
// neither kind is ever read as the other.
//
// The whole prefix's token ids are stored (not only this block's) so a
// restored block is proven by comparing ids, never by trusting the hash: a
// 64-bit collision cannot serve another prefix's K/V. That costs
// 4 * n_tokens bytes per file, small next to the payload at the depths a
// context reaches.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/formats/kv_format.h"

namespace kvforge {

// What must match for a block file to be usable by this process.
struct KvBlockIdentity {
  uint64_t model = 0;  // model_fingerprint() of the GGUF (plus tensor-parallel rank when split)
  KvFormat format;
  int32_t block_size = 0;
  uint64_t payload_bytes = 0;  // PagedKvCache::block_bytes: implies slots, heads, head_dim
  // A hybrid model's snapshot bytes (ModelConfig::state_bytes_per_sequence);
  // 0: the model keeps no recurrent state.
  uint64_t state_bytes = 0;
  bool state = false;  // this identity names snapshot files, not K/V blocks
  // One value covering all of the above and the file layout version (the
  // last two only when set, so a dense model's files keep their names).
  uint64_t fingerprint() const;
  // The identity of this tier's snapshot files: payload_bytes = state_bytes.
  KvBlockIdentity for_state() const;
};

// Header + ids + payload + checksum, ready to write.
std::vector<uint8_t> encode_block_file(const KvBlockIdentity& id, uint64_t chain_hash,
                                       std::span<const int32_t> prefix_tokens,
                                       std::span<const uint8_t> payload);

size_t block_file_bytes(const KvBlockIdentity& id, size_t n_prefix_tokens);

// Why a file was refused (kOk: it is the block asked for).
enum class BlockFileCheck { kOk, kTruncated, kBadMagic, kChecksum, kOtherIdentity, kOtherTokens };
const char* block_file_check_name(BlockFileCheck c);

// Checks `file` against what the caller expects: size, magic, checksum,
// identity, hash and every token id. On kOk, `payload` views the payload
// bytes inside `file`.
BlockFileCheck decode_block_file(std::span<const uint8_t> file, const KvBlockIdentity& id,
                                 uint64_t chain_hash, std::span<const int32_t> prefix_tokens,
                                 std::span<const uint8_t>& payload);

}  // namespace kvforge
