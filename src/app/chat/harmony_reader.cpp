#include "app/chat/harmony_reader.h"

#include <algorithm>

#include "app/chat/reasoning_reader.h"

namespace kvforge {
namespace {

constexpr std::string_view kHarmonyChannel = "<|channel|>";
constexpr std::string_view kHarmonyMessage = "<|message|>";
constexpr std::string_view kHarmonyEnd = "<|end|>";
constexpr std::string_view kHarmonyNextMessage = "<|start|>assistant";
constexpr std::string_view kHarmonyRecipient = " to=";
// A header longer than this is not one: the reply is read as plain text.
constexpr size_t kMaxHarmonyHeaderBytes = 512;

// The word after `key` in a header: up to a space or the next special token.
std::string harmony_header_word(std::string_view header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string_view::npos) return "";
  const std::string_view rest = header.substr(at + key.size());
  return std::string(rest.substr(0, rest.find_first_of(" <")));
}

bool may_begin_with(std::string_view text, std::string_view with) {
  const size_t n = std::min(text.size(), with.size());
  return text.substr(0, n) == with.substr(0, n);
}

}  // namespace

void HarmonyReader::open_message(std::string_view header, Output& out) {
  const std::string channel = harmony_header_word(header, kHarmonyChannel);
  const std::string recipient = harmony_header_word(header, "to=");
  constexpr std::string_view kFunctions = "functions.";
  if (recipient.starts_with(kFunctions)) {
    sink_ = Sink::kCall;
    calls_.push_back({recipient.substr(kFunctions.size()), ""});
    out.calls.push_back({int(calls_.size()) - 1, true, calls_.back().name, ""});
  } else if (!recipient.empty() && recipient != "assistant") {
    sink_ = Sink::kDrop;
  } else if (channel == "analysis" && reasoning_) {
    sink_ = Sink::kReasoning;
  } else {
    sink_ = Sink::kContent;
  }
  raw_ = sink_ == Sink::kContent && channel == "analysis";
  if (raw_) out.content += std::string(header) + std::string(kHarmonyMessage);
}

void HarmonyReader::emit(std::string_view text, Output& out) {
  if (text.empty()) return;
  switch (sink_) {
    case Sink::kReasoning:
      out.reasoning += text;
      break;
    case Sink::kContent:
      out.content += text;
      break;
    case Sink::kCall:
      calls_.back().arguments += text;
      out.calls.push_back({int(calls_.size()) - 1, false, "", std::string(text)});
      break;
    case Sink::kDrop:
      break;
  }
}

bool HarmonyReader::step(Output& out) {
  switch (state_) {
    case State::kUndecided:
      if (pending_.starts_with(kHarmonyChannel) || pending_.starts_with(kHarmonyRecipient)) {
        state_ = State::kHeader;
        return true;
      }
      if (may_begin_with(pending_, kHarmonyChannel) || may_begin_with(pending_, kHarmonyRecipient))
        return false;
      state_ = State::kPlain;
      return true;
    case State::kPlain:
      out.content += pending_;
      pending_.clear();
      return false;
    case State::kHeader: {
      const size_t at = pending_.find(kHarmonyMessage);
      if (at == std::string::npos) {
        if (pending_.size() > kMaxHarmonyHeaderBytes) state_ = State::kPlain;
        return pending_.size() > kMaxHarmonyHeaderBytes;
      }
      open_message(std::string_view(pending_).substr(0, at), out);
      pending_.erase(0, at + kHarmonyMessage.size());
      state_ = State::kBody;
      return true;
    }
    case State::kBody: {
      const size_t at = pending_.find(kHarmonyEnd);
      const size_t keep = at == std::string::npos ? tag_start_at_end(pending_, kHarmonyEnd) : 0;
      const size_t body = at == std::string::npos ? pending_.size() - keep : at;
      emit(std::string_view(pending_).substr(0, body), out);
      if (at == std::string::npos) {
        pending_.erase(0, body);
        return false;
      }
      if (raw_) out.content += kHarmonyEnd;  // analysis as content keeps its markup
      pending_.erase(0, at + kHarmonyEnd.size());
      state_ = State::kBetween;
      return true;
    }
    case State::kBetween:
      if (pending_.starts_with(kHarmonyNextMessage)) {
        pending_.erase(0, kHarmonyNextMessage.size());
        state_ = State::kHeader;
        return true;
      }
      if (may_begin_with(pending_, kHarmonyNextMessage)) return false;
      state_ = State::kPlain;
      return true;
  }
  return false;
}

HarmonyReader::Output HarmonyReader::feed(std::string_view text) {
  Output out;
  pending_ += text;
  while (step(out)) {
  }
  return out;
}

HarmonyReader::Output HarmonyReader::finish() {
  Output out;
  if (state_ == State::kUndecided || state_ == State::kPlain) out.content += pending_;
  if (state_ == State::kBody) emit(pending_, out);
  pending_.clear();
  return out;
}

}  // namespace kvforge
