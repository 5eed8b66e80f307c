// A bounds-checked, forward-only reader of little-endian scalars and GGUF
// strings over a byte span. Every read is checked against the end of the span
// before it touches memory; a short read throws GgufError naming the file, the
// current context (set by the parser: "key 'x'", "tensor 'y'") and what was
// being read, with the offset and how many bytes were needed vs available.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "core/gguf/gguf_file.h"

namespace kvforge::gguf {

static_assert(std::endian::native == std::endian::little,
              "GGUF is read by memcpy of little-endian scalars; port ByteCursor before building "
              "on a big-endian host");

// A name read from the file, fit for an error message: control bytes escaped
// as \xNN and at most 120 bytes kept, so a hostile name cannot flood the log.
inline std::string printable_name(std::string_view name) {
  constexpr size_t kMaxShown = 120;
  std::string out;
  for (size_t i = 0; i < name.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (name.size() > kMaxShown) out += "...(" + std::to_string(name.size()) + " bytes)";
  return out;
}

class ByteCursor {
 public:
  ByteCursor(std::span<const uint8_t> bytes, std::string_view file_name)
      : bytes_(bytes), file_name_(file_name) {}

  uint64_t offset() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  // Names what is being parsed, for error messages ("key 'general.name'").
  void set_context(std::string context) { context_ = std::move(context); }
  const std::string& context() const { return context_; }

  uint8_t u8(std::string_view what) { return scalar<uint8_t>(what); }
  uint16_t u16(std::string_view what) { return scalar<uint16_t>(what); }
  uint32_t u32(std::string_view what) { return scalar<uint32_t>(what); }
  uint64_t u64(std::string_view what) { return scalar<uint64_t>(what); }

  // GGUF string (v2/v3): u64 byte length, then that many bytes, no terminator.
  std::string string(std::string_view what) {
    const uint64_t offset_of_length = pos_;
    const uint64_t length = u64(what);
    if (length > remaining()) {
      fail(std::string(what) + " at offset " + std::to_string(offset_of_length) + ": length " +
           std::to_string(length) + " exceeds the " + std::to_string(remaining()) +
           " bytes left in the file");
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return s;
  }

  // Throws GgufError "<file>: <context>: <detail>".
  [[noreturn]] void fail(const std::string& detail) const {
    std::string msg = file_name_ + ": ";
    if (!context_.empty()) msg += context_ + ": ";
    throw GgufError(msg + detail);
  }

 private:
  template <class T>
  T scalar(std::string_view what) {
    if (remaining() < sizeof(T)) {
      fail("truncated reading " + std::string(what) + " at offset " + std::to_string(pos_) +
           " (need " + std::to_string(sizeof(T)) + " bytes, " + std::to_string(remaining()) +
           " left)");
    }
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::span<const uint8_t> bytes_;
  std::string file_name_;
  std::string context_;
  uint64_t pos_ = 0;
};

}  // namespace kvforge::gguf
