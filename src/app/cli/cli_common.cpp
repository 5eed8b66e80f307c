#include "app/cli/cli_common.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kvforge::cli {

std::filesystem::path default_model_path() { return KVFORGE_DEFAULT_MODEL; }

void ModelFlags::add_model_flag(CLI::App& app, const std::string& help) {
  app.add_option("-m,--model", model, help);
}

void ModelFlags::add_threads_flag(CLI::App& app, const std::string& help) {
  app.add_option("-t,--threads", threads, help)->capture_default_str();
}

namespace {
SingleProcessCommunicator g_alone;
Communicator* g_world = &g_alone;
}  // namespace

Communicator& world() { return *g_world; }
void set_world(Communicator* w) { g_world = w ? w : &g_alone; }

Communicator* tensor_parallel_world(int tp) {
  const int n = world().size();
  if (tp < 0) throw std::invalid_argument("--tp " + std::to_string(tp) + ": must be >= 0");
  if (tp == 0) tp = n;
  if (tp > 1 && n == 1) {
    if (!mpi_available())
      throw std::invalid_argument(
          "--tp " + std::to_string(tp) +
          ": this kvforge was built without MPI, so it runs in one process only (install Open "
          "MPI with scripts/setup.sh and rebuild for tensor parallelism)");
    throw std::invalid_argument("--tp " + std::to_string(tp) + " needs " + std::to_string(tp) +
                                " processes: launch it as mpirun -np " + std::to_string(tp) +
                                " kvforge run ...");
  }
  if (tp != n)
    throw std::invalid_argument("--tp " + std::to_string(tp) + ", but mpirun started " +
                                std::to_string(n) + " processes: they must be the same");
  return n > 1 ? &world() : nullptr;
}

LoadedModel load_model(const std::string& model_flag, Communicator* comm) {
  std::filesystem::path path = resolve_model_path(model_flag);
  std::unique_ptr<Model> model = Model::load(path, comm);
  Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
  return {std::move(path), std::move(model), std::move(tokenizer)};
}

std::filesystem::path resolve_model_path(const std::string& path) {
  const std::filesystem::path p = path.empty() ? default_model_path() : std::filesystem::path(path);
  if (!std::filesystem::exists(p))
    throw std::runtime_error(p.string() + ": no such file" +
                             (path.empty() ? " (the default model; pass -m MODEL.gguf)" : ""));
  return p;
}

int default_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

namespace {
KvDtype parse_kv_dtype(const char* flag, const std::string& name) {
  if (auto t = kv_dtype_from_name(name)) return *t;
  throw std::invalid_argument(std::string(flag) + ": unknown KV cache type '" + name +
                              "' (expected one of " + kv_dtype_names() + ")");
}
}  // namespace

void KvTypeFlags::add_to(CLI::App& app) {
  const std::string names = kv_dtype_names();
  app.add_option("--kv-type", type, "KV cache storage format for K and V: " + names)
      ->capture_default_str();
  app.add_option("--kv-type-k", type_k, "K storage format (overrides --kv-type)");
  app.add_option("--kv-type-v", type_v, "V storage format (overrides --kv-type)");
}

KvFormat KvTypeFlags::format() const {
  const KvDtype both = parse_kv_dtype("--kv-type", type);
  return {type_k.empty() ? both : parse_kv_dtype("--kv-type-k", type_k),
          type_v.empty() ? both : parse_kv_dtype("--kv-type-v", type_v)};
}

std::string KvTypeFlags::describe() const {
  const KvFormat f = format();
  if (f.k == f.v) return kv_dtype_name(f.k);
  return std::string("K ") + kv_dtype_name(f.k) + ", V " + kv_dtype_name(f.v);
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

void SamplingFlags::add_to(CLI::App& app) {
  app.add_option("--temp", temperature, "sampling temperature; 0 = greedy")->capture_default_str();
  app.add_option("--top-k", top_k, "keep the k most likely tokens; 0 = off")->capture_default_str();
  app.add_option("--top-p", top_p, "nucleus sampling threshold; 1 = off")->capture_default_str();
  app.add_option("--min-p", min_p, "drop tokens below min_p * p(best); 0 = off")
      ->capture_default_str();
  app.add_option("--repeat-penalty", repeat_penalty, "repetition penalty; 1 = off")
      ->capture_default_str();
  app.add_option("--repeat-last-n", repeat_last_n, "penalty window in tokens; -1 = whole context")
      ->capture_default_str();
  app.add_option("--presence-penalty", presence_penalty, "OpenAI presence penalty")
      ->capture_default_str();
  app.add_option("--frequency-penalty", frequency_penalty, "OpenAI frequency penalty")
      ->capture_default_str();
  app.add_option("--seed", seed, "RNG seed; -1 = random (the seed used is printed)")
      ->capture_default_str();
  app.add_option("--stop", stop, "stop string (repeatable)");
  app.add_flag("--ignore-eos", ignore_eos, "keep generating after an end-of-generation token");
}

SamplingParams SamplingFlags::to_params(int max_tokens) const {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.repetition_penalty = repeat_penalty;
  p.penalty_last_n = repeat_last_n;
  p.presence_penalty = presence_penalty;
  p.frequency_penalty = frequency_penalty;
  if (seed >= 0) p.seed = uint64_t(seed);
  if (max_tokens >= 0) p.max_tokens = max_tokens;
  p.stop = stop;
  p.ignore_eos = ignore_eos;
  if (auto err = p.validate()) throw std::invalid_argument(*err);
  return p;
}

}  // namespace kvforge::cli
