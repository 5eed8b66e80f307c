// kvforge tokenize: show how a model's tokenizer splits a text.
#include <cstdio>
#include <memory>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
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

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* sub = app.add_subcommand("tokenize", "split text into tokens with a model's tokenizer");
  sub->add_option("model", flags->model, "GGUF model or vocabulary file")->required();
  sub->add_option("text", flags->text, "text to tokenize")->required();
  sub->add_flag("--ids", flags->ids_only, "print only the ids, space separated");
  sub->add_flag("--no-bos", flags->no_bos, "do not prepend BOS");
  sub->add_flag("--no-special", flags->no_special, "treat special-token text as plain text");
  sub->callback([flags] { tokenize(*flags); });
}

}  // namespace kvforge::cli
