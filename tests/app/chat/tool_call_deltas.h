// For the tool call readers' tests: the calls a stream of ToolCallDelta
// pieces adds up to, as a client assembles them (a call's first delta names
// it and comes in index order; its arguments come in pieces), and a reply
// read in pieces by a ToolCallReader.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/chat/tool_call_reader.h"

namespace kvforge::testing {

inline void add_call_deltas(const std::vector<ToolCallDelta>& deltas,
                            std::vector<ToolCall>& calls) {
  for (const ToolCallDelta& d : deltas) {
    if (d.first) {
      EXPECT_EQ(size_t(d.index), calls.size());
      calls.push_back({d.name, ""});
    }
    calls.at(size_t(d.index)).arguments += d.arguments;
  }
}

struct Read {
  std::string content;
  std::vector<ToolCall> calls;  // rebuilt from the deltas
  bool complete = false;
};

// Feeds `text` in pieces of `piece` bytes and rebuilds the calls from the deltas alone.
inline Read read_calls(ToolCallStyle style, const std::string& text, size_t piece) {
  ToolCallReader reader(tool_call_syntax(style));
  Read r;
  auto take = [&](const ToolCallReader::Output& out) {
    r.content += out.content;
    add_call_deltas(out.calls, r.calls);
  };
  for (size_t i = 0; i < text.size(); i += piece) take(reader.feed(text.substr(i, piece)));
  take(reader.finish());
  r.complete = reader.complete();
  EXPECT_EQ(reader.text(), text);
  if (r.complete) {
    EXPECT_EQ(reader.calls().size(), r.calls.size());
    for (size_t i = 0; i < r.calls.size(); ++i)
      EXPECT_EQ(reader.calls()[i].arguments, r.calls[i].arguments);
  }
  return r;
}

}  // namespace kvforge::testing
