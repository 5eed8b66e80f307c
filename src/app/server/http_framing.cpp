#include "app/server/http_framing.h"

#include <cctype>
#include <cstdio>
#include <vector>

#include "app/ascii_case.h"

namespace kvforge::server {
namespace {

// RFC 9110 §5.6.2: the characters of a token (method, field name).
bool token_char(unsigned char c) {
  if (std::isalnum(c)) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!token_char(c)) return false;
  return true;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A value as it may be quoted in a message: at most 40 bytes, control bytes as \xNN.
std::string shown(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 40) out += "...";
  return out;
}

HeadRefusal bad(std::string message) { return {400, std::move(message)}; }

// The lines of a head without their CRLF; a refusal when a line ends otherwise.
std::optional<HeadRefusal> split_lines(std::string_view head,
                                       std::vector<std::string_view>& lines) {
  size_t start = 0;
  while (start < head.size()) {
    const size_t lf = head.find('\n', start);
    if (lf == std::string_view::npos)
      return bad("the request head does not end with an empty line");
    if (lf == start || head[lf - 1] != '\r')
      return bad("line " + std::to_string(lines.size() + 1) +
                 " of the request head ends with a bare LF; HTTP lines end with CRLF");
    const std::string_view line = head.substr(start, lf - 1 - start);
    if (line.find('\r') != std::string_view::npos)
      return bad("line " + std::to_string(lines.size() + 1) +
                 " of the request head holds a bare CR");
    lines.push_back(line);
    start = lf + 1;
  }
  if (lines.empty() || !lines.back().empty())
    return bad("the request head does not end with an empty line");
  lines.pop_back();
  return std::nullopt;
}

std::optional<HeadRefusal> check_request_line(std::string_view line, bool& http10) {
  if (line.size() > kMaxRequestLineBytes)
    return HeadRefusal{
        414, "the request line exceeds " + std::to_string(kMaxRequestLineBytes) + " bytes"};
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return bad("the request line '" + shown(line) +
               "' is not 'METHOD TARGET HTTP/1.1' (three parts separated by single spaces)");
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return bad("the request method '" + shown(method) + "' is not a token");
  if (target.empty()) return bad("the request target is empty");
  for (unsigned char c : target)
    if (c <= 0x20 || c >= 0x7f)
      return bad("the request target holds a byte outside visible ASCII: '" + shown(target) + "'");
  if (version == "HTTP/1.0") {
    http10 = true;
    return std::nullopt;
  }
  if (version == "HTTP/1.1") return std::nullopt;
  if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && std::isdigit(version[5]) &&
      version[6] == '.' && std::isdigit(version[7]))
    return HeadRefusal{
        505, "HTTP version " + std::string(version.substr(5)) + " is not supported; send HTTP/1.1"};
  return bad("the request line ends with '" + shown(version) + "', not an HTTP version");
}

// What the fields that frame a request said.
struct Framing {
  int content_length_fields = 0;
  int transfer_encoding_fields = 0;
  int host_fields = 0;
  std::string_view content_length;
  std::string_view transfer_encoding;
  std::string_view content_encoding;
};

