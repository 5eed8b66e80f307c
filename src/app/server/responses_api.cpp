#include "app/server/responses_api.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <set>

#include "app/server/json_body_parser.h"
#include "app/server/responses_tools.h"

namespace kvforge::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

const std::set<std::string>& responses_fields() {
  static const std::set<std::string> names = {"model",
                                              "input",
                                              "instructions",
                                              "max_output_tokens",
                                              "temperature",
                                              "top_p",
                                              "stream",
                                              "text",
                                              "truncation",
                                              "store",
                                              "metadata",
                                              "user",
                                              "tool_choice",
                                              "tools",
                                              "parallel_tool_calls",
                                              "previous_response_id"};
  return names;
}

[[noreturn]] void responses_refuse(const std::string& field, const std::string& why) {
  throw bad_param(field, "'" + field + "' " + why);
}

// A message's content: a string, or parts of type input_text / output_text.
std::string responses_content(const ordered_json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    responses_refuse("input", "items' content must be a string or an array of text parts");
  std::string text;
  for (const ordered_json& part : content) {
    const std::string type = part.is_object() ? string_value(part, "type", "") : "";
    if (type != "input_text" && type != "output_text" && type != "text")
      responses_refuse("input", "content parts of type '" + type +
                                    "' are not supported (text parts only: input_text, "
                                    "output_text)");
    if (!part.contains("text") || !part["text"].is_string())
      responses_refuse("input", "text parts need a string 'text'");
    text += part["text"].get<std::string>();
  }
  return text;
}

ordered_json responses_message(const ordered_json& item) {
  if (!item.is_object()) responses_refuse("input", "items must be objects");
  const std::string type = string_value(item, "type", "message");
  if (type != "message")
    responses_refuse("input", "items of type '" + type +
                                  "' are not supported (message items only; no tools or "
                                  "reasoning items)");
  std::string role = string_value(item, "role", "");
  if (role == "developer") role = "system";
  if (role != "user" && role != "assistant" && role != "system")
    responses_refuse("input", "item role '" + role +
                                  "' is not one of user, assistant, system, "
                                  "developer");
  if (!item.contains("content")) responses_refuse("input", "items need 'content'");
  return {{"role", role}, {"content", responses_content(item["content"])}};
}

// text.format -> the chat body's response_format (nothing for plain text).
void responses_format(const ordered_json& text, ordered_json& chat) {
  if (!text.is_object()) responses_refuse("text", "must be an object");
  for (const auto& [key, value] : text.items())
    if (key != "format") responses_refuse("text." + key, "is not supported");
  if (!text.contains("format") || text["format"].is_null()) return;
  const ordered_json& f = text["format"];
  const std::string type = f.is_object() ? string_value(f, "type", "") : "";
  if (type == "text") return;
  if (type == "json_object") {
    chat["response_format"] = {{"type", "json_object"}};
    return;
  }
  if (type != "json_schema")
    responses_refuse("text.format", "must be of type text, json_object or json_schema");
  if (const auto n = f.find("name"); n != f.end() && !n->is_null() && !n->is_string())
    responses_refuse("text.format.name", "must be a string");
  ordered_json schema = {{"name", string_value(f, "name", "response")}};
  if (!f.contains("schema")) responses_refuse("text.format.schema", "is required");
  schema["schema"] = f["schema"];
  if (f.contains("strict")) schema["strict"] = f["strict"];
  chat["response_format"] = {{"type", "json_schema"}, {"json_schema", schema}};
}

// The input as chat messages (the instructions are kept apart: responses_history.h).
ordered_json responses_messages(const ordered_json& body) {
  ordered_json messages = ordered_json::array();
  if (const auto i = body.find("instructions"); i != body.end() && !i->is_null())
    if (!i->is_string()) responses_refuse("instructions", "must be a string");
  const auto input = body.find("input");
  if (input == body.end()) responses_refuse("input", "is required");
  if (input->is_string()) {
    messages.push_back({{"role", "user"}, {"content", *input}});
  } else if (input->is_array() && !input->empty()) {
    for (const ordered_json& item : *input)
      if (!append_tool_item(item, messages)) messages.push_back(responses_message(item));
  } else {
    responses_refuse("input", "must be a string or a non-empty array of message items");
  }
  return messages;
}

