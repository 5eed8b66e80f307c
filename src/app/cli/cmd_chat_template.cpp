// kvforge chat-template: render a conversation through a chat template and
// print the prompt text (and optionally its tokens), to debug templates.
#include <cstdio>
#include <memory>

#include "app/chat/chat_template.h"
#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/subcommand.h"
#include "app/tokenizer/tokenizer.h"
#include "core/gguf/gguf_file.h"

namespace kvforge::cli {
namespace {

struct ChatTemplateFlags : ModelFlags {
  std::string template_file;
  std::string messages = R"([{"role": "system", "content": "You are a helpful assistant."},
                             {"role": "user", "content": "Hello!"}])";
  std::string messages_file;
  bool no_generation_prompt = false;
  bool tokens = false;
};

void render(const ChatTemplateFlags& f) {
  const bool use_model = f.template_file.empty() || f.tokens;
  std::optional<gguf::GgufFile> file;
  std::optional<Tokenizer> tokenizer;
  if (use_model) {
    file = gguf::GgufFile::open(resolve_model_path(f.model));
    tokenizer = Tokenizer::from_gguf(*file);
  }
  std::string source;
  if (!f.template_file.empty()) {
    source = read_text_file(f.template_file);
  } else if (auto s = chat_template_source(*file)) {
    source = *s;
  } else {
    std::fprintf(stderr, "(the model has no chat template: showing the built-in fallback)\n");
    source = ChatTemplate::fallback_source();
  }
  ChatTemplateInputs in;
  const std::string json_text =
      f.messages_file.empty() ? f.messages : read_text_file(f.messages_file);
  in.messages = nlohmann::ordered_json::parse(json_text);
  in.add_generation_prompt = !f.no_generation_prompt;
  if (tokenizer) {
    if (tokenizer->bos_id() >= 0) in.bos_token = tokenizer->token_text(tokenizer->bos_id());
    if (tokenizer->eos_id() >= 0) in.eos_token = tokenizer->token_text(tokenizer->eos_id());
  }
  const std::string text = ChatTemplate::parse(source).render(in);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (f.tokens && tokenizer) {
    std::printf("\n--- %s\n", "tokens");
    for (int32_t id : tokenizer->encode(text, false, /*parse_special=*/true))
      std::printf("%d ", id);
    std::printf("\n");
  }
}

void declare_flags(CLI::App& sub, ChatTemplateFlags& f) {
  f.add_model_flag(sub, "GGUF model whose tokenizer.chat_template to use");
  sub.add_option("--template", f.template_file, "Jinja template file instead of the model's");
  sub.add_option("--messages", f.messages, "messages as a JSON array");
  sub.add_option("--messages-file", f.messages_file, "read the messages JSON from a file");
  sub.add_flag("--no-generation-prompt", f.no_generation_prompt, "add_generation_prompt = false");
  sub.add_flag("--tokens", f.tokens, "also print the token ids (needs the model)");
}

}  // namespace

void declare_chat_template_command(CLI::App& sub) {
  declare_command<ChatTemplateFlags>(sub, render, declare_flags);
}

}  // namespace kvforge::cli
