#include "app/chat/gemma4_arguments.h"

#include <cstdio>

#include "app/chat/reasoning_reader.h"

namespace kvforge {
namespace gemma4_args {  // (named: the chat files share one unity translation unit)
namespace {

bool space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

// The bytes of `s` as the inside of a JSON string, escaped as nlohmann::json
// writes it (so as llama-server does): short escapes where JSON has them.
void append_escaped(std::string_view s, std::string& json) {
  for (const char c : s) {
    switch (c) {
      case '"':
        json += "\\\"";
        break;
      case '\\':
        json += "\\\\";
        break;
      case '\b':
        json += "\\b";
        break;
      case '\f':
        json += "\\f";
        break;
      case '\n':
        json += "\\n";
        break;
      case '\r':
        json += "\\r";
        break;
      case '\t':
        json += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          json += buf;
        } else {
          json += c;
        }
    }
  }
}

// A JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][-+]?[0-9]+)?
bool json_number(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && digit(s[i])) ++i;
    return i > from;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < s.size() && s[i] == '.' && (++i, !digits())) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

bool scalar_char(char c) {
  return digit(c) || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' || c == 'E';
}

void skip_space(std::string_view text, size_t& pos) {
  while (pos < text.size() && space(text[pos])) ++pos;
}

}  // namespace
}  // namespace gemma4_args

namespace g4a = gemma4_args;

bool Gemma4Arguments::open(char bracket, std::string& json) {
  if (open_.size() == kMaxDepth) return false;
  open_.push_back(bracket);
  json += bracket;
  expect_ = bracket == '{' ? Expect::kFirstKey : Expect::kFirstValue;
  return true;
}

// A value's first byte: an object, an array, a string's mark, or a scalar.
bool Gemma4Arguments::value(std::string_view text, size_t& pos, std::string& json) {
  g4a::skip_space(text, pos);
  if (pos == text.size()) return false;
  const char c = text[pos];
  const bool first = expect_ == Expect::kFirstValue;
  if (open_.empty() && c != '{') {
    status_ = Status::kBroken;  // the arguments are an object
    return false;
  }
  if (c == '{' || c == '[') {
    ++pos;
    if (!open(c, json)) status_ = Status::kBroken;
    return status_ != Status::kBroken;
  }
  if (c == ']' && first) return after_value(text, pos, json);  // an empty array
  if (c == '<') {
    const std::string_view rest = text.substr(pos);
    if (rest.size() < kQuote.size() && kQuote.starts_with(rest)) return false;
    if (!rest.starts_with(kQuote)) {
      status_ = Status::kBroken;
      return false;
    }
    pos += kQuote.size();
    json += '"';
    expect_ = Expect::kString;
    return true;
  }
  if (!g4a::scalar_char(c)) {
    status_ = Status::kBroken;
    return false;
  }
  held_.clear();
  expect_ = Expect::kScalar;
  return true;
}

// A key up to its ':' (written whole), or the '}' of an empty object.
bool Gemma4Arguments::key(std::string_view text, size_t& pos, std::string& json) {
  if (held_.empty()) g4a::skip_space(text, pos);
  if (pos < text.size() && held_.empty() && text[pos] == '}' && expect_ == Expect::kFirstKey)
    return after_value(text, pos, json);
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (c == ':') break;
    if (c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == '<' || c == '\n') {
      status_ = Status::kBroken;
      return false;
    }
    held_ += c;
  }
  if (pos == text.size()) return false;
  if (held_.empty()) {
    status_ = Status::kBroken;
    return false;
  }
  ++pos;  // the ':'
  json += '"';
  g4a::append_escaped(held_, json);
  json += "\":";
  held_.clear();
  expect_ = Expect::kValue;
  return true;
}

// A string's text up to its closing mark; a possible start of the mark is held.
bool Gemma4Arguments::string(std::string_view text, size_t& pos, std::string& json) {
  const std::string_view rest = text.substr(pos);
  const size_t end = rest.find(kQuote);
  if (end == std::string_view::npos) {
    const size_t take = rest.size() - tag_start_at_end(rest, kQuote);
    g4a::append_escaped(rest.substr(0, take), json);
    pos += take;
    return false;
  }
  g4a::append_escaped(rest.substr(0, end), json);
  json += '"';
  pos += end + kQuote.size();
  expect_ = Expect::kAfterValue;
  return true;
}

// A number, true, false or null: checked once the byte after it comes.
bool Gemma4Arguments::scalar(std::string_view text, size_t& pos, std::string& json) {
  while (pos < text.size() && g4a::scalar_char(text[pos]) && held_.size() <= kMaxScalarBytes)
    held_ += text[pos++];
  if (held_.size() > kMaxScalarBytes) {
    status_ = Status::kBroken;
    return false;
  }
  if (pos == text.size()) return false;
  if (held_ != "true" && held_ != "false" && held_ != "null" && !g4a::json_number(held_)) {
    status_ = Status::kBroken;
    return false;
  }
  json += held_;
  held_.clear();
  expect_ = Expect::kAfterValue;
  return true;
}

// After a value: ',' and the next key or element, or the bracket closing its level.
bool Gemma4Arguments::after_value(std::string_view text, size_t& pos, std::string& json) {
  g4a::skip_space(text, pos);
  if (pos == text.size()) return false;
  const char c = text[pos++];
  const char level = open_.back();
  if (c == ',') {
    json += c;
    expect_ = level == '{' ? Expect::kKey : Expect::kValue;
    return true;
  }
  if ((c == '}' && level == '{') || (c == ']' && level == '[')) {
    json += c;
    open_.pop_back();
    expect_ = Expect::kAfterValue;
    if (open_.empty()) status_ = Status::kDone;
    return !open_.empty();
  }
  status_ = Status::kBroken;
  return false;
}

Gemma4Arguments::Status Gemma4Arguments::read(std::string_view text, size_t& pos,
                                              std::string& json) {
  bool more = status_ == Status::kMore;
  while (more) {
    switch (expect_) {
      case Expect::kValue:
      case Expect::kFirstValue:
        more = value(text, pos, json);
        break;
      case Expect::kKey:
      case Expect::kFirstKey:
        more = key(text, pos, json);
        break;
      case Expect::kString:
        more = string(text, pos, json);
        break;
      case Expect::kScalar:
        more = scalar(text, pos, json);
        break;
      case Expect::kAfterValue:
        more = after_value(text, pos, json);
        break;
    }
  }
  return status_;
}

std::optional<std::string> gemma4_arguments_json(std::string_view text) {
  Gemma4Arguments reader;
  std::string json;
  size_t pos = 0;
  if (reader.read(text, pos, json) != Gemma4Arguments::Status::kDone) return std::nullopt;
  g4a::skip_space(text, pos);
  if (pos != text.size()) return std::nullopt;
  return json;
}

}  // namespace kvforge
