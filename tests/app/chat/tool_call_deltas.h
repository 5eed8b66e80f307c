// For the tool call readers' tests: the calls a stream of ToolCallDelta
// pieces adds up to, as a client assembles them (a call's first delta names
// it and comes in index order; its arguments come in pieces).
#pragma once

#include <gtest/gtest.h>

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

}  // namespace kvforge::testing
