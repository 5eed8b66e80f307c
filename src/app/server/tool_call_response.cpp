#include "app/server/tool_call_response.h"

#include <cstdio>
#include <random>

namespace kvforge::server {

using nlohmann::json;

std::string new_tool_call_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx%08llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng() & 0xffffffffULL));
  return std::string("call_") + hex;
}

const std::string& ToolCallAssembler::id(size_t index) {
  while (ids_.size() <= index) ids_.push_back(new_tool_call_id());
  return ids_[index];
}

json ToolCallAssembler::delta_json(const std::vector<ToolCallDelta>& deltas) {
  json out = json::array();
  for (const ToolCallDelta& d : deltas) {
    json function = {{"arguments", d.arguments}};
    json call = {{"index", d.index}};
    if (d.first) {
      function = {{"name", d.name}, {"arguments", d.arguments}};
      call["id"] = id(size_t(d.index));
      call["type"] = "function";
    }
    call["function"] = std::move(function);
    out.push_back(std::move(call));
  }
  return out;
}

json ToolCallAssembler::message_json() { return message_json(reader_.calls()); }

json ToolCallAssembler::message_json(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i)
    out.push_back({{"id", id(i)},
                   {"type", "function"},
                   {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}});
  return out;
}

json tool_call_chunk(const ResponseMeta& meta, int index, const std::string& content, bool first,
                     json tool_calls, bool include_usage) {
  json chunk = stream_chunk(meta, index, content, first, std::nullopt, std::nullopt, include_usage);
  json& delta = chunk["choices"][0]["delta"];
  if (content.empty() && first) delta["content"] = nullptr;
  if (!tool_calls.empty()) delta["tool_calls"] = std::move(tool_calls);
  return chunk;
}

}  // namespace kvforge::server
