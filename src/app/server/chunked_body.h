// A chunked request body (RFC 9112 §7.1), read strictly off a stream.
//
// cpp-httplib 0.11 reads chunk sizes with strtoul, so "zz" is a last chunk of
// size 0 and "0x1e" is 0 too: the bytes after such a "last chunk" are then read
// as the next request, where a proxy reading the sizes strictly sees one body.
// kvforge serve reads chunked bodies here instead, and hands httplib the
// decoded body with a Content-Length (http_framing.h).
//
// Accepted: chunk-size in hex (at most 15 digits) with optional extensions
// after ';', CRLF, the data, CRLF; a last chunk of size 0, trailer fields
// (checked as header fields are, then dropped), and the final CRLF.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <string>

namespace kvforge::server {

struct ChunkedRead {
  enum class End { kComplete, kStopped, kClosed, kMalformed, kTooLarge };
  End end = End::kComplete;
  std::string message;  // for kMalformed: what was wrong, and where
};

// Appends the decoded body to `body`. kStopped: a read failed (the stream's
// deadline or byte limit; the caller asks it which), kClosed: the peer closed
// first, kTooLarge: the decoded body passed `max_bytes`.
ChunkedRead read_chunked_body(httplib::Stream& in, size_t max_bytes, std::string& body);

}  // namespace kvforge::server
