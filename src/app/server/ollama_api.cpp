#include "app/server/ollama_api.h"

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <set>

#include "app/server/model_names.h"
#include "app/server/ollama_fields.h"
#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// The Ollama API version whose routes and fields this file follows.
constexpr const char* kOllamaApiVersion = "0.6.4";

// Ollama's "options" that map onto the OpenAI sampling fields.
const std::set<std::string>& sampling_options() {
  static const std::set<std::string> names = {
      "temperature",      "top_p", "top_k", "min_p", "seed", "stop", "presence_penalty",
      "frequency_penalty"};
  return names;
}

[[noreturn]] void refuse(const std::string& field, const std::string& why) {
  throw bad_param(field, "'" + field + "' is not supported: " + why);
}

// body[key] when it is a `T` (a string or a boolean), `fallback` when absent
// or null; a 400 naming the field otherwise (nlohmann's value() would throw
// a type_error, answered 500).
template <typename T>
T typed_field(const ordered_json& body, const char* key, T fallback) {
  const auto v = body.find(key);
  if (v == body.end() || v->is_null()) return fallback;
  if constexpr (std::is_same_v<T, bool>) {
    if (!v->is_boolean()) throw bad_param(key, "'" + std::string(key) + "' must be a boolean");
  } else if (!v->is_string()) {
    throw bad_param(key, "'" + std::string(key) + "' must be a string");
  }
  return v->get<T>();
}

// The common fields: model, stream, options, and the refused ones.
void map_common(const ordered_json& body, const RequestLimits& limits, OllamaRequest& r) {
  // "format": "json" or a JSON schema, through the grammar as response_format on chat.
  if (const auto f = body.find("format"); f != body.end() && !f->is_null() && *f != "") {
    if (*f == "json")
      r.openai["response_format"] = {{"type", "json_object"}};
    else if (f->is_object())
      r.openai["response_format"] = {{"type", "json_schema"},
                                     {"json_schema", {{"name", "format"}, {"schema", *f}}}};
    else
      throw bad_param("format", "'format' must be \"json\" or a JSON schema object");
  }
  if (const auto m = body.find("model"); m != body.end()) {
    if (!m->is_string()) throw bad_param("model", "'model' must be a string");
    r.model = m->get<std::string>();
    const std::string name = ollama_served_name(r.model);
    if (!serves_model(limits, name)) throw model_not_found(limits, name);
    r.openai["model"] = name;
  } else {
    throw bad_param("model", "'model' is required");
  }
  if (const auto s = body.find("stream"); s != body.end() && !s->is_null()) {
    if (!s->is_boolean()) throw bad_param("stream", "'stream' must be a boolean");
    r.stream = s->get<bool>();
  }
  check_ollama_keep_alive(body);
  r.openai["stream"] = r.stream;
  if (r.stream) r.openai["stream_options"] = {{"include_usage", true}};
  const auto options = body.find("options");
  if (options == body.end() || options->is_null()) return;
  if (!options->is_object()) throw bad_param("options", "'options' must be an object");
  for (const auto& [key, value] : options->items()) {
    if (key == "num_predict") {
      // Ollama: -1 = until the end of the context, -2 = fill it; both are no limit here.
      if (!value.is_number_integer())
        throw bad_param("options", "'num_predict' must be an integer");
      if (value.get<int64_t>() >= 0) r.openai["max_tokens"] = value;
    } else if (sampling_options().count(key)) {
      r.openai[key] = value;
    } else if (!check_ollama_runtime_option(key, value)) {
      refuse("options." + key, "kvforge does not implement this sampling option");
    }
  }
}

ordered_json parse(std::string_view body, const RequestLimits& limits) {
  return parse_json_body(body, limits, JsonBodyChecks{});
}

ordered_json chat_message(const ordered_json& m) {
  if (!m.is_object()) throw bad_param("messages", "each message must be an object");
  if (m.contains("images")) refuse("images", "kvforge serves text models only");
  ordered_json out = {{"role", typed_field<std::string>(m, "role", "")},
                      {"content", m.value("content", json())}};
  if (m.contains("tool_calls")) out["tool_calls"] = m["tool_calls"];
  return out;
}