// Characters (UTF-8 code points) of valid UTF-8 text: its bytes that do not continue one.
size_t utf8_chars(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// OpenAI's bounds on metadata: at most 16 pairs, keys of at most 64 characters,
// values strings of at most 512. Each stored response keeps and echoes it.
void responses_check_metadata(const ordered_json& m) {
  if (!m.is_object()) responses_refuse("metadata", "must be an object");
  if (m.size() > 16)
    responses_refuse("metadata", "may hold at most 16 pairs, got " + std::to_string(m.size()));
  for (const auto& [key, value] : m.items()) {
    if (utf8_chars(key) > 64)
      responses_refuse("metadata", "keys may be at most 64 characters, got one of " +
                                       std::to_string(utf8_chars(key)));
    if (!value.is_string() || utf8_chars(value.get_ref<const std::string&>()) > 512)
      responses_refuse("metadata." + key, "must be a string of at most 512 characters");
  }
}

json responses_usage(int input_tokens, const GenerationOutcome& done) {
  const int output_tokens = done.tokens;
  return {{"input_tokens", input_tokens},
          {"input_tokens_details", {{"cached_tokens", done.cached_tokens}}},
          {"output_tokens", output_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", input_tokens + output_tokens}};
}

}  // namespace

json output_text_part(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
}

ResponsesRequest parse_responses_request(std::string_view text, const RequestLimits& limits) {
  const ordered_json body = parse_json_body(text, limits, JsonBodyChecks{});
  for (const auto& [key, value] : body.items())
    if (!responses_fields().count(key)) responses_refuse(key, "is not supported on /v1/responses");
  ResponsesRequest r;
  if (const auto p = body.find("previous_response_id"); p != body.end() && !p->is_null()) {
    if (!p->is_string() || p->get_ref<const std::string&>().empty())
      responses_refuse("previous_response_id", "must be a response id (a string)");
    r.previous_response_id = p->get<std::string>();
  }
  if (const auto s = body.find("store"); s != body.end() && !s->is_null()) {
    if (!s->is_boolean()) responses_refuse("store", "must be a boolean");
    r.store = s->get<bool>();
  }
  const auto model = body.find("model");
  if (model == body.end() || !model->is_string()) responses_refuse("model", "must be a string");
  r.chat["model"] = *model;
  r.input = responses_messages(body);
  r.instructions = body.value("instructions", ordered_json());
  responses_tools_to_chat(body, r.chat);
  if (const auto m = body.find("max_output_tokens"); m != body.end() && !m->is_null()) {
    if (!m->is_number_integer() || m->get<int64_t>() < 1)
      responses_refuse("max_output_tokens", "must be a positive integer");
    r.chat["max_tokens"] = *m;
  }
  for (const char* key : {"temperature", "top_p", "truncation"})
    if (body.contains(key)) r.chat[key] = body[key];
  if (body.contains("text")) responses_format(body["text"], r.chat);
  if (const auto s = body.find("stream"); s != body.end() && !s->is_null()) {
    if (!s->is_boolean()) responses_refuse("stream", "must be a boolean");
    r.stream = s->get<bool>();
  }
  if (const auto m = body.find("metadata"); m != body.end() && !m->is_null())
    responses_check_metadata(*m);
  if (const auto u = body.find("user"); u != body.end() && !u->is_null() && !u->is_string())
    responses_refuse("user", "must be a string");
  r.echo = {{"instructions", body.value("instructions", json())},
            {"max_output_tokens", body.value("max_output_tokens", json())},
            {"temperature", body.value("temperature", json(1.0))},
            {"top_p", body.value("top_p", json(1.0))},
            {"metadata", body.value("metadata", json::object())},
            {"text", body.value("text", json{{"format", {{"type", "text"}}}})},
            {"truncation", body.value("truncation", json("disabled"))},
            {"user", body.value("user", json())},
            {"store", r.store},
            {"tools", body.value("tools", json::array())},
            {"tool_choice", body.value("tool_choice", json("auto"))},
            {"parallel_tool_calls", body.value("parallel_tool_calls", json(true))},
            {"previous_response_id",
             r.previous_response_id.empty() ? json() : json(r.previous_response_id)}};
  return r;
}

ResponseIds new_response_ids() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  auto hex = [&] {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(rng()));
    return std::string(buf);
  };
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  return {"resp_" + hex(), "msg_" + hex(), now};
}

json response_object(const ResponsesRequest& r, const ResponseIds& ids, const std::string& model,
                     int input_tokens, const GenerationOutcome* done, const json& calls) {
  json out = {{"id", ids.response}, {"object", "response"}, {"created_at", ids.created_at}};
  const bool cut = done && done->finish == FinishReason::Length;
  out["status"] = !done ? "in_progress" : cut ? "incomplete" : "completed";
  out["error"] = nullptr;
  out["incomplete_details"] = cut ? json{{"reason", "max_output_tokens"}} : json();
  out["model"] = model;
  out["output"] = json::array();
  if (done && calls.is_array() && !calls.empty())
    for (const json& call : calls) out["output"].push_back(function_call_item(call, "completed"));
  else if (done)
    out["output"].push_back({{"id", ids.message},
                             {"type", "message"},
                             {"status", cut ? "incomplete" : "completed"},
                             {"role", "assistant"},
                             {"content", json::array({output_text_part(done->text)})}});
  for (const auto& [key, value] : r.echo.items()) out[key] = value;
  out["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
  out["usage"] = done ? responses_usage(input_tokens, *done) : json();
  return out;
}

}  // namespace kvforge::server