std::optional<HeadRefusal> check_field(std::string_view line, Framing& f) {
  if (line.empty()) return bad("the request head holds an empty line before its end");
  if (line.size() > kMaxFieldLineBytes)
    return bad("a header field line exceeds " + std::to_string(kMaxFieldLineBytes) + " bytes");
  if (line.front() == ' ' || line.front() == '\t')
    return bad("obsolete line folding (a header line starting with whitespace) is not accepted");
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos)
    return bad("the header line '" + shown(line) + "' has no ':'");
  const std::string_view name = line.substr(0, colon);
  if (!is_token(name))
    return bad("the header field name '" + shown(name) +
               "' is not a token (no whitespace before the ':')");
  const std::string_view value = trim_ows(line.substr(colon + 1));
  for (unsigned char c : value)
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return bad("the header field '" + std::string(name) + "' holds a control character (" +
                 shown(std::string_view(reinterpret_cast<const char*>(&c), 1)) + ")");
  if (equals_ignoring_case(name, "Content-Length")) {
    if (++f.content_length_fields > 1) return bad("more than one Content-Length header field");
    if (value.empty() || value.size() > 18)
      return bad("Content-Length '" + shown(value) + "' is not a decimal number of bytes");
    for (char c : value)
      if (c < '0' || c > '9')
        return bad("Content-Length '" + shown(value) + "' is not a decimal number of bytes");
    f.content_length = value;
  } else if (equals_ignoring_case(name, "Transfer-Encoding")) {
    if (++f.transfer_encoding_fields > 1)
      return bad("more than one Transfer-Encoding header field");
    f.transfer_encoding = value;
  } else if (equals_ignoring_case(name, "Host")) {
    if (++f.host_fields > 1) return bad("more than one Host header field");
  } else if (equals_ignoring_case(name, "Content-Encoding")) {
    f.content_encoding = value;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> field_line_problem(std::string_view line) {
  Framing unused;
  if (auto refusal = check_field(line, unused)) return refusal->message;
  return std::nullopt;
}

size_t request_head_end(std::string_view bytes) {
  for (size_t lf = bytes.find('\n'); lf != std::string_view::npos; lf = bytes.find('\n', lf + 1)) {
    // The empty line: LF right after the previous line's LF, with or without a CR between.
    if (lf >= 1 && bytes[lf - 1] == '\n') return lf + 1;
    if (lf >= 2 && bytes[lf - 1] == '\r' && bytes[lf - 2] == '\n') return lf + 1;
  }
  return std::string_view::npos;
}

std::optional<HeadRefusal> check_request_head(std::string_view head, BodyFraming* framing) {
  std::vector<std::string_view> lines;
  if (auto refusal = split_lines(head, lines)) return refusal;
  if (lines.empty() || lines.front().empty())
    return bad("the request starts with an empty line, not a request line");
  bool http10 = false;
  if (auto refusal = check_request_line(lines.front(), http10)) return refusal;
  Framing f;
  for (size_t i = 1; i < lines.size(); ++i)
    if (auto refusal = check_field(lines[i], f)) return refusal;
  if (f.transfer_encoding_fields > 0) {
    if (http10) return bad("Transfer-Encoding is not defined in HTTP/1.0");
    if (f.content_length_fields > 0)
      return bad("both Content-Length and Transfer-Encoding frame the body; send one");
    if (!equals_ignoring_case(f.transfer_encoding, "chunked"))
      return HeadRefusal{501, "Transfer-Encoding '" + shown(f.transfer_encoding) +
                                  "' is not supported; send 'chunked' or a Content-Length"};
  }
  if (!http10 && f.host_fields == 0) return bad("an HTTP/1.1 request needs a Host header field");
  if (!f.content_encoding.empty() && !equals_ignoring_case(f.content_encoding, "identity"))
    return HeadRefusal{415, "Content-Encoding '" + shown(f.content_encoding) +
                                "' is not supported; send the body uncompressed"};
  if (framing) {
    framing->chunked = f.transfer_encoding_fields > 0;
    framing->content_length.reset();
    if (f.content_length_fields > 0)
      framing->content_length = std::stoull(std::string(f.content_length));
  }
  return std::nullopt;
}

std::string with_content_length(std::string_view head, size_t length) {
  std::string out;
  out.reserve(head.size() + 32);
  size_t start = 0;
  while (start < head.size()) {
    const size_t end = head.find('\n', start) + 1;  // check_request_head: every line ends in CRLF
    const std::string_view line = head.substr(start, end - start);
    start = end;
    if (line == "\r\n") break;
    const std::string_view name = line.substr(0, line.find(':'));
    if (equals_ignoring_case(name, "Transfer-Encoding") ||
        equals_ignoring_case(name, "Content-Length"))
      continue;
    out += line;
  }
  out += "Content-Length: " + std::to_string(length) + "\r\n\r\n";
  return out;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

}  // namespace kvforge::server
