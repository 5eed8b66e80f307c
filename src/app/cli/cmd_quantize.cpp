// kvforge quantize: convert a model's weight matrices to a single type or to
// one of llama.cpp's mixtures (quantize_plan.h says which tensor gets what).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/progress_line.h"
#include "app/cli/subcommand.h"
#include "app/tools/key_override.h"
#include "app/tools/quantize_model.h"
#include "app/tools/quantize_plan.h"
#include "app/tools/quantize_recipe.h"

namespace kvforge::cli {
namespace {

struct QuantizeFlags {
  std::string in, out;
  std::string type;                    // --type; empty: Q8_0
  std::string positional_type;         // llama-quantize's form: quantize IN OUT TYPE
  std::vector<std::string> overrides;  // --override-kv KEY=TYPE:VALUE
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

// The type from --type or the third positional argument (not both, unless they agree).
std::string chosen_type(const QuantizeFlags& f) {
  if (f.positional_type.empty()) return f.type.empty() ? "Q8_0" : f.type;
  if (!f.type.empty() && f.type != f.positional_type)
    throw std::invalid_argument("quantize: type given twice: --type " + f.type + " and " +
                                f.positional_type + " after the output file");
  return f.positional_type;
}

// Refuses an output whose directory is missing or not writable before any work is done.
void check_output_path(const std::string& out) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(out).has_parent_path() ? fs::path(out).parent_path() : ".";
  if (!fs::is_directory(dir))
    throw std::runtime_error(out + ": cannot write: the directory " + dir.string() +
                             " does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw std::runtime_error(out + ": cannot write in " + dir.string() + ": " +
                             std::strerror(errno));
  if (fs::is_directory(out)) throw std::runtime_error(out + ": is a directory, not a file");
}

void quantize(const QuantizeFlags& f) {
  const QuantRecipe recipe = parse_quant_recipe(chosen_type(f), f.pure);
  std::vector<KeyOverride> overrides;
  for (const std::string& o : f.overrides) overrides.push_back(parse_key_override(o));
  if (!f.dry_run) check_output_path(f.out);
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
  const QuantizeReport r =
      write_quantized(src, plan, recipe.ftype, f.out, overrides,
                      [&progress](int done, int total, const std::string& name) {
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
  sub.add_option("type", f.positional_type,
                 "the type, as llama-quantize's third argument (the same as --type)");
  sub.add_option(
      "--type", f.type,
      "a single type for every matrix (" + quantizable_type_list() + ") or a llama.cpp mixture (" +
          quant_mixture_list() +
          "), case-insensitive; a mixture name wins over the type of the same name (default: "
          "Q8_0)");
  sub.add_flag("--pure", f.pure,
               "every matrix in the mixture's base type, as llama-quantize --pure (rows that "
               "the type's blocks do not divide still fall back)");
  sub.add_option("--override-kv", f.overrides,
                 "KEY=TYPE:VALUE: set a metadata key in the output, as llama-quantize's "
                 "(TYPE int, written as UINT32; float; bool; str), e.g. "
                 "qwen3.pooling_type=int:3; repeatable")
      ->allow_extra_args(false);
  sub.add_flag("--dry-run", f.dry_run,
               "print each tensor's planned type and write nothing (output is still required)");
}

}  // namespace

void declare_quantize_command(CLI::App& sub) {
  declare_command<QuantizeFlags>(sub, quantize, declare_flags);
}

}  // namespace kvforge::cli
