// GGUF's reader of little-endian scalars and strings: core/byte_codec.h's
// bounds-checked ByteReader, whose short reads throw GgufError naming the
// file, the current context (set by the parser: "key 'x'", "tensor 'y'") and
// what was being read, with the offset and how many bytes were needed vs
// available.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/byte_codec.h"
#include "core/gguf/gguf_file.h"

namespace kvforge::gguf {

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
      : reader_(bytes, [this](const ShortRead& s) { truncated(s); }), file_name_(file_name) {}
  // The reader's handler points back at this cursor.
  ByteCursor(const ByteCursor&) = delete;
  ByteCursor& operator=(const ByteCursor&) = delete;

  uint64_t offset() const { return reader_.offset(); }
  uint64_t size() const { return reader_.size(); }
  uint64_t remaining() const { return reader_.remaining(); }

  // Names what is being parsed, for error messages ("key 'general.name'").
  void set_context(std::string context) { context_ = std::move(context); }
  const std::string& context() const { return context_; }

  uint8_t u8(std::string_view what) { return reader_.get<uint8_t>(what); }
  uint16_t u16(std::string_view what) { return reader_.get<uint16_t>(what); }
  uint32_t u32(std::string_view what) { return reader_.get<uint32_t>(what); }
  uint64_t u64(std::string_view what) { return reader_.get<uint64_t>(what); }

  // GGUF string (v2/v3): u64 byte length, then that many bytes, no terminator.
  std::string string(std::string_view what) {
    const uint64_t offset_of_length = offset();
    const uint64_t length = u64(what);
    if (length > remaining()) {
      fail(std::string(what) + " at offset " + std::to_string(offset_of_length) + ": length " +
           std::to_string(length) + " exceeds the " + std::to_string(remaining()) +
           " bytes left in the file");
    }
    return reader_.string(length, what);
  }

  // Throws GgufError "<file>: <context>: <detail>".
  [[noreturn]] void fail(const std::string& detail) const {
    std::string msg = file_name_ + ": ";
    if (!context_.empty()) msg += context_ + ": ";
    throw GgufError(msg + detail);
  }

 private:
  [[noreturn]] void truncated(const ShortRead& s) const {
    fail("truncated reading " + std::string(s.what) + " at offset " + std::to_string(s.offset) +
         " (need " + std::to_string(s.needed) + " bytes, " + std::to_string(s.left) + " left)");
  }

  ByteReader reader_;
  std::string file_name_;
  std::string context_;
};

}  // namespace kvforge::gguf
