// Strict checks of an HTTP/1.1 request head (RFC 9112) before cpp-httplib
// parses it.
//
// cpp-httplib 0.11 is lenient where leniency lets one request be read as two:
// it takes the first of differing Content-Length fields, reads "+30" and
// "30, 5" as numbers, ignores a Transfer-Encoding it does not know in favour of
// Content-Length, answers a request line without a version, and after refusing
// an over-long header line it goes on reading the connection, so the rest of
// that request (a body holding another request, say) is served. Behind a proxy
// that frames requests differently, each of these is request smuggling.
//
// DeadlineServer reads every head itself, runs check_request_head() on it and
// hands httplib only heads that pass; a refused head is answered once and the
// connection closed. The rules are those of RFC 9112 §2-§6 that decide where
// a request ends, plus the field-value characters of RFC 9110 §5.5:
//
// - every line ends in CRLF (a bare CR or LF is refused);
// - the request line is `method SP target SP HTTP/1.x`, at most 8 KiB (414);
// - each field line is `name: value`: no whitespace before the colon, no
//   obsolete line folding, no control character in the value, at most 8 KiB;
// - at most one Content-Length, a plain decimal number;
// - at most one Transfer-Encoding, exactly "chunked" (501 otherwise), never
//   beside Content-Length, never in HTTP/1.0;
// - HTTP/1.1 has exactly one Host;
// - a Content-Encoding other than "identity" is refused with 415: the server
//   reads bodies as sent.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kvforge::server {

// Why a request head is refused: the status to answer and a message naming the problem.
struct HeadRefusal {
  int status;
  std::string message;
};

inline constexpr size_t kMaxRequestLineBytes = 8192;
inline constexpr size_t kMaxFieldLineBytes = 8192;

// How a head that passed the checks frames its body.
struct BodyFraming {
  bool chunked = false;
  std::optional<size_t> content_length;  // none and not chunked: no body (RFC 9112 §6.3)
};

// `head` is the request line and field lines including the empty line that
// ends them. nullopt when the head frames exactly one request; `framing`,
// when given, then says how.
std::optional<HeadRefusal> check_request_head(std::string_view head,
                                              BodyFraming* framing = nullptr);

// Why a field line (a header, or a trailer of a chunked body; without its
// CRLF) breaks the rules above; nullopt when it keeps them.
std::optional<std::string> field_line_problem(std::string_view line);

// `head` (which passed check_request_head) with its Transfer-Encoding and
// Content-Length fields replaced by "Content-Length: <length>": a chunked body
// decoded here, or no body at all, as cpp-httplib then reads it (left to
// itself it reads a chunk size of "zz" as 0, and a POST without a length until
// the connection closes).
std::string with_content_length(std::string_view head, size_t length);

// Where a head ends in `bytes`: the offset just past its empty line (CRLF CRLF,
// or a bare LF ending the empty line, which check_request_head then refuses);
// npos when the empty line has not arrived yet.
size_t request_head_end(std::string_view bytes);

// The reason phrase of the statuses the server answers by itself.
const char* reason_phrase(int status);

}  // namespace kvforge::server
