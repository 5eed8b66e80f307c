#include "engine/kv/kv_block_file.h"

#include <cstring>

#include "core/byte_codec.h"
#include "core/enum_names.h"
#include "engine/kv/kv_checksum.h"

namespace kvforge {
namespace {

constexpr uint8_t kMagic[8] = {'K', 'V', 'F', 'B', 'L', 'K', 0, 1};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 64;

// The header's fields (kv_block_file.h), reserved ones left out.
struct BlockFileHeader {
  std::span<const uint8_t> magic;
  uint32_t version = 0;
  uint32_t header_bytes = 0;
  uint64_t fingerprint = 0;
  uint8_t k_dtype = 0, v_dtype = 0;
  uint32_t block_size = 0;
  uint32_t n_tokens = 0;
  uint64_t chain_hash = 0;
  uint64_t payload_bytes = 0;
};

// `r` holds at least kHeaderBytes.
BlockFileHeader read_header(ByteReader& r) {
  BlockFileHeader h;
  h.magic = r.bytes(sizeof kMagic, "magic");
  h.version = r.get<uint32_t>("version");
  h.header_bytes = r.get<uint32_t>("header bytes");
  h.fingerprint = r.get<uint64_t>("fingerprint");
  h.k_dtype = r.get<uint8_t>("K dtype");
  h.v_dtype = r.get<uint8_t>("V dtype");
  r.skip(2, "reserved");
  h.block_size = r.get<uint32_t>("block size");
  h.n_tokens = r.get<uint32_t>("token count");
  r.skip(4, "reserved");
  h.chain_hash = r.get<uint64_t>("chain hash");
  h.payload_bytes = r.get<uint64_t>("payload bytes");
  r.skip(8, "reserved");
  return h;
}

}  // namespace

uint64_t KvBlockIdentity::fingerprint() const {
  const uint64_t fields[] = {
      kVersion, model, uint64_t(format.k), uint64_t(format.v), uint64_t(block_size), payload_bytes};
  const uint64_t h = xxh64(fields, sizeof fields);
  if (state_bytes == 0 && !state) return h;
  const uint64_t more[] = {h, state_bytes, uint64_t(state)};
  return xxh64(more, sizeof more);
}

KvBlockIdentity KvBlockIdentity::for_state() const {
  KvBlockIdentity s = *this;
  s.payload_bytes = state_bytes;
  s.state = true;
  return s;
}

size_t block_file_bytes(const KvBlockIdentity& id, size_t n_prefix_tokens) {
  return kHeaderBytes + 4 * n_prefix_tokens + size_t(id.payload_bytes) + 8;
}

std::vector<uint8_t> encode_block_file(const KvBlockIdentity& id, uint64_t chain_hash,
                                       std::span<const int32_t> prefix_tokens,
                                       std::span<const uint8_t> payload) {
  ByteWriter w;
  w.reserve(block_file_bytes(id, prefix_tokens.size()));
  w.bytes(kMagic, sizeof kMagic);
  w.put(kVersion);
  w.put(uint32_t(kHeaderBytes));
  w.put(id.fingerprint());
  w.put(uint8_t(id.format.k));
  w.put(uint8_t(id.format.v));
  w.zeros(2);
  w.put(uint32_t(id.block_size));
  w.put(uint32_t(prefix_tokens.size()));
  w.zeros(4);
  w.put(chain_hash);
  w.put(uint64_t(payload.size()));
  w.zeros(8);
  w.bytes(prefix_tokens.data(), 4 * prefix_tokens.size());
  w.bytes(payload.data(), payload.size());
  w.put(xxh64(w.data(), w.size()));
  return w.take();
}

constexpr EnumName<BlockFileCheck> kBlockFileCheckNames[] = {
    {BlockFileCheck::kOk, "ok"},
    {BlockFileCheck::kTruncated, "truncated"},
    {BlockFileCheck::kBadMagic, "bad magic or version"},
    {BlockFileCheck::kChecksum, "checksum mismatch"},
    {BlockFileCheck::kOtherIdentity, "other model, KV format or block size"},
    {BlockFileCheck::kOtherTokens, "other token ids"},
};

const char* block_file_check_name(BlockFileCheck c) { return name_of(c, kBlockFileCheckNames); }

BlockFileCheck decode_block_file(std::span<const uint8_t> file, const KvBlockIdentity& id,
                                 uint64_t chain_hash, std::span<const int32_t> prefix_tokens,
                                 std::span<const uint8_t>& payload) {
  if (file.size() < kHeaderBytes + 8) return BlockFileCheck::kTruncated;
  ByteReader r(file.first(file.size() - 8));
  const BlockFileHeader h = read_header(r);
  if (std::memcmp(h.magic.data(), kMagic, sizeof kMagic) != 0 || h.version != kVersion ||
      h.header_bytes != kHeaderBytes)
    return BlockFileCheck::kBadMagic;
  // Sizes from the header are checked against the file before they index it.
  const uint64_t n_tokens = h.n_tokens;
  if (h.payload_bytes > file.size() ||
      kHeaderBytes + 4 * n_tokens + h.payload_bytes + 8 != file.size())
    return BlockFileCheck::kTruncated;
  if (ByteReader(file.last(8)).get<uint64_t>("checksum") != xxh64(file.data(), file.size() - 8))
    return BlockFileCheck::kChecksum;
  if (h.fingerprint != id.fingerprint() || h.k_dtype != uint8_t(id.format.k) ||
      h.v_dtype != uint8_t(id.format.v) || h.block_size != uint32_t(id.block_size) ||
      h.payload_bytes != id.payload_bytes)
    return BlockFileCheck::kOtherIdentity;
  const std::span<const uint8_t> tokens = r.bytes(4 * n_tokens, "token ids");
  if (h.chain_hash != chain_hash || n_tokens != prefix_tokens.size() ||
      std::memcmp(tokens.data(), prefix_tokens.data(), tokens.size()) != 0)
    return BlockFileCheck::kOtherTokens;
  payload = r.bytes(h.payload_bytes, "payload");
  return BlockFileCheck::kOk;
}

}  // namespace kvforge
