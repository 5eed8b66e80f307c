#include "engine/kv/kv_checksum.h"

#include <cstring>

namespace kvforge {
namespace {

constexpr uint64_t kP1 = 0x9e3779b185ebca87ull;
constexpr uint64_t kP2 = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kP3 = 0x165667b19e3779f9ull;
constexpr uint64_t kP4 = 0x85ebca77c2b2ae63ull;
constexpr uint64_t kP5 = 0x27d4eb2f165667c5ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t read64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts only (the block file is little-endian too)
}

uint32_t read32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint64_t round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  return rotl(acc, 31) * kP1;
}

uint64_t merge(uint64_t h, uint64_t acc) {
  h ^= round(0, acc);
  return h * kP1 + kP4;
}

}  // namespace

void Xxh64::update(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  total_ += n;
  if (buffered_ + n < 32) {
    std::memcpy(buf_ + buffered_, p, n);
    buffered_ += n;
    return;
  }
  if (buffered_ > 0) {
    const size_t fill = 32 - buffered_;
    std::memcpy(buf_ + buffered_, p, fill);
    for (int i = 0; i < 4; ++i) acc_[i] = round(acc_[i], read64(buf_ + 8 * i));
    p += fill;
    n -= fill;
    buffered_ = 0;
  }
  uint64_t a0 = acc_[0], a1 = acc_[1], a2 = acc_[2], a3 = acc_[3];
  for (; n >= 32; p += 32, n -= 32) {
    a0 = round(a0, read64(p));
    a1 = round(a1, read64(p + 8));
    a2 = round(a2, read64(p + 16));
    a3 = round(a3, read64(p + 24));
  }
  acc_[0] = a0, acc_[1] = a1, acc_[2] = a2, acc_[3] = a3;
  std::memcpy(buf_, p, n);
  buffered_ = n;
}

uint64_t Xxh64::digest() const {
  uint64_t h;
  if (total_ >= 32) {
    h = rotl(acc_[0], 1) + rotl(acc_[1], 7) + rotl(acc_[2], 12) + rotl(acc_[3], 18);
    for (int i = 0; i < 4; ++i) h = merge(h, acc_[i]);
  } else {
    h = acc_[2] + kP5;  // seed 0
  }
  h += total_;
  const uint8_t* p = buf_;
  size_t n = buffered_;
  for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ round(0, read64(p)), 27) * kP1 + kP4;
  if (n >= 4) {
    h = rotl(h ^ (uint64_t(read32(p)) * kP1), 23) * kP2 + kP3;
    p += 4;
    n -= 4;
  }
  for (; n > 0; ++p, --n) h = rotl(h ^ (uint64_t(*p) * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  return h ^ (h >> 32);
}

uint64_t xxh64(const void* data, size_t n) {
  Xxh64 h;
  h.update(data, n);
  return h.digest();
}

}  // namespace kvforge
