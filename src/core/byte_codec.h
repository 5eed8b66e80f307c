// Little-endian binary encoding shared by kvforge's file and message formats
// (GGUF, the lockstep step message, the static plan file, the disk tier's KV
// block file): a growing ByteWriter and a bounds-checked, forward-only
// ByteReader over a byte span.
//
// Every read is checked against the end of the span before it touches memory.
// A short read calls the reader's ShortReadHandler with the field's name, its
// offset and the bytes needed vs left, so each format throws its own error
// type with its own wording (file name, context); the handler must throw.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kvforge {

static_assert(std::endian::native == std::endian::little,
              "the byte codec copies scalars as they are in memory; port it before building on "
              "a big-endian host");

// A read that would run past the end: field `what` at `offset` needs `needed`
// bytes, `left` remain from there.
struct ShortRead {
  std::string_view what;
  uint64_t offset = 0;
  uint64_t needed = 0;
  uint64_t left = 0;
};

// Builds the format's error from a short read and throws it.
using ShortReadHandler = std::function<void(const ShortRead&)>;

// "<what> needs <needed> bytes at offset <offset>, <left> left": the facts of
// a short read, for handlers that only add a prefix.
std::string describe_short_read(const ShortRead& s);

class ByteReader {
 public:
  // Without a handler a short read throws std::out_of_range(describe_short_read).
  explicit ByteReader(std::span<const uint8_t> bytes, ShortReadHandler on_short = nullptr)
      : bytes_(bytes), on_short_(std::move(on_short)) {}

  uint64_t offset() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  // Checks that `n` more bytes of `what` are there, without consuming them.
  void need(uint64_t n, std::string_view what) const {
    if (n > remaining()) short_read(n, what);
  }

  template <class T>
  T get(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }

  // The next `n` bytes, viewed in place.
  std::span<const uint8_t> bytes(uint64_t n, std::string_view what) {
    need(n, what);
    const std::span<const uint8_t> out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

  std::string string(uint64_t n, std::string_view what) {
    const std::span<const uint8_t> b = bytes(n, what);
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }

  // A u64 byte count, then that many bytes (ByteWriter::sized_bytes).
  std::span<const uint8_t> sized_bytes(std::string_view what) {
    return bytes(get<uint64_t>(what), what);
  }

  void skip(uint64_t n, std::string_view what) { bytes(n, what); }

 private:
  [[noreturn]] void short_read(uint64_t n, std::string_view what) const {
    const ShortRead s{what, pos_, n, remaining()};
    if (on_short_) on_short_(s);
    throw std::out_of_range(describe_short_read(s));
  }

  std::span<const uint8_t> bytes_;
  ShortReadHandler on_short_;
  uint64_t pos_ = 0;
};

class ByteWriter {
 public:
  // Appends to `prefix` (bytes already encoded).
  explicit ByteWriter(std::vector<uint8_t> prefix = {}) : out_(std::move(prefix)) {}

  void reserve(size_t n) { out_.reserve(n); }
  size_t size() const { return out_.size(); }
  const uint8_t* data() const { return out_.data(); }

  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof v);
  }

  // resize + memcpy rather than insert: GCC 12 misreports insert into an
  // empty vector as an overflow (-Wstringop-overflow).
  void bytes(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, p, n);
  }

  // A u64 byte count, then the bytes.
  void sized_bytes(const void* p, size_t n) {
    put(uint64_t(n));
    bytes(p, n);
  }

  // `n` bytes of 0 (reserved fields, alignment padding).
  void zeros(size_t n) { out_.resize(out_.size() + n, 0); }

  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

}  // namespace kvforge
