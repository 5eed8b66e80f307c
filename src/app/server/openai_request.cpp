#include "app/server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "app/chat/chat_template.h"
#include "app/server/model_names.h"
#include "app/server/openai_error.h"
#include "app/server/output_constraint.h"
#include "app/tokenizer/utf8.h"

namespace kvforge::server {
namespace {

using nlohmann::ordered_json;

std::string json_type(const ordered_json& j) {
  switch (j.type()) {
    case ordered_json::value_t::null:
      return "null";
    case ordered_json::value_t::boolean:
      return "boolean";
    case ordered_json::value_t::number_integer:
    case ordered_json::value_t::number_unsigned:
      return "integer";
    case ordered_json::value_t::number_float:
      return "number";
    case ordered_json::value_t::string:
      return "string";
    case ordered_json::value_t::array:
      return "array";
    case ordered_json::value_t::object:
      return "object";
    default:
      return "other";
  }
}

std::string show(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The field, or nullptr when absent or null (OpenAI treats null as "use the default").
const ordered_json* field(const ordered_json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number_field(const ordered_json& body, const char* name, double lo, double hi,
                                   bool lo_open = false) {
  const ordered_json* f = field(body, name);
  if (!f) return std::nullopt;
  if (!f->is_number())
    throw bad_param(name, "'" + std::string(name) + "' must be a number, got " + json_type(*f));
  const double v = f->get<double>();
  const bool below = lo_open ? !(v > lo) : !(v >= lo);
  if (below || !(v <= hi))
    throw bad_param(name, "'" + std::string(name) + "' must be in " + (lo_open ? "(" : "[") +
                              show(lo) + ", " + show(hi) + "], got " + show(v));
  return v;
}

std::optional<int64_t> int_field(const ordered_json& body, const char* name, int64_t lo, int64_t hi,
                                 const std::string& hi_reason = "") {
  const ordered_json* f = field(body, name);
  if (!f) return std::nullopt;
  if (!f->is_number_integer())
    throw bad_param(name, "'" + std::string(name) + "' must be an integer, got " + json_type(*f));
  if (f->is_number_unsigned() && f->get<uint64_t>() > static_cast<uint64_t>(hi))
    throw bad_param(name, "'" + std::string(name) + "' must be at most " + std::to_string(hi) +
                              hi_reason + ", got " + f->dump());
  const int64_t v = f->get<int64_t>();
  if (v < lo)
    throw bad_param(name, "'" + std::string(name) + "' must be at least " + std::to_string(lo) +
                              ", got " + std::to_string(v));
  if (v > hi)
    throw bad_param(name, "'" + std::string(name) + "' must be at most " + std::to_string(hi) +
                              hi_reason + ", got " + std::to_string(v));
  return v;
}

std::optional<bool> bool_field(const ordered_json& body, const char* name) {
  const ordered_json* f = field(body, name);
  if (!f) return std::nullopt;
  if (!f->is_boolean())
    throw bad_param(name, "'" + std::string(name) + "' must be a boolean, got " + json_type(*f));
  return f->get<bool>();
}

std::vector<std::string> parse_stop(const ordered_json& body) {
  const ordered_json* f = field(body, "stop");
  if (!f) return {};
  std::vector<std::string> stops;
  if (f->is_string()) {
    stops.push_back(f->get<std::string>());
  } else if (f->is_array()) {
    if (f->size() > kMaxStopStrings)
      throw bad_param("stop", "'stop' may hold at most " + std::to_string(kMaxStopStrings) +
                                  " strings, got " + std::to_string(f->size()));
    for (const auto& s : *f) {
      if (!s.is_string())
        throw bad_param("stop", "'stop' must be a string or an array of strings, found " +
                                    json_type(s) + " in the array");
      stops.push_back(s.get<std::string>());
    }
  } else {
    throw bad_param("stop", "'stop' must be a string or an array of strings, got " + json_type(*f));
  }
  for (const std::string& s : stops) {
    if (s.empty()) throw bad_param("stop", "'stop' strings must not be empty");
    if (s.size() > kMaxStopStringBytes)
      throw bad_param("stop", "'stop' strings may be at most " +
                                  std::to_string(kMaxStopStringBytes) + " bytes, got one of " +
                                  std::to_string(s.size()));
  }
  return stops;
}

void reject_unsupported(const ordered_json& body, int n) {
  if (bool_field(body, "echo").value_or(false))
    throw bad_param("echo", "'echo' is not supported by this server");
  if (const ordered_json* f = field(body, "suffix");
      f && !(f->is_string() && f->get<std::string>().empty()))
    throw bad_param("suffix", "'suffix' is not supported by this server");
  if (const auto best_of = int_field(body, "best_of", 1, 64); best_of && *best_of != n)
    throw bad_param("best_of", "'best_of' must equal 'n' (" + std::to_string(n) +
                                   "): ranking candidates is not supported");
  if (const ordered_json* f = field(body, "logit_bias")) {
    if (!f->is_object())
      throw bad_param("logit_bias", "'logit_bias' must be an object, got " + json_type(*f));
    if (!f->empty()) throw bad_param("logit_bias", "'logit_bias' is not supported by this server");
  }
}

void parse_common(const ordered_json& body, const RequestLimits& limits, CommonRequest& r,
                  const char* max_tokens_name, std::optional<int> default_max_tokens) {
  if (const ordered_json* f = field(body, "model")) {
    if (!f->is_string()) throw bad_param("model", "'model' must be a string, got " + json_type(*f));
    r.model = f->get<std::string>();
    if (!serves_model(limits, r.model)) throw model_not_found(limits, r.model);
  } else if (!limits.model_ids.empty()) {
    r.model = limits.model_ids.front();
  }

  SamplingParams& s = r.sampling;
  s.penalty_last_n = -1;  // OpenAI's penalties count every generated token
  const std::string ctx_reason = " (the context size)";
  // A context shift (serve --context-shift, or this request's "context_shift")
  // lets the reply run past the context; "n_keep" as llama-server's.
  s.context_shift = bool_field(body, "context_shift");
  if (auto v = int_field(body, "n_keep", -1, std::numeric_limits<int32_t>::max()))
    s.n_keep = static_cast<int32_t>(*v);
  const int max_tokens_limit = s.context_shift.value_or(limits.context_shift)
                                   ? std::numeric_limits<int>::max()
                                   : limits.max_tokens_limit;
  std::optional<int64_t> max_tokens =
      int_field(body, max_tokens_name, 1, max_tokens_limit, ctx_reason);
  if (!max_tokens && std::string(max_tokens_name) != "max_tokens")
    max_tokens = int_field(body, "max_tokens", 1, max_tokens_limit, ctx_reason);
  r.max_tokens_explicit = max_tokens.has_value();
  if (max_tokens)
    s.max_tokens = static_cast<int>(*max_tokens);
  else
    s.max_tokens = default_max_tokens;

  if (auto v = number_field(body, "temperature", 0, 2)) s.temperature = static_cast<float>(*v);
  if (auto v = number_field(body, "top_p", 0, 1, /*lo_open=*/true))
    s.top_p = static_cast<float>(*v);
  if (auto v = int_field(body, "top_k", -1, 1 << 20)) s.top_k = *v < 0 ? 0 : static_cast<int>(*v);
  if (auto v = number_field(body, "min_p", 0, 1)) s.min_p = static_cast<float>(*v);
  if (auto v = number_field(body, "presence_penalty", -2, 2))
    s.presence_penalty = static_cast<float>(*v);
  if (auto v = number_field(body, "frequency_penalty", -2, 2))
    s.frequency_penalty = static_cast<float>(*v);
  if (auto v = number_field(body, "repetition_penalty", 0, kMaxRepetitionPenalty, true))
    s.repetition_penalty = static_cast<float>(*v);
  if (auto v = int_field(body, "seed", std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max()))
    s.seed = static_cast<uint64_t>(*v);
  s.stop = parse_stop(body);
  s.ignore_eos = bool_field(body, "ignore_eos").value_or(false);

  r.n = static_cast<int>(int_field(body, "n", 1, limits.max_n).value_or(1));
  r.stream = bool_field(body, "stream").value_or(false);
  if (const ordered_json* f = field(body, "stream_options")) {
    if (!f->is_object())
      throw bad_param("stream_options", "'stream_options' must be an object, got " + json_type(*f));
    if (!r.stream)
      throw bad_param("stream_options", "'stream_options' is only allowed when 'stream' is true");
    r.include_usage = bool_field(*f, "include_usage").value_or(false);
  }
  reject_unsupported(body, r.n);
  r.constraint = parse_output_constraint(body);
}

void finish_validation(const CommonRequest& r) {
  if (const auto problem = r.sampling.validate()) throw ApiError(400, *problem);
}

void set_prompt(CompletionRequest& r, const ordered_json& p, const RequestLimits& limits) {
  if (p.is_string()) {
    if (p.get_ref<const std::string&>().size() > limits.max_prompt_bytes)
      throw bad_param("prompt", "'prompt' is longer than " +
                                    std::to_string(limits.max_prompt_bytes) + " bytes");
    r.prompt_text = p.get<std::string>();
    return;
  }
  if (p.is_array() && !p.empty() && p[0].is_number()) {
    if (p.size() > limits.max_prompt_bytes)
      throw bad_param("prompt", "'prompt' has more than " +
                                    std::to_string(limits.max_prompt_bytes) + " tokens");
    for (const auto& t : p) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<int64_t>() > std::numeric_limits<int32_t>::max() ||
          (t.is_number_unsigned() &&
           t.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())))
        throw bad_param("prompt",
                        "'prompt' token ids must be non-negative integers, found " + t.dump());
      r.prompt_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    return;
  }
  throw bad_param("prompt",
                  "'prompt' must be a string or an array of token ids, got " + json_type(p));
}

}  // namespace

ordered_json parse_json_body(std::string_view body, const RequestLimits& limits,
                             JsonBodyChecks checks) {
  if (body.empty()) throw ApiError(400, "request body is empty; expected a JSON object");
  if (const auto bad = find_invalid_utf8(body))
    throw ApiError(400, "request body is not valid UTF-8 (ill-formed byte at offset " +
                            std::to_string(*bad) + ")");
  checks.max_depth = limits.max_json_depth;
  ordered_json j;
  try {
    j = parse_json_linear(body, checks);
  } catch (const ordered_json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e400).
    std::string what = e.what();
    if (const size_t p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    throw ApiError(400, "request body is not valid JSON: " + what);
  }
  if (!j.is_object())
    throw ApiError(400, "request body must be a JSON object, got " + json_type(j));
  return j;
}

CompletionRequest parse_completion_request(const ordered_json& body, const RequestLimits& limits) {
  CompletionRequest r;
  const ordered_json* p = field(body, "prompt");
  if (!p) throw bad_param("prompt", "'prompt' is required");
  if (p->is_array() && !p->empty() && (p->at(0).is_string() || p->at(0).is_array())) {
    if (p->size() > 1)
      throw bad_param("prompt", "batched prompts (" + std::to_string(p->size()) +
                                    ") are not supported; send one request per prompt");
    set_prompt(r, p->at(0), limits);
  } else if (p->is_array() && p->empty()) {
    throw bad_param("prompt", "'prompt' must not be an empty array");
  } else {
    set_prompt(r, *p, limits);
  }
  parse_common(body, limits, r, "max_tokens", /*OpenAI's default for completions=*/16);
  if (const ordered_json* f = field(body, "logprobs")) {
    if (!f->is_number_integer() || f->get<int64_t>() < 0 || f->get<int64_t>() > 5)
      throw bad_param("logprobs",
                      "'logprobs' must be an integer in [0, 5] for completions, got " + f->dump());
    r.logprobs = true;
    r.top_logprobs = f->get<int>();
  }
  finish_validation(r);
  return r;
}

namespace {

std::string flatten_content(const ordered_json& content, size_t i) {
  if (content.is_string()) return content.get<std::string>();
  const std::string where = "messages[" + std::to_string(i) + "].content";
  if (!content.is_array())
    throw bad_param("messages", "'" + where + "' must be a string or an array of text parts, got " +
                                    json_type(content));
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const ordered_json& part = content[j];
    const auto type = part.is_object() ? part.find("type") : part.end();
    if (!part.is_object() || type == part.end() || !type->is_string())
      throw bad_param("messages",
                      "'" + where + "[" + std::to_string(j) + "]' must be an object with a 'type'");
    if (type->get<std::string>() != "text")
      throw bad_param("messages", "'" + where + "[" + std::to_string(j) +
                                      "]': only 'text' content parts are supported, got '" +
                                      type->get<std::string>() + "'");
    const auto t = part.find("text");
    if (t == part.end() || !t->is_string())
      throw bad_param("messages",
                      "'" + where + "[" + std::to_string(j) + "].text' must be a string");
    if (!text.empty()) text += "\n";
    text += t->get<std::string>();
  }
  return text;
}

ordered_json normalize_message(const ordered_json& m, size_t i) {
  const std::string where = "messages[" + std::to_string(i) + "]";
  if (!m.is_object())
    throw bad_param("messages", "'" + where + "' must be an object, got " + json_type(m));
  const auto role_it = m.find("role");
  if (role_it == m.end() || !role_it->is_string())
    throw bad_param("messages", "'" + where + ".role' is required and must be a string");
  std::string role = role_it->get<std::string>();
  if (role == "developer") role = "system";
  if (role != "system" && role != "user" && role != "assistant" && role != "tool")
    throw bad_param("messages",
                    "'" + where +
                        ".role' must be one of system, developer, user, assistant, tool; got '" +
                        role + "'");
  ordered_json out = {{"role", role}};
  const auto content = m.find("content");
  const bool has_tool_calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
  if (content == m.end() || content->is_null()) {
    if (role != "assistant")
      throw bad_param("messages", "'" + where + ".content' is required for role '" + role + "'");
    out["content"] = has_tool_calls ? ordered_json(nullptr) : ordered_json("");
  } else {
    out["content"] = flatten_content(*content, i);
  }
  if (const auto name = m.find("name"); name != m.end() && !name->is_null()) {
    if (!name->is_string()) throw bad_param("messages", "'" + where + ".name' must be a string");
    out["name"] = *name;
  }
  if (has_tool_calls) {
    if (!m["tool_calls"].is_array())
      throw bad_param("messages", "'" + where + ".tool_calls' must be an array");
    out["tool_calls"] = m["tool_calls"];
  }
  if (const auto id = m.find("tool_call_id"); id != m.end() && !id->is_null()) {
    if (!id->is_string())
      throw bad_param("messages", "'" + where + ".tool_call_id' must be a string");
    out["tool_call_id"] = *id;
  }
  return out;
}

}  // namespace

