// kvforge tokenize: show how a model's tokenizer splits a text.
#include <cstdio>
#include <memory>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/subcommand.h"
#include "app/tokenizer/tokenizer.h"
#include "core/gguf/gguf_file.h"

namespace kvforge::cli {
namespace {

struct TokenizeFlags : ModelFlags {
  std::string text;
  bool ids_only = false;
  bool no_bos = false;
  bool no_special = false;
};

// Pieces are printed with control bytes escaped so the output stays one line per token.
std::string printable(const std::string& piece) {
  std::string out;
  for (unsigned char ch : piece) {
    if (ch == '\n')
      out += "\\n";
    else if (ch == '\t')
      out += "\\t";
    else if (ch < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else
      out += char(ch);
  }
  return out;
}

void tokenize(const TokenizeFlags& f) {
  // Only the tokenizer is read, so vocabulary-only GGUF files work too.
  const gguf::GgufFile file = gguf::GgufFile::open(resolve_model_path(f.model));
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const auto pieces = tokenize_with_pieces(tok, f.text, tok.add_bos() && !f.no_bos, !f.no_special);
  if (f.ids_only) {
    for (size_t i = 0; i < pieces.size(); ++i) std::printf(i ? " %d" : "%d", pieces[i].id);
    std::printf("\n");
    return;
  }
  for (const TokenPiece& p : pieces) std::printf("%8d  '%s'\n", p.id, printable(p.piece).c_str());
  std::printf("%zu tokens\n", pieces.size());
}

void declare_flags(CLI::App& sub, TokenizeFlags& flags) {
  // kvforge tokenize [-m] MODEL TEXT, or -m MODEL -p TEXT as llama-tokenize.
  auto positional = std::make_shared<std::vector<std::string>>();
  sub.add_option("-m,--model", flags.model, "GGUF model or vocabulary file");
  sub.add_option("-p,--prompt", flags.text, "text to tokenize (or the last positional)");
  sub.add_option("args", *positional, "[MODEL] TEXT")->expected(0, 2);
  sub.parse_complete_callback([&sub, &flags, positional] {
    std::vector<std::string> args = *positional;
    if (sub.count("--prompt") == 0) {
      if (args.empty()) throw CLI::ValidationError("tokenize", "give the text to tokenize");
      flags.text = args.back();
      args.pop_back();
    }
    if (!args.empty()) {
      if (sub.count("--model") > 0)
        throw CLI::ValidationError("tokenize", "the model is given twice (-m and " + args[0] + ")");
      flags.model = args[0];
    }
    if (args.size() > 1) throw CLI::ValidationError("tokenize", "too many arguments");
  });
  sub.add_flag("--ids", flags.ids_only, "print only the ids, space separated");
  sub.add_flag("--no-bos", flags.no_bos, "do not prepend BOS");
  sub.add_flag("--no-special", flags.no_special, "treat special-token text as plain text");
}

}  // namespace

void declare_tokenize_command(CLI::App& sub) {
  declare_command<TokenizeFlags>(sub, tokenize, declare_flags);
}

}  // namespace kvforge::cli
