#include "app/chat/reasoning_reader.h"

#include <stdexcept>

#include "core/enum_names.h"

namespace kvforge {
namespace {

bool thought_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t leading_spaces(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && thought_space(s[i])) ++i;
  return i;
}

}  // namespace

size_t tag_start_at_end(std::string_view s, std::string_view tag) {
  for (size_t k = std::min(s.size(), tag.size() - 1); k > 0; --k)
    if (s.substr(s.size() - k) == tag.substr(0, k)) return k;
  return 0;
}

ReasoningFormat parse_reasoning_format(std::string_view name) {
  if (name == "none") return ReasoningFormat::kNone;
  if (name == "deepseek" || name == "auto") return ReasoningFormat::kDeepseek;
  if (name == "deepseek-legacy") return ReasoningFormat::kDeepseekLegacy;
  throw std::invalid_argument("reasoning format '" + std::string(name) +
                              "' is not one of none, deepseek, deepseek-legacy, auto");
}

constexpr EnumName<ReasoningFormat> kReasoningFormatNames[] = {
    {ReasoningFormat::kNone, "none"},
    {ReasoningFormat::kDeepseekLegacy, "deepseek-legacy"},
    {ReasoningFormat::kDeepseek, "deepseek"},
};

const char* reasoning_format_name(ReasoningFormat format) {
  return name_of(format, kReasoningFormatNames);
}

bool prompt_opens_reasoning(std::string_view prompt, ReasoningTags tags) {
  while (!prompt.empty() && thought_space(prompt.back())) prompt.remove_suffix(1);
  return prompt.ends_with(tags.open);
}

ReasoningReader::ReasoningReader(ReasoningFormat format, bool starts_in_reasoning,
                                 ReasoningTags tags)
    : format_(format),
      tags_(tags),
      state_(starts_in_reasoning ? State::kThinking : State::kStart) {}

namespace {

// Thoughts without their outer whitespace: inner whitespace is given out
// only once text follows it.
void emit_thoughts(std::string_view s, std::string& spaces, bool& said, std::string& out) {
  size_t end = s.size();
  while (end > 0 && thought_space(s[end - 1])) --end;
  if (end == 0) {
    spaces += s;
    return;
  }
  std::string text = spaces + std::string(s.substr(0, end));
  if (!said) text.erase(0, leading_spaces(text));
  out += text;
  said = said || !text.empty();
  spaces = std::string(s.substr(end));
}

}  // namespace

bool ReasoningReader::think(ReasoningDelta& out) {
  const size_t close = pending_.find(tags_.close);
  if (close != std::string::npos) {
    emit_thoughts(std::string_view(pending_).substr(0, close), spaces_, said_anything_,
                  out.reasoning);
    spaces_.clear();
    pending_.erase(0, close + tags_.close.size());
    state_ = State::kAfterThoughts;
    return true;
  }
  const size_t keep = tag_start_at_end(pending_, tags_.close);
  emit_thoughts(std::string_view(pending_).substr(0, pending_.size() - keep), spaces_,
                said_anything_, out.reasoning);
  pending_.erase(0, pending_.size() - keep);
  return false;
}

void ReasoningReader::advance(ReasoningDelta& out) {
  while (true) {
    switch (state_) {
      case State::kStart: {
        const std::string_view rest = std::string_view(pending_).substr(leading_spaces(pending_));
        if (rest.size() < tags_.open.size() && tags_.open.starts_with(rest))
          return;  // may open yet
        if (rest.starts_with(tags_.open)) {
          pending_ = std::string(rest.substr(tags_.open.size()));
          state_ = State::kThinking;
          break;
        }
        state_ = State::kContent;
        break;
      }
      case State::kThinking:
        if (!think(out)) return;
        break;
      case State::kAfterThoughts:
        pending_.erase(0, leading_spaces(pending_));
        if (pending_.empty()) return;
        state_ = State::kContent;
        break;
      case State::kContent:
        out.content += pending_;
        pending_.clear();
        return;
    }
  }
}

ReasoningDelta ReasoningReader::feed(std::string_view text) {
  if (format_ == ReasoningFormat::kNone) return {"", std::string(text)};
  ReasoningDelta out;
  pending_ += text;
  advance(out);
  if (format_ == ReasoningFormat::kDeepseekLegacy) out.content = std::string(text);
  return out;
}

ReasoningDelta ReasoningReader::finish() {
  ReasoningDelta out;
  if (format_ == ReasoningFormat::kNone) return out;
  if (state_ == State::kStart) out.content = pending_;
  if (state_ == State::kThinking) emit_thoughts(pending_, spaces_, said_anything_, out.reasoning);
  pending_.clear();
  spaces_.clear();
  if (format_ == ReasoningFormat::kDeepseekLegacy) out.content.clear();
  return out;
}

}  // namespace kvforge
