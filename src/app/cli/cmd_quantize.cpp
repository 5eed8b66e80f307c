// kvforge quantize: convert a model's weight matrices to another format.
#include <cstdio>
#include <memory>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/progress_line.h"
#include "app/quantize_model.h"

namespace kvforge::cli {

void add_quantize_command(CLI::App& app) {
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto type = std::make_shared<std::string>("q8_0");
  CLI::App* sub = app.add_subcommand("quantize", "convert weight matrices to another format");
  sub->add_option("input", *in, "source GGUF")->required();
  sub->add_option("output", *out, "destination GGUF")->required();
  sub->add_option("--type", *type, "q8_0, q4_0, q4_k, q6_k, q5_0, iq4_nl, f16, bf16 or f32")
      ->capture_default_str();
  sub->callback([in, out, type] {
    const auto t = parse_type_name(*type);
    if (!t) throw std::invalid_argument("unknown type '" + *type + "'");
    ProgressLine progress;
    const QuantizeReport r =
        quantize_model(*in, *out, *t, [&progress](int done, int total, const std::string& name) {
          progress.update("[%3d/%3d] %-40s", done, total, name.c_str());
          if (done == total) progress.finish();
        });
    std::fprintf(stderr,
                 "%d matrices -> %s, %d fell back (row length), %d 1-D tensors kept; %s -> %s\n",
                 r.converted, type->c_str(), r.fallback, r.kept,
                 human_bytes(double(r.bytes_in)).c_str(), human_bytes(double(r.bytes_out)).c_str());
  });
}

}  // namespace kvforge::cli
