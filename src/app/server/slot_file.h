// The file of a saved slot (POST /slots/{id}?action=save, slot_files.h): a
// conversation's token ids and the K/V of its whole prefix blocks, each block
// a disk-tier block file (engine/kv/kv_block_file.h), which carries the
// model/format fingerprint, every token id of its prefix and a checksum and is
// verified by Engine::import_prefix. Little-endian:
//
//   offset size
//        0    8  magic "KVFSLOT\0"
//        8    4  u32 version (1)
//       12    4  u32 n_tokens
//       16    4  u32 n_blocks
//       20    4  u32 model label bytes (at most 4096)
//       24    8  u64 block fingerprint (Engine::block_fingerprint)
//       32       model label (the GGUF file name, for the refusal message)
//        …       i32 token ids [n_tokens]
//        …       n_blocks × (u64 bytes, block file [bytes])
//
// The header's fingerprint lets a file of another model or KV format be
// refused by name before any block is read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvforge::server {

struct SlotFile {
  uint64_t fingerprint = 0;
  std::string model;
  std::vector<int32_t> tokens;
  std::vector<std::vector<uint8_t>> blocks;
};

std::vector<uint8_t> encode_slot_file(const SlotFile& f);
// Throws std::runtime_error saying what is wrong (not a slot file, another
// version, truncated, sizes that do not add up).
SlotFile decode_slot_file(const std::vector<uint8_t>& bytes);

}  // namespace kvforge::server
