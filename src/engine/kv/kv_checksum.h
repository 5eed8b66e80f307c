// A fast 64-bit checksum for KV block files (kv_block_file.h): the XXH64
// algorithm (Yann Collet's xxHash, 64-bit variant, seed 0), written here so
// the engine needs no extra library. Not cryptographic: it guards against
// truncation, torn writes and flipped bits, not against an adversary who
// can write the cache directory (such a writer could as well write a valid
// file). It runs at memory speed, so verifying a restored prefix costs a
// small fraction of reading it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvforge {

// Streaming form, for a checksum over several buffers in order.
class Xxh64 {
 public:
  void update(const void* data, size_t n);
  uint64_t digest() const;

 private:
  uint64_t acc_[4] = {0x60ea27eeadc0b5d6ull, 0xc2b2ae3d27d4eb4full, 0ull, 0x61c8864e7a143579ull};
  uint8_t buf_[32] = {};
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

uint64_t xxh64(const void* data, size_t n);

}  // namespace kvforge
