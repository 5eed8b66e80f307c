// Hand-assembles GGUF bytes field by field, independently of GgufWriter, so
// tests can state the spec's layout directly and craft malformed files.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace kvforge::gguf::testing {

class RawBytes {
 public:
  RawBytes& u8(uint8_t v) { return put(&v, 1); }
  RawBytes& u16(uint16_t v) { return put(&v, 2); }
  RawBytes& u32(uint32_t v) { return put(&v, 4); }
  RawBytes& u64(uint64_t v) { return put(&v, 8); }
  RawBytes& f32(float v) { return put(&v, 4); }
  RawBytes& str(std::string_view s) {
    u64(s.size());
    return put(s.data(), s.size());
  }
  RawBytes& magic() { return put("GGUF", 4); }
  // magic, version, tensor_count, kv_count
  RawBytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return magic().u32(version).u64(n_tensors).u64(n_kv);
  }
  RawBytes& zeros(size_t n) {
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }
  RawBytes& pad_to(size_t alignment) {
    return zeros((alignment - bytes_.size() % alignment) % alignment);
  }
  size_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  RawBytes& put(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

}  // namespace kvforge::gguf::testing
