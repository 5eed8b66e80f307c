// Reads gpt-oss's harmony replies as they are generated. The prompt ends
// with "<|start|>assistant"; the reply is one or more messages
//   [ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT][ [<|constrain|>]TYPE]<|message|>BODY<|end|>
// the later ones after "<|start|>assistant", the last one ended by
// <|return|> or <|call|> (end-of-generation tokens, so not in the text).
// Channel `analysis` is the reasoning, `final` (and `commentary` without a
// recipient, a preamble) the content; a message to `functions.NAME` is a
// call of NAME whose arguments are the body. Messages to other recipients
// (built-in tools gpt-oss was trained with: browser, python) are dropped, as
// llama-server drops them. A reply that starts with no header (a grammar
// made it plain JSON) is content. The special tokens must be in the text:
// the server detokenizes harmony replies with render_special.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "app/chat/tool_call_reader.h"

namespace kvforge {

class HarmonyReader {
 public:
  // reasoning = false: the analysis messages are content, markup included
  // (--reasoning-format none).
  explicit HarmonyReader(bool reasoning) : reasoning_(reasoning) {}

  struct Output {
    std::string reasoning;
    std::string content;
    std::vector<ToolCallDelta> calls;
  };
  Output feed(std::string_view text);
  Output finish();

  const std::vector<ToolCall>& calls() const { return calls_; }

 private:
  enum class State { kUndecided, kPlain, kHeader, kBody, kBetween };
  enum class Sink { kReasoning, kContent, kCall, kDrop };
  bool step(Output& out);  // false: needs more text
  void open_message(std::string_view header, Output& out);
  void emit(std::string_view text, Output& out);

  bool reasoning_;
  State state_ = State::kUndecided;
  Sink sink_ = Sink::kContent;
  bool raw_ = false;  // an analysis message given as content, markup included
  std::string pending_;
  std::vector<ToolCall> calls_;
};

}  // namespace kvforge
