#include "app/server/chunked_body.h"

#include <algorithm>
#include <string_view>

#include "app/server/http_framing.h"

namespace kvforge::server {
namespace {

using End = ChunkedRead::End;

constexpr size_t kMaxLineBytes = 8192;  // a chunk-size line, or a trailer field
constexpr size_t kMaxTrailerLines = 64;

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

ChunkedRead failed(End end, std::string message = {}) { return {end, std::move(message)}; }

ChunkedRead read_failed(ssize_t n) { return failed(n == 0 ? End::kClosed : End::kStopped); }

// One line up to its CRLF, without it; a bare CR or LF is malformed.
ChunkedRead read_line(httplib::Stream& in, std::string& line) {
  line.clear();
  char c;
  while (true) {
    const ssize_t n = in.read(&c, 1);
    if (n <= 0) return read_failed(n);
    if (c == '\n') return failed(End::kMalformed, "a line of the chunked body ends with a bare LF");
    if (c == '\r') {
      const ssize_t m = in.read(&c, 1);
      if (m <= 0) return read_failed(m);
      if (c != '\n') return failed(End::kMalformed, "a line of the chunked body holds a bare CR");
      return {};
    }
    if (line.size() == kMaxLineBytes)
      return failed(End::kMalformed, "a line of the chunked body exceeds " +
                                         std::to_string(kMaxLineBytes) + " bytes");
    line.push_back(c);
  }
}

// The size of a chunk-size line ("1a", "1a;name=value"); a message when malformed.
ChunkedRead chunk_size(std::string_view line, size_t& size) {
  size_t digits = 0;
  size = 0;
  while (digits < line.size() && is_hex(line[digits])) {
    if (digits == 15)
      return failed(End::kMalformed, "the chunk size '" + std::string(line.substr(0, 20)) +
                                         "' has more than 15 hex digits");
    const char c = line[digits++];
    size = size * 16 + static_cast<size_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  std::string_view rest = line.substr(digits);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  if (digits == 0 || !(rest.empty() || rest.front() == ';'))
    return failed(End::kMalformed, "the chunk size line '" + std::string(line.substr(0, 40)) +
                                       "' is not a hexadecimal size");
  for (unsigned char c : rest)
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return failed(End::kMalformed, "a chunk extension holds a control character");
  return {};
}

}  // namespace

ChunkedRead read_chunked_body(httplib::Stream& in, size_t max_bytes, std::string& body) {
  std::string line;
  while (true) {
    if (ChunkedRead r = read_line(in, line); r.end != End::kComplete) return r;
    size_t size = 0;
    if (ChunkedRead r = chunk_size(line, size); r.end != End::kComplete) return r;
    if (size == 0) break;
    if (size > max_bytes - body.size()) return failed(End::kTooLarge);
    // Grown as the bytes arrive: a declared size alone reserves no memory.
    char piece[16384];
    for (size_t left = size; left > 0;) {
      const ssize_t n = in.read(piece, std::min(left, sizeof piece));
      if (n <= 0) return read_failed(n);
      body.append(piece, static_cast<size_t>(n));
      left -= static_cast<size_t>(n);
    }
    if (ChunkedRead r = read_line(in, line); r.end != End::kComplete) return r;
    if (!line.empty())
      return failed(End::kMalformed, "a chunk's data is longer than its size says");
  }
  for (size_t trailers = 0;; ++trailers) {
    if (ChunkedRead r = read_line(in, line); r.end != End::kComplete) return r;
    if (line.empty()) return {};
    if (const auto problem = field_line_problem(line))
      return failed(End::kMalformed, "trailer: " + *problem);
    if (trailers == kMaxTrailerLines)
      return failed(End::kMalformed, "the chunked body has more than " +
                                         std::to_string(kMaxTrailerLines) + " trailer fields");
  }
}

}  // namespace kvforge::server
