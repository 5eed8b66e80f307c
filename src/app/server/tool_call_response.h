// Tool calls in OpenAI's chat shapes: the message's "tool_calls" array
// ({"id", "type": "function", "function": {"name", "arguments"}}) and, when
// streaming, the deltas the SDKs assemble: a call's index, id, type and name
// in its first delta, its arguments in pieces after.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/chat/tool_call_reader.h"
#include "app/server/openai_response.h"

namespace kvforge::server {

// "call_" and 24 random hex digits.
std::string new_tool_call_id();

// One branch's calls as they are read from its text, with their ids.
class ToolCallAssembler {
 public:
  explicit ToolCallAssembler(ToolCallSyntax syntax) : reader_(std::move(syntax)) {}

  ToolCallReader& reader() { return reader_; }
  const ToolCallReader& reader() const { return reader_; }
  // The "tool_calls" delta array for `deltas` (empty when there are none).
  nlohmann::json delta_json(const std::vector<ToolCallDelta>& deltas);
  // The message's "tool_calls" array: every call read, whole.
  nlohmann::json message_json();
  // The same for calls read by another reader (harmony_reader.h), ids by index.
  nlohmann::json message_json(const std::vector<ToolCall>& calls);

 private:
  const std::string& id(size_t index);

  ToolCallReader reader_;
  std::vector<std::string> ids_;
};

// A stream chunk of choice `index` whose delta carries `content` (null
// when empty, in the first chunk) and `tool_calls` (unless empty); `first`
// adds the role, as OpenAI's first chunk of a choice has it.
nlohmann::json tool_call_chunk(const ResponseMeta& meta, int index, const std::string& content,
                               bool first, nlohmann::json tool_calls, bool include_usage);

}  // namespace kvforge::server
