// A model's chat template (GGUF key tokenizer.chat_template, the Jinja
// template from Hugging Face's tokenizer_config.json) turned into prompt text
// the way transformers' apply_chat_template does: the same globals (messages,
// tools, add_generation_prompt, bos_token, eos_token, raise_exception,
// strftime_now), trim_blocks and lstrip_blocks.
//
// Parsing happens once; render() is const and thread-safe.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/chat/jinja_error.h"
#include "app/chat/jinja_renderer.h"

namespace kvforge {

namespace gguf {
class GgufFile;
}

using TemplateError = jinja::TemplateError;    // the template is broken or unsupported
using TemplateRaised = jinja::TemplateRaised;  // the template rejects this conversation
using TemplateBudgetExceeded = jinja::TemplateBudgetExceeded;  // past its work or memory budget
using RenderAbandoned = jinja::RenderAbandoned;                // RenderLimits::abandoned said stop

struct ChatTemplateInputs {
  // [{"role": "...", "content": "..."}, ...]; extra keys (tool_calls, name...)
  // are visible to the template.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools = nullptr;  // null = no tools
  bool add_generation_prompt = true;
  std::string bos_token;
  std::string eos_token;
  // More template variables (e.g. {"enable_thinking": false}).
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  // Clock behind strftime_now(); unset = local time now.
  std::function<std::tm()> now;
};

class ChatTemplate {
 public:
  // Throws TemplateError (with the line) for syntax errors, unsupported tags
  // or sources larger than kMaxSourceBytes.
  static ChatTemplate parse(std::string_view source);
  static constexpr size_t kMaxSourceBytes = 1 << 20;

  // A plain fallback for models without a chat template: "System: ...\n\n"
  // "User: ...\n\nAssistant: ...\n\n" and a trailing "Assistant:" prompt.
  static ChatTemplate fallback();
  static const char* fallback_source();

  // Throws TemplateError, or TemplateRaised when the template's own checks
  // reject the conversation, or std::invalid_argument for inputs nested too deep.
  // inputs.extra may only add names: one of reserved_names() is an
  // std::invalid_argument. `usage` (optional) receives the work and bytes used.
  std::string render(const ChatTemplateInputs& inputs, const jinja::RenderLimits& limits = {},
                     jinja::RenderUsage* usage = nullptr) const;
  // The template's globals (messages, tools, add_generation_prompt,
  // bos_token, eos_token, raise_exception, namespace, range, ...).
  static const std::vector<std::string>& reserved_names();

  // Renders a short conversation (system, user, assistant, user) as a load-time
  // check: throws TemplateBudgetExceeded when even that goes past `limits`, or
  // TemplateError when the template fails on it. A rejection of the
  // conversation by the template itself (raise_exception) is not a failure.
  void check_renders(const jinja::RenderLimits& limits = {}) const;

  const std::string& source() const;

 private:
  struct Parsed;
  explicit ChatTemplate(std::shared_ptr<const Parsed> parsed) : parsed_(std::move(parsed)) {}
  std::shared_ptr<const Parsed> parsed_;
};

// The template stored in the model file, or nullopt when it has none;
// std::runtime_error naming the file and key when it is not valid UTF-8.
std::optional<std::string> chat_template_source(const gguf::GgufFile& file);

}  // namespace kvforge
