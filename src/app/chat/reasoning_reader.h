// Splits a reasoning model's reply into its thoughts and its answer as it is
// generated: `<think>...</think>` at the start of the reply (DeepSeek R1,
// Qwen 3, QwQ) is the reasoning, the text after it the content. A template
// may open `<think>` itself at the end of the prompt (DeepSeek R1's newer
// templates): the reply then starts inside the reasoning. Gemma 4 marks its
// thoughts `<|channel>thought ... <channel|>` instead (kGemma4Thought).
//
// Formats, as llama-server's --reasoning-format names them:
//   none             everything is content, tags included
//   deepseek         the thoughts are reasoning_content, trimmed; the content is the rest
//   deepseek-legacy  as deepseek, and the content keeps the whole reply, tags included
// ("auto", llama-server's default, is deepseek here.)
#pragma once

#include <string>
#include <string_view>

namespace kvforge {

enum class ReasoningFormat { kNone, kDeepseek, kDeepseekLegacy };

// "none", "deepseek", "deepseek-legacy" or "auto"; anything else is an
// std::invalid_argument naming the accepted values.
ReasoningFormat parse_reasoning_format(std::string_view name);
const char* reasoning_format_name(ReasoningFormat format);

// The marks around a reply's thoughts.
struct ReasoningTags {
  std::string_view open, close;
};
inline constexpr ReasoningTags kThinkTags{"<think>", "</think>"};
inline constexpr ReasoningTags kGemma4Thought{"<|channel>thought", "<channel|>"};

// The longest end of `s` that is a proper prefix of `tag` (it may become
// the tag once more text comes): what a streaming reader holds back.
size_t tag_start_at_end(std::string_view s, std::string_view tag);

// The prompt ends inside an open `<think>` (tags.open; trailing whitespace aside).
bool prompt_opens_reasoning(std::string_view prompt, ReasoningTags tags = kThinkTags);

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

class ReasoningReader {
 public:
  ReasoningReader(ReasoningFormat format, bool starts_in_reasoning,
                  ReasoningTags tags = kThinkTags);

  ReasoningDelta feed(std::string_view text);
  // The reply has ended: what was held back (a possible tag's start,
  // whitespace) goes out. Unclosed thoughts stay reasoning.
  ReasoningDelta finish();

  static constexpr std::string_view kOpen = kThinkTags.open;
  static constexpr std::string_view kClose = kThinkTags.close;

 private:
  enum class State { kStart, kThinking, kAfterThoughts, kContent };
  void advance(ReasoningDelta& out);
  bool think(ReasoningDelta& out);  // false: needs more text

  ReasoningFormat format_;
  ReasoningTags tags_;
  State state_;
  std::string pending_;         // fed, not yet given out
  std::string spaces_;          // whitespace inside the thoughts, held until text follows it
  bool said_anything_ = false;  // reasoning given out (its leading whitespace is dropped)
};

}  // namespace kvforge