std::string rfc3339_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json details(const ServerProps& m) {
  return {{"format", "gguf"},
          {"family", m.architecture},
          {"families", json::array({m.architecture})},
          {"parent_model", ""},
          {"parameter_size", ollama_parameter_size(m.parameter_count)},
          {"quantization_level", m.file_type}};
}

// One answer line: the text as "response" (/api/generate) or as the message.
json ollama_line(const OllamaRequest& r, const std::string& text, bool done) {
  json out = {{"model", r.model}, {"created_at", rfc3339_now()}};
  if (r.generate)
    out["response"] = text;
  else
    out["message"] = {{"role", "assistant"}, {"content", text}};
  out["done"] = done;
  return out;
}

}  // namespace

std::string ollama_served_name(const std::string& name) {
  constexpr std::string_view kLatest = ":latest";
  if (name.size() > kLatest.size() && name.ends_with(kLatest))
    return name.substr(0, name.size() - kLatest.size());
  return name;
}

OllamaRequest ollama_chat_request(std::string_view text, const RequestLimits& limits) {
  const ordered_json body = parse(text, limits);
  OllamaRequest r;
  map_common(body, limits, r);
  const auto messages = body.find("messages");
  if (messages == body.end() || !messages->is_array())
    throw bad_param("messages", "'messages' must be an array");
  // One chat message each: refused before they are converted and parsed once more.
  if (messages->size() > limits.max_messages)
    throw bad_param("messages", "'messages' may hold at most " +
                                    std::to_string(limits.max_messages) + " messages, got " +
                                    std::to_string(messages->size()));
  ordered_json out = ordered_json::array();
  for (const ordered_json& m : *messages) out.push_back(chat_message(m));
  r.openai["messages"] = std::move(out);
  if (body.contains("tools") && !body["tools"].is_null()) r.openai["tools"] = body["tools"];
  return r;
}

OllamaRequest ollama_generate_request(std::string_view text, const RequestLimits& limits) {
  const ordered_json body = parse(text, limits);
  for (const char* field : {"suffix", "images", "context", "template"})
    if (body.contains(field) && !body[field].is_null()) refuse(field, "not implemented");
  OllamaRequest r;
  r.generate = true;
  map_common(body, limits, r);
  const std::string prompt = typed_field<std::string>(body, "prompt", "");
  // Typed even where it is not used (raw: the prompt is sent as it is).
  const std::string system = typed_field<std::string>(body, "system", "");
  r.load_only = prompt.empty();
  if (typed_field(body, "raw", false)) {
    r.kind = ApiKind::kCompletion;
    r.openai["prompt"] = prompt;
    return r;
  }
  ordered_json messages = ordered_json::array();
  if (body.contains("system") && !body["system"].is_null())
    messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", prompt}});
  r.openai["messages"] = std::move(messages);
  return r;
}

json ollama_full_response(const OllamaRequest& r, const json& openai, const OllamaTimes& times) {
  const json& choice = openai["choices"][0];
  const std::string text =
      r.kind == ApiKind::kChat ? choice["message"].value("content", "") : choice.value("text", "");
  json out = ollama_line(r, text, true);
  out["done_reason"] = choice.value("finish_reason", "stop") == "length" ? "length" : "stop";
  out["total_duration"] = times.total_ns;
  if (times.prompt_eval_ns) out["prompt_eval_duration"] = *times.prompt_eval_ns;
  out["prompt_eval_count"] = openai["usage"]["prompt_tokens"];
  out["eval_count"] = openai["usage"]["completion_tokens"];
  return out;
}

OllamaStreamTranslator::OllamaStreamTranslator(const OllamaRequest& r,
                                               std::chrono::steady_clock::time_point start)
    : request_(r), start_(start) {}

json OllamaStreamTranslator::line(const std::string& text, bool done) const {
  return ollama_line(request_, text, done);
}

