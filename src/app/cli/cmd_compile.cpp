// kvforge compile: model + static configuration → a .kvfplan file holding
// one prefill plan and one generate plan per variant (what an NPU compiler
// does ahead of time), for `kvforge run --plan`.
#include <chrono>
#include <cstdio>
#include <memory>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/static_flags.h"
#include "app/cli/subcommand.h"
#include "engine/static_pipeline/plan_compiler.h"
#include "engine/static_pipeline/plan_file.h"
#include "model/model.h"

namespace kvforge::cli {
namespace {

struct CompileFlags : ModelFlags {
  std::string output;
  KvTypeFlags kv;
  StaticFlags shape;
};

void print_plan(const Plan& p) {
  std::fprintf(stderr, "  %-22s %4zu ops  %3zu buffers  arena %10s  matmul scratch %s\n",
               p.label().c_str(), p.ops.size(), p.buffers.size(),
               human_bytes(double(p.arena_bytes)).c_str(),
               human_bytes(double(p.matmul_scratch_bytes)).c_str());
}

void compile(const CompileFlags& f) {
  const auto path = resolve_model_path(f.model);
  const auto model = Model::load(path);
  f.loading.lock_memory();
  const StaticConfig config = f.shape.to_config(f.kv.format());
  const auto t0 = std::chrono::steady_clock::now();
  const PlanSet plans = compile_plans(*model, config, f.threads);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  write_plan_file(f.output, plans);
  std::fprintf(stderr, "model %s: %s\nstatic %s, %d threads\n", path.filename().c_str(),
               model->config().arch_name.c_str(), config.describe().c_str(), f.threads);
  print_plan(plans.prefill);
  for (const Plan& p : plans.generate) print_plan(p);
  std::fprintf(stderr, "compiled %zu plans in %.2f ms → %s (%s)\n", 1 + plans.generate.size(), ms,
               f.output.c_str(), human_bytes(double(std::filesystem::file_size(f.output))).c_str());
}

void declare_flags(CLI::App& sub, CompileFlags& flags) {
  sub.add_option("-o,--output", flags.output, "plan file to write (e.g. model.kvfplan)")
      ->required();
  flags.add_threads_flag(sub, "threads the plans are partitioned for");
  flags.kv.add_to(sub);
  flags.shape.add_to(sub, /*with_mode_flags=*/false);
}

}  // namespace

void declare_compile_command(CLI::App& sub) {
  declare_model_command<CompileFlags>(sub, compile, declare_flags);
}

}  // namespace kvforge::cli
