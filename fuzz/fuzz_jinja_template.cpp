// Fuzz target for the chat-template engine (lexer, parser, renderer) under
// its budget: any byte string as a template must either be refused at parse
// (TemplateError) or render a fixed conversation to text, fail with
// TemplateError (including TemplateBudgetExceeded) or TemplateRaised. The
// limits are small so that each input stays fast; a crash, a sanitizer
// report, an exception of another type or a hang past libFuzzer's timeout
// is a bug.
#include <cstdint>
#include <string_view>

#include "app/chat/chat_template.h"

namespace {

kvforge::ChatTemplateInputs conversation() {
  kvforge::ChatTemplateInputs in;
  in.messages = nlohmann::ordered_json::parse(
      R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi <b>"},)"
      R"({"role":"assistant","content":"Hello.","tool_calls":[{"type":"function",)"
      R"("function":{"name":"f","arguments":{"x":1}}}]},{"role":"user","content":"2+2?"}])");
  in.tools = nlohmann::ordered_json::parse(
      R"([{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])");
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  in.extra = {{"enable_thinking", true}};
  in.now = [] { return std::tm{}; };
  return in;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kvforge::ChatTemplateInputs inputs = conversation();
  kvforge::jinja::RenderLimits limits;
  // Still hundreds of times what the fixed conversation needs with a real
  // template; a bomb that exhausts them costs about 0.25 s under ASan (with
  // 2 M units and 16 MiB, about 1 s: a fifth of a long run's time went to them).
  limits.max_work = 500'000;
  limits.max_alloc_bytes = 4u << 20;
  limits.max_output_bytes = 1u << 20;
  try {
    const auto t =
        kvforge::ChatTemplate::parse(std::string_view(reinterpret_cast<const char*>(data), size));
    (void)t.render(inputs, limits);
  } catch (const kvforge::TemplateError&) {
  } catch (const kvforge::TemplateRaised&) {
  }
  return 0;
}