std::string OllamaStreamTranslator::translate(std::string_view event) {
  constexpr std::string_view kData = "data: ";
  if (failed_ || !event.starts_with(kData)) return {};
  event.remove_prefix(kData.size());
  while (!event.empty() && (event.back() == '\n')) event.remove_suffix(1);
  const auto elapsed = [this] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start_)
        .count();
  };
  if (event == "[DONE]") {
    json last = line("", true);
    last["done_reason"] = finish_reason_;
    last["total_duration"] = elapsed();
    if (first_token_ns_) last["prompt_eval_duration"] = *first_token_ns_;
    if (usage_.is_object()) {
      last["prompt_eval_count"] = usage_["prompt_tokens"];
      last["eval_count"] = usage_["completion_tokens"];
    }
    return last.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  const json chunk = json::parse(event);
  // An error after the stream began: Ollama's clients throw on an "error" line.
  if (chunk.contains("error") && chunk["error"].is_object()) {
    failed_ = true;
    return ollama_error(chunk["error"].value("message", "error")).dump() + "\n";
  }
  if (chunk.contains("usage") && chunk["usage"].is_object()) usage_ = chunk["usage"];
  if (!chunk.contains("choices") || chunk["choices"].empty()) return {};
  const json& choice = chunk["choices"][0];
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
    finish_reason_ = choice["finish_reason"] == "length" ? "length" : "stop";
  const std::string text = request_.kind == ApiKind::kChat
                               ? choice["delta"].value("content", std::string())
                               : choice.value("text", std::string());
  if (text.empty()) return {};
  if (!first_token_ns_) first_token_ns_ = elapsed();
  return line(text, false).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

json ollama_load_response(const OllamaRequest& r) {
  return {{"model", r.model},
          {"created_at", rfc3339_now()},
          {"response", ""},
          {"done", true},
          {"done_reason", "load"}};
}

json ollama_error(const std::string& message) { return {{"error", message}}; }

json ollama_version() { return {{"version", kOllamaApiVersion}}; }

std::string ollama_parameter_size(uint64_t n) {
  if (n == 0) return "";
  const char* units[] = {"", "K", "M", "B", "T"};
  double v = double(n);
  size_t u = 0;
  while (v >= 999.95 && u + 1 < std::size(units)) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%s" : "%.1f%s", v, units[u]);
  return buf;
}

json ollama_tags(const RequestLimits& limits, const ServerProps& model) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(model.model_path, ec);
  json models = json::array();
  const json listed = list_models(limits, 0);
  for (const json& m : listed["data"]) {
    const std::string name = m["id"].get<std::string>() + ":latest";
    models.push_back({{"name", name},
                      {"model", name},
                      {"modified_at", rfc3339_now()},
                      {"size", ec ? 0 : size},
                      {"digest", ""},
                      {"details", details(model)}});
  }
  return {{"models", models}};
}

json ollama_ps(const RequestLimits& limits, const ServerProps& model) {
  json running = ollama_tags(limits, model);
  for (json& m : running["models"]) {
    m["expires_at"] = "9999-12-31T23:59:59Z";  // loaded until the server stops
    m["size_vram"] = 0;                        // kvforge runs on the CPU
  }
  return running;
}

json ollama_show(std::string_view text, const RequestLimits& limits, const ServerProps& model,
                 const std::string& chat_template) {
  const ordered_json body = parse(text, limits);
  std::string name =
      typed_field<std::string>(body, "model", typed_field<std::string>(body, "name", ""));
  name = ollama_served_name(name);
  (void)typed_field(body, "verbose", false);  // Ollama's extra tensor detail: nothing to add here
  if (name.empty()) throw bad_param("model", "'model' is required");
  if (!serves_model(limits, name)) throw model_not_found(limits, name);
  // Every template takes tools: kvforge's tool path falls back to a generic
  // system-prompt form where the template has none (tool_call_syntax.h).
  return {{"modelfile", "FROM " + model.model_path + "\n"},
          {"parameters", ""},
          {"template", chat_template},
          {"details", details(model)},
          {"model_info",
           {{"general.architecture", model.architecture},
            {"general.parameter_count", model.parameter_count},
            {"general.context_length", limits.max_tokens_limit},
            {model.architecture + ".context_length", limits.max_tokens_limit}}},
          {"capabilities", json::array({"completion", "tools"})}};
}

}  // namespace kvforge::server
