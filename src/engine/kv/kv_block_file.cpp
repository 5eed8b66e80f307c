#include "engine/kv/kv_block_file.h"

#include <cstring>

#include "engine/kv/kv_checksum.h"

namespace kvforge {
namespace {

constexpr uint8_t kMagic[8] = {'K', 'V', 'F', 'B', 'L', 'K', 0, 1};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 64;

template <typename T>
void put(std::vector<uint8_t>& out, size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof v);
}

template <typename T>
T get(std::span<const uint8_t> in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

}  // namespace

uint64_t KvBlockIdentity::fingerprint() const {
  const uint64_t fields[] = {
      kVersion, model, uint64_t(format.k), uint64_t(format.v), uint64_t(block_size), payload_bytes};
  return xxh64(fields, sizeof fields);
}

size_t block_file_bytes(const KvBlockIdentity& id, size_t n_prefix_tokens) {
  return kHeaderBytes + 4 * n_prefix_tokens + size_t(id.payload_bytes) + 8;
}

std::vector<uint8_t> encode_block_file(const KvBlockIdentity& id, uint64_t chain_hash,
                                       std::span<const int32_t> prefix_tokens,
                                       std::span<const uint8_t> payload) {
  std::vector<uint8_t> out(block_file_bytes(id, prefix_tokens.size()), 0);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put<uint32_t>(out, 8, kVersion);
  put<uint32_t>(out, 12, uint32_t(kHeaderBytes));
  put<uint64_t>(out, 16, id.fingerprint());
  out[24] = uint8_t(id.format.k);
  out[25] = uint8_t(id.format.v);
  put<uint32_t>(out, 28, uint32_t(id.block_size));
  put<uint32_t>(out, 32, uint32_t(prefix_tokens.size()));
  put<uint64_t>(out, 40, chain_hash);
  put<uint64_t>(out, 48, uint64_t(payload.size()));
  std::memcpy(out.data() + kHeaderBytes, prefix_tokens.data(), 4 * prefix_tokens.size());
  const size_t payload_at = kHeaderBytes + 4 * prefix_tokens.size();
  std::memcpy(out.data() + payload_at, payload.data(), payload.size());
  put<uint64_t>(out, out.size() - 8, xxh64(out.data(), out.size() - 8));
  return out;
}

const char* block_file_check_name(BlockFileCheck c) {
  switch (c) {
    case BlockFileCheck::kOk:
      return "ok";
    case BlockFileCheck::kTruncated:
      return "truncated";
    case BlockFileCheck::kBadMagic:
      return "bad magic or version";
    case BlockFileCheck::kChecksum:
      return "checksum mismatch";
    case BlockFileCheck::kOtherIdentity:
      return "other model, KV format or block size";
    case BlockFileCheck::kOtherTokens:
      return "other token ids";
  }
  return "?";
}

BlockFileCheck decode_block_file(std::span<const uint8_t> file, const KvBlockIdentity& id,
                                 uint64_t chain_hash, std::span<const int32_t> prefix_tokens,
                                 std::span<const uint8_t>& payload) {
  if (file.size() < kHeaderBytes + 8) return BlockFileCheck::kTruncated;
  if (std::memcmp(file.data(), kMagic, sizeof kMagic) != 0 || get<uint32_t>(file, 8) != kVersion ||
      get<uint32_t>(file, 12) != kHeaderBytes)
    return BlockFileCheck::kBadMagic;
  // Sizes from the header are checked against the file before they index it.
  const uint64_t n_tokens = get<uint32_t>(file, 32);
  const uint64_t payload_bytes = get<uint64_t>(file, 48);
  if (payload_bytes > file.size() || kHeaderBytes + 4 * n_tokens + payload_bytes + 8 != file.size())
    return BlockFileCheck::kTruncated;
  if (get<uint64_t>(file, file.size() - 8) != xxh64(file.data(), file.size() - 8))
    return BlockFileCheck::kChecksum;
  if (get<uint64_t>(file, 16) != id.fingerprint() || file[24] != uint8_t(id.format.k) ||
      file[25] != uint8_t(id.format.v) || get<uint32_t>(file, 28) != uint32_t(id.block_size) ||
      payload_bytes != id.payload_bytes)
    return BlockFileCheck::kOtherIdentity;
  if (get<uint64_t>(file, 40) != chain_hash || n_tokens != prefix_tokens.size() ||
      std::memcmp(file.data() + kHeaderBytes, prefix_tokens.data(), 4 * n_tokens) != 0)
    return BlockFileCheck::kOtherTokens;
  payload = file.subspan(kHeaderBytes + 4 * n_tokens, payload_bytes);
  return BlockFileCheck::kOk;
}

}  // namespace kvforge