ChatRequest parse_chat_request(const ordered_json& body, const RequestLimits& limits) {
  ChatRequest r;
  const ordered_json* msgs = field(body, "messages");
  if (!msgs) throw bad_param("messages", "'messages' is required");
  if (!msgs->is_array())
    throw bad_param("messages", "'messages' must be an array, got " + json_type(*msgs));
  if (msgs->empty()) throw bad_param("messages", "'messages' must not be empty");
  if (msgs->size() > limits.max_messages)
    throw bad_param("messages", "'messages' may hold at most " +
                                    std::to_string(limits.max_messages) + " messages, got " +
                                    std::to_string(msgs->size()));
  r.messages = ordered_json::array();
  size_t bytes = 0;
  for (size_t i = 0; i < msgs->size(); ++i) {
    r.messages.push_back(normalize_message((*msgs)[i], i));
    const ordered_json& c = r.messages.back()["content"];
    if (c.is_string()) bytes += c.get_ref<const std::string&>().size();
  }
  if (bytes > limits.max_prompt_bytes)
    throw bad_param("messages", "'messages' content is longer than " +
                                    std::to_string(limits.max_prompt_bytes) + " bytes");
  if (const ordered_json* t = field(body, "tools")) {
    if (!t->is_array()) throw bad_param("tools", "'tools' must be an array, got " + json_type(*t));
    if (!t->empty()) r.tools = *t;
  }
  if (const ordered_json* k = field(body, "chat_template_kwargs")) {
    if (!k->is_object())
      throw bad_param("chat_template_kwargs",
                      "'chat_template_kwargs' must be an object, got " + json_type(*k));
    // May only add variables: replacing messages or raise_exception would bypass
    // the validation above and the template's own checks.
    const std::vector<std::string>& reserved = ChatTemplate::reserved_names();
    for (const auto& [name, value] : k->items())
      if (std::find(reserved.begin(), reserved.end(), name) != reserved.end())
        throw bad_param("chat_template_kwargs",
                        "'chat_template_kwargs' may not set '" + name +
                            "': the chat template's own variable of that name is reserved");
    // As llama-server, which also reads it to decide how the reply is parsed.
    const auto thinking = k->find("enable_thinking");
    if (thinking != k->end() && !thinking->is_boolean())
      throw bad_param(
          "chat_template_kwargs",
          "'chat_template_kwargs.enable_thinking' must be a boolean, got " + json_type(*thinking));
    r.template_kwargs = *k;
  }
  parse_common(body, limits, r, "max_completion_tokens", std::nullopt);
  r.logprobs = bool_field(body, "logprobs").value_or(false);
  if (auto top = int_field(body, "top_logprobs", 0, limits.max_top_logprobs)) {
    if (!r.logprobs)
      throw bad_param("top_logprobs", "'top_logprobs' requires 'logprobs' to be true");
    r.top_logprobs = static_cast<int>(*top);
  }
  finish_validation(r);
  return r;
}

}  // namespace kvforge::server
