#include "app/chat/tool_call_reader.h"

#include <cctype>

namespace kvforge {

ToolCallReader::Match ToolCallReader::expect(std::string_view literal) {
  const std::string_view rest = std::string_view(buf_).substr(pos_);
  const size_t n = std::min(rest.size(), literal.size());
  if (rest.substr(0, n) != literal.substr(0, n)) return Match::kNo;
  if (n < literal.size()) return Match::kWait;
  pos_ += literal.size();
  return Match::kYes;
}

void ToolCallReader::add_arguments(const std::string& piece, Output& out) {
  if (piece.empty()) return;
  calls_.back().arguments += piece;
  out.calls.push_back({int(calls_.size()) - 1, false, "", piece});
}

bool ToolCallReader::read_gemma4_arguments(Output& out) {
  std::string json;
  const Gemma4Arguments::Status s = gemma4_.read(buf_, pos_, json);
  add_arguments(json, out);
  if (s == Gemma4Arguments::Status::kBroken) state_ = State::kBroken;
  if (s == Gemma4Arguments::Status::kDone) state_ = State::kAfterArgs;
  return s == Gemma4Arguments::Status::kDone;
}

// The arguments object, passed on as it arrives; done when its braces close.
bool ToolCallReader::read_arguments(Output& out) {
  if (syntax_.style == ToolCallStyle::kGemma4) return read_gemma4_arguments(out);
  const size_t from = pos_;
  bool closed = false;
  for (; pos_ < buf_.size() && !closed; ++pos_) {
    const char c = buf_[pos_];
    if (in_string_) {
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        in_string_ = false;
    } else if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      closed = --depth_ == 0;
    } else if (depth_ == 0 && c != ' ') {
      state_ = State::kBroken;  // not an object
      return false;
    }
  }
  add_arguments(buf_.substr(from, pos_ - from), out);
  if (closed) state_ = State::kAfterArgs;
  return closed;
}

// After a call: the separator and another call, or the end text.
bool ToolCallReader::read_between() {
  if (syntax_.parallel) {
    switch (expect(syntax_.separator)) {
      case Match::kYes:
        state_ = State::kHeader;
        return true;
      case Match::kWait:
        return false;  // the end text may be a prefix of the separator
      case Match::kNo:
        break;
    }
  }
  switch (expect(syntax_.end)) {
    case Match::kYes:
      state_ = State::kDone;
      return true;
    case Match::kWait:
      return false;
    case Match::kNo:
      state_ = State::kBroken;
  }
  return false;
}

bool ToolCallReader::step(Output& out) {
  auto literal = [&](std::string_view text, State next) {
    const Match m = expect(text);
    if (m == Match::kYes) state_ = next;
    if (m == Match::kNo) state_ = State::kBroken;
    return m == Match::kYes;
  };
  switch (state_) {
    case State::kHeader:
      return literal(syntax_.call_head(), State::kName);
    case State::kName: {
      // Function names are [A-Za-z0-9_-] (tool_request.cpp): the first other byte ends one.
      size_t q = pos_;
      while (q < buf_.size() && (std::isalnum(static_cast<unsigned char>(buf_[q])) ||
                                 buf_[q] == '_' || buf_[q] == '-'))
        ++q;
      if (q == buf_.size()) return false;
      calls_.push_back({buf_.substr(pos_, q - pos_), ""});
      out.calls.push_back({int(calls_.size()) - 1, true, calls_.back().name, ""});
      pos_ = q;
      state_ = State::kAfterName;
      return true;
    }
    case State::kAfterName:
      depth_ = 0;
      in_string_ = escaped_ = false;
      gemma4_ = Gemma4Arguments();
      return literal(syntax_.call_middle(), State::kArgs);
    case State::kArgs:
      return read_arguments(out);
    case State::kAfterArgs:
      while (pos_ < buf_.size() && buf_[pos_] == ' ') ++pos_;
      return literal(syntax_.call_tail(), State::kBetween);
    case State::kBetween:
      return read_between();
    default:
      return false;
  }
}

void ToolCallReader::advance(Output& out) {
  if (state_ == State::kUndecided) {
    const std::string trigger = syntax_.trigger();
    const size_t n = std::min(buf_.size(), trigger.size());
    if (buf_.compare(0, n, trigger, 0, n) != 0) {
      state_ = State::kText;
      out.content += buf_;
      pos_ = buf_.size();
      return;
    }
    if (buf_.size() < trigger.size()) return;
    pos_ = syntax_.start.size();
    state_ = State::kHeader;
  }
  while (step(out)) {
  }
}

ToolCallReader::Output ToolCallReader::feed(std::string_view text) {
  Output out;
  buf_ += text;
  if (state_ == State::kText) {
    out.content = std::string(text);
    pos_ = buf_.size();
    return out;
  }
  advance(out);
  return out;
}

ToolCallReader::Output ToolCallReader::finish() {
  Output out;
  if (state_ == State::kUndecided) {
    state_ = State::kText;
    out.content = buf_;
    pos_ = buf_.size();
  } else if (state_ == State::kBetween && std::string_view(buf_).substr(pos_) == syntax_.end) {
    pos_ = buf_.size();
    state_ = State::kDone;
  } else if (state_ == State::kBetween && syntax_.end.empty() && pos_ == buf_.size()) {
    state_ = State::kDone;
  }
  return out;
}

}  // namespace kvforge
