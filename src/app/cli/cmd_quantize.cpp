// kvforge quantize: convert a model's weight matrices to a single type or to
// one of llama.cpp's mixtures (quantize_plan.h says which tensor gets what).
#include <cstdio>
#include <memory>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/progress_line.h"
#include "app/cli/subcommand.h"
#include "app/tools/quantize_model.h"
#include "app/tools/quantize_plan.h"
#include "app/tools/quantize_recipe.h"

namespace kvforge::cli {
namespace {

struct QuantizeFlags {
  std::string in, out;
  std::string type = "Q8_0";
  bool pure = false;
  bool dry_run = false;
};

void print_plan(const std::vector<PlannedTensor>& plan) {
  for (const PlannedTensor& p : plan)
    std::printf("%-40s %-7s -> %-7s%s\n", p.name.c_str(), std::string(type_name(p.from)).c_str(),
                p.quantized ? std::string(type_name(p.to)).c_str() : "(kept)",
                p.fell_back ? "  (row length fallback)" : "");
}

std::string type_counts(const QuantizeReport& r) {
  std::string out;
  for (const auto& [type, n] : r.matrices)
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(type_name(type));
  return out.empty() ? "no matrices" : out;
}

void quantize(const QuantizeFlags& f) {
  const QuantRecipe recipe = parse_quant_recipe(f.type, f.pure);
  const gguf::GgufFile src = gguf::GgufFile::open(f.in);
  const std::vector<PlannedTensor> plan =
      plan_quantization(read_quant_facts(src), read_quant_tensors(src), recipe);
  if (f.dry_run) return print_plan(plan);
  if (const int n = count_requantized(plan); n > 0)
    std::fprintf(stderr,
                 "warning: %s: %d matrices are already quantized; they are dequantized and "
                 "quantized again, which loses more than quantizing the original weights\n",
                 f.in.c_str(), n);
  ProgressLine progress;
  const QuantizeReport r = write_quantized(
      src, plan, recipe.ftype, f.out, [&progress](int done, int total, const std::string& name) {
        progress.update("[%3d/%3d] %-40s", done, total, name.c_str());
        if (done == total) progress.finish();
      });
  std::fprintf(stderr, "%s%s: %s (%d by row length fallback), %d tensors kept; %s -> %s\n",
               recipe.name.c_str(), f.pure ? " --pure" : "", type_counts(r).c_str(), r.fallback,
               r.kept, human_bytes(double(r.bytes_in)).c_str(),
               human_bytes(double(r.bytes_out)).c_str());
}

void declare_flags(CLI::App& sub, QuantizeFlags& f) {
  sub.add_option("input", f.in, "source GGUF")->required();
  sub.add_option("output", f.out, "destination GGUF")->required();
  sub.add_option("--type", f.type,
                 "a single type for every matrix (" + quantizable_type_list() +
                     ") or a llama.cpp mixture (" + quant_mixture_list() +
                     "), case-insensitive; a mixture name wins over the type of the same name")
      ->capture_default_str();
  sub.add_flag("--pure", f.pure,
               "every matrix in the mixture's base type, as llama-quantize --pure (rows that "
               "the type's blocks do not divide still fall back)");
  sub.add_flag("--dry-run", f.dry_run,
               "print each tensor's planned type and write nothing (output is still required)");
}

}  // namespace

void declare_quantize_command(CLI::App& sub) {
  declare_command<QuantizeFlags>(sub, quantize, declare_flags);
}

}  // namespace kvforge::cli
