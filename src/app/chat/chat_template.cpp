#include "app/chat/chat_template.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "app/chat/jinja_budget.h"
#include "app/chat/jinja_builtins.h"
#include "app/chat/jinja_lexer.h"
#include "app/chat/jinja_parser.h"
#include "app/chat/python_format.h"
#include "app/tokenizer/utf8.h"
#include "core/gguf/gguf_file.h"

namespace kvforge {

struct ChatTemplate::Parsed {
  std::string source;
  jinja::NodeList root;
};

namespace {

constexpr const char* kFallbackSource =
    "{%- for message in messages -%}"
    "{{ message['role'] | capitalize }}: {{ message['content'] | trim }}{{ '\\n\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt %}Assistant:{% endif -%}";

std::string strftime_string(const std::tm& tm, const std::string& format) {
  if (format.size() > 256) throw std::invalid_argument("strftime format longer than 256 bytes");
  char buf[1024];
  const size_t n = std::strftime(buf, sizeof buf, format.c_str(), &tm);
  return std::string(buf, n);
}

std::tm local_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

// raise_exception(message): aborts the render with the template's message.
jinja::Value global_raise_exception(const jinja::CallArgs& a) {
  throw jinja::TemplateRaised(a.positional.empty() ? "template raised an exception"
                                                   : jinja::python_str(a.positional[0]));
}

// namespace(k=v, ...): a mutable object for state across loop iterations.
jinja::Value global_namespace(const jinja::CallArgs& a) {
  jinja::Object o;
  for (const auto& [k, v] : a.keyword) {
    if (v.holds_namespace()) throw std::invalid_argument("a namespace cannot hold a namespace");
    o.emplace_back(k, v);
  }
  return jinja::Value::make_namespace(std::move(o));
}

// range(stop), range(start, stop[, step]) as Python's, as a list.
jinja::Value global_range(const jinja::CallArgs& a) {
  int64_t start = 0, stop = 0, step = 1;
  auto num = [](const jinja::Value& v) {
    if (!v.is_int()) throw std::invalid_argument("range() arguments must be integers");
    return v.as_int();
  };
  if (a.positional.size() == 1)
    stop = num(a.positional[0]);
  else if (a.positional.size() >= 2) {
    start = num(a.positional[0]);
    stop = num(a.positional[1]);
    if (a.positional.size() >= 3) step = num(a.positional[2]);
  } else {
    throw std::invalid_argument("range() needs 1 to 3 arguments");
  }
  if (step == 0) throw std::invalid_argument("range() step must not be zero");
  const int64_t count = step > 0 ? (stop > start ? (stop - start - 1) / step + 1 : 0)
                                 : (start > stop ? (start - stop - 1) / -step + 1 : 0);
  if (count > static_cast<int64_t>(jinja::kMaxBuiltValueSize))
    throw std::invalid_argument("range() too long");
  jinja::charge_bytes(static_cast<size_t>(count) * sizeof(jinja::Value));
  jinja::Array out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= jinja::kMaxBuiltValueSize) throw std::invalid_argument("range() too long");
    out.emplace_back(i);
  }
  return jinja::Value(std::move(out));
}

jinja::Object make_globals(const ChatTemplateInputs& in) {
  using jinja::CallArgs;
  using jinja::Value;
  jinja::Object g;
  g.emplace_back("messages", Value::from_json(in.messages));
  g.emplace_back("tools", Value::from_json(in.tools));
  g.emplace_back("documents", Value::none());
  g.emplace_back("add_generation_prompt", Value(in.add_generation_prompt));
  g.emplace_back("bos_token", Value(in.bos_token));
  g.emplace_back("eos_token", Value(in.eos_token));
  g.emplace_back("raise_exception", Value::function("raise_exception", global_raise_exception));
  g.emplace_back("namespace", Value::function("namespace", global_namespace));
  g.emplace_back("range", Value::function("range", global_range));
  auto clock = in.now ? in.now : std::function<std::tm()>(local_now);
  g.emplace_back("strftime_now", Value::function("strftime_now", [clock](const CallArgs& a) {
                   if (a.positional.empty() || !a.positional[0].is_string())
                     throw std::invalid_argument("strftime_now() expects a format string");
                   return Value(strftime_string(clock(), a.positional[0].as_string()));
                 }));
  // Extra variables add names; replacing a global (the conversation, raise_exception...)
  // would bypass what the caller validated.
  for (const auto& [k, v] : in.extra.items()) {
    if (std::any_of(g.begin(), g.end(), [&key = k](const auto& e) { return e.first == key; }))
      throw std::invalid_argument("template variable '" + k + "' is reserved");
    g.emplace_back(k, Value::from_json(v));
  }
  return g;
}

}  // namespace

ChatTemplate ChatTemplate::parse(std::string_view source) {
  if (source.size() > kMaxSourceBytes)
    throw TemplateError(1, "template is " + std::to_string(source.size()) + " bytes, more than " +
                               std::to_string(kMaxSourceBytes));
  auto parsed = std::make_shared<Parsed>();
  parsed->source = std::string(source);
  parsed->root = jinja::parse_template(jinja::lex_template(parsed->source));
  return ChatTemplate(std::move(parsed));
}

ChatTemplate ChatTemplate::fallback() { return parse(kFallbackSource); }
const char* ChatTemplate::fallback_source() { return kFallbackSource; }

std::string ChatTemplate::render(const ChatTemplateInputs& inputs,
                                 const jinja::RenderLimits& limits,
                                 jinja::RenderUsage* usage) const {
  return jinja::render_template(parsed_->root, make_globals(inputs), limits, usage);
}

const std::vector<std::string>& ChatTemplate::reserved_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [k, v] : make_globals(ChatTemplateInputs{})) out.push_back(k);
    return out;
  }();
  return names;
}

void ChatTemplate::check_renders(const jinja::RenderLimits& limits) const {
  ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::parse(
      R"([{"role":"system","content":"You are helpful."},{"role":"user","content":"Hi"},)"
      R"({"role":"assistant","content":"Hello."},{"role":"user","content":"Thanks"}])");
  in.now = [] { return std::tm{}; };
  try {
    render(in, limits);
  } catch (const TemplateRaised&) {
    // Some templates reject a system message: try without it.
    in.messages.erase(in.messages.begin());
    try {
      render(in, limits);
    } catch (const TemplateRaised&) {
    }
  }
}

const std::string& ChatTemplate::source() const { return parsed_->source; }

std::optional<std::string> chat_template_source(const gguf::GgufFile& file) {
  if (!file.has("tokenizer.chat_template")) return std::nullopt;
  std::string source = file.get_string("tokenizer.chat_template");
  // Every prompt it rendered would carry the bad bytes, and every chat request be refused.
  if (const std::optional<size_t> bad = find_invalid_utf8(source))
    throw std::runtime_error(file.name() + ": tokenizer.chat_template is not valid UTF-8 (byte " +
                             std::to_string(*bad) + " of " + std::to_string(source.size()) +
                             "); pass --chat-template FILE to use another");
  return source;
}

}  // namespace kvforge
