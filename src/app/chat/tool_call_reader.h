// Reads tool calls out of a reply as it is generated (tool_call_syntax.h):
// the reply is text unless it begins with the syntax's trigger; then each
// call's name is told once and its arguments in pieces as they come, so a
// stream can forward them as OpenAI streams tool calls. The grammar the
// request was constrained by makes a call reply follow the syntax exactly;
// a reply that departs from it (cut by max_tokens) stops being read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "app/chat/gemma4_arguments.h"
#include "app/chat/tool_call_syntax.h"

namespace kvforge {

struct ToolCallDelta {
  int index = 0;          // which call
  bool first = false;     // the call's first delta: carries its name
  std::string name;       // set when first
  std::string arguments;  // the next piece of the arguments' JSON text
};

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of an object
};

class ToolCallReader {
 public:
  explicit ToolCallReader(ToolCallSyntax syntax) : syntax_(std::move(syntax)) {}

  struct Output {
    std::string content;               // text to show as the reply's content
    std::vector<ToolCallDelta> calls;  // call pieces, in order
  };
  Output feed(std::string_view text);
  // The reply has ended: the text held back while it could still become a
  // call (a prefix of the trigger) is content after all.
  Output finish();

  // The reply is calls, all of them whole, the end text written.
  bool complete() const { return state_ == State::kDone; }
  bool is_calls() const { return state_ != State::kUndecided && state_ != State::kText; }
  const std::vector<ToolCall>& calls() const { return calls_; }
  const std::string& text() const { return buf_; }

 private:
  enum class State {
    kUndecided,
    kText,
    kHeader,
    kName,
    kAfterName,
    kArgs,
    kAfterArgs,
    kBetween,
    kDone,
    kBroken
  };
  enum class Match { kYes, kWait, kNo };

  void advance(Output& out);
  bool step(Output& out);  // one state transition; false: needs more text
  Match expect(std::string_view literal);
  bool read_arguments(Output& out);
  bool read_gemma4_arguments(Output& out);  // converted to JSON as they come
  void add_arguments(const std::string& piece, Output& out);
  bool read_between();

  ToolCallSyntax syntax_;
  State state_ = State::kUndecided;
  std::string buf_;  // every byte fed
  size_t pos_ = 0;   // read up to here
  std::vector<ToolCall> calls_;
  int depth_ = 0;  // of the arguments' JSON
  bool in_string_ = false, escaped_ = false;
  Gemma4Arguments gemma4_;  // the current call's arguments, for the gemma4 style
};

}  // namespace kvforge
