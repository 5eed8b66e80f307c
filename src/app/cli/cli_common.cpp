#include "app/cli/cli_common.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "app/cli/flag_checks.h"
#include "app/cli/load_progress.h"

namespace kvforge::cli {

std::filesystem::path default_model_path() { return KVFORGE_DEFAULT_MODEL; }

void ModelFlags::add_model_flag(CLI::App& app, const std::string& help) {
  app.add_option("-m,--model", model, help);
  loading.add_to(app);
  app.parse_complete_callback([this] { loading.print_notes(); });
}

void ModelFlags::add_threads_flag(CLI::App& app, const std::string& help) {
  const int cores = hardware_threads();
  // Runs on the text before conversion: -1 becomes the core count, anything
  // else below 1 is refused, more than the machine has warns.
  const CLI::Validator threads_check(
      [cores](std::string& text) -> std::string {
        int n = 0;
        try {
          n = std::stoi(text);
        } catch (const std::exception&) {
          return "-t/--threads takes a number of threads, got '" + text + "'";
        }
        if (n == -1) {
          text = std::to_string(cores);
          return "";
        }
        if (n < 1)
          return "-t must be >= 1, or -1 for all " + std::to_string(cores) +
                 " hardware threads; got " + text;
        if (n > cores)
          std::fprintf(stderr,
                       "warning: -t %d is more than the %d hardware threads of this machine; "
                       "the extra threads share cores and slow every step down\n",
                       n, cores);
        return "";
      },
      "", "threads");
  app.add_option("-t,--threads", threads, help + "; -1 = all hardware threads")
      ->transform(threads_check)
      ->capture_default_str();
}

void add_ctx_size_flag(CLI::App& app, int& ctx, const std::string& help) {
  app.add_option("-c,--ctx-size", ctx, help)
      ->check(at_least(0, "0 = the default"))
      ->capture_default_str();
}

void add_batch_size_flag(CLI::App& app, int& batch, const std::string& help) {
  app.add_option("-b,--batch-size", batch, help)->check(at_least(1))->capture_default_str();
}

void add_n_predict_flag(CLI::App& app, int& n, const std::string& help) {
  const CLI::Validator n_check(
      [](std::string& text) -> std::string {
        int v = 0;
        try {
          v = std::stoi(text);
        } catch (const std::exception&) {
          return "-n/--n-predict takes a number of tokens, got '" + text + "'";
        }
        if (v == -1 || v >= 1) return "";
        return "-n must be >= 1, or -1 to generate until the end of the text or "
               "the context; got " +
               text;
      },
      "", "n_predict");
  app.add_option("-n,--n-predict", n, help + "; -1 = until done")
      ->check(n_check)
      ->capture_default_str();
}

void check_context_size(const ModelConfig& c, int ctx, const char* flag) {
  const int trained = c.n_ctx_train;
  if (ctx <= trained || trained <= 0) return;
  // Linear and YaRN scaling stretch n_ctx_orig positions by 1/freq_scale: past that the
  // scaled positions are as foreign to the model as unscaled ones past its training.
  const bool scaled =
      (c.rope_scaling == RopeScaling::Linear || c.rope_scaling == RopeScaling::Yarn) &&
      c.rope.freq_scale < 1.0f;
  if (scaled) {
    const double covered = std::max(double(trained), double(c.rope.n_ctx_orig) / c.rope.freq_scale);
    if (ctx > covered)
      throw std::invalid_argument(std::string(flag) + " " + std::to_string(ctx) +
                                  " is beyond the " + std::to_string(int64_t(covered)) +
                                  " positions the model's RoPE scaling covers (x" +
                                  std::to_string(int(1.0f / c.rope.freq_scale + 0.5f)) + " over " +
                                  std::to_string(c.rope.n_ctx_orig) + "; trained on " +
                                  std::to_string(trained) + " tokens)");
    return;
  }
  std::fprintf(stderr,
               "warning: %s %d is beyond the model's training context of %d tokens: positions "
               "past %d were never trained and the output degrades there\n",
               flag, ctx, trained, trained);
}

void ModelFlags::add_tp_flag(CLI::App& app) {
  app.add_option("--tp", tp,
                 "tensor-parallel ranks (mpirun -np N kvforge ...); 0 = the processes mpirun "
                 "started")
      ->capture_default_str();
  app.add_option("--tp-timeout", tp_timeout,
                 "seconds a rank waits for another before ending the run, naming it (a rank "
                 "that hung or was stopped)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

LoadedModel load_model(const ModelFlags& flags) {
  Communicator* comm = tensor_parallel_world(flags.tp);
  LoadedModel loaded = load_model(flags.model, comm);
  if (comm) start_tp_deadline(*comm, flags.tp_timeout);
  flags.loading.lock_memory();
  return loaded;
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
                                " kvforge ...");
  }
  if (tp != n)
    throw std::invalid_argument("--tp " + std::to_string(tp) + ", but mpirun started " +
                                std::to_string(n) + " processes: they must be the same");
  return n > 1 ? &world() : nullptr;
}

std::string kv_heads_text(const ModelConfig& c) {
  if (c.n_kv_head_swa == 0 || c.n_kv_head_swa == c.n_kv_head) return std::to_string(c.n_kv_head);
  return std::to_string(c.n_kv_head) + " full, " + std::to_string(c.n_kv_head_swa) + " windowed";
}

std::string describe_tp(const Model& model) {
  if (model.tp() == 1) return "";
  return ", tensor parallel over " + std::to_string(model.tp()) + " ranks (" +
         kv_heads_text(model.rank_config()) + " KV heads each)";
}

void start_tp_deadline(Communicator& comm, double seconds) {
  std::vector<uint64_t> loaded(size_t(comm.size()), 1);
  comm.all_gather(loaded.data());  // no deadline yet: loading takes as long as it takes
  comm.set_deadline(seconds);
}

void broadcast_tokens(Communicator& comm, std::vector<int32_t>& tokens) {
  const double deadline = comm.deadline();
  comm.set_deadline(0);
  uint64_t n = tokens.size();
  comm.broadcast(&n, sizeof n, 0);
  tokens.resize(n);
  if (n) comm.broadcast(tokens.data(), n * sizeof(int32_t), 0);
  comm.set_deadline(deadline);
}

void check_tokenizer_fits(const Tokenizer& tokenizer, const Model& model) {
  const ModelConfig& c = model.config();
  if (tokenizer.n_vocab() > c.n_vocab)
    throw std::runtime_error(
        model.file().name() + ": tokenizer.ggml.tokens has " + std::to_string(tokenizer.n_vocab()) +
        " tokens, expected at most " + std::to_string(c.n_vocab) +
        " (the model's vocabulary: " + c.arch_name + ".vocab_size, token_embd.weight rows)");
}

LoadedModel load_model(const std::string& model_flag, Communicator* comm) {
  std::filesystem::path path = resolve_model_path(model_flag);
  std::unique_ptr<Model> model;
  std::error_code size_error;
  const uintmax_t bytes = std::filesystem::file_size(path, size_error);
  const std::string what =
      path.filename().string() + (size_error ? "" : " (" + human_bytes(double(bytes)) + ")");
  with_load_progress(what, 1.0,
                     [&](const LoadReport& report) { model = Model::load(path, comm, report); });
  Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
  check_tokenizer_fits(tokenizer, *model);
  return {std::move(path), std::move(model), std::move(tokenizer)};
}

std::filesystem::path resolve_model_path(const std::string& path) {
  const std::filesystem::path p = path.empty() ? default_model_path() : std::filesystem::path(path);
  if (!std::filesystem::exists(p))
    throw std::runtime_error(p.string() + ": no such file" +
                             (path.empty() ? " (the default model; pass -m MODEL.gguf)" : ""));
  return p;
}

int hardware_threads() { return int(std::max(1u, std::thread::hardware_concurrency())); }

int default_threads() {
  // mpirun tells each rank how many ranks it started on this host.
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int ranks = local ? std::max(1, std::atoi(local)) : 1;
  return std::max(1, hardware_threads() / ranks);
}

namespace {
KvDtype parse_kv_dtype(const char* flag, const std::string& name) {
  if (auto t = kv_dtype_from_user_name(name)) return *t;
  throw std::invalid_argument(std::string(flag) + ": unknown KV cache type '" + name +
                              "' (expected one of " + kv_dtype_names() +
                              ", or llama.cpp's q8_0, q4_0)");
}

// SamplingParams::validate names the OpenAI API field; on the command line
// the user typed a flag.
std::string with_flag_names(std::string message) {
  static const std::pair<const char*, const char*> kFlags[] = {
      {"sampling: temperature", "--temp"},
      {"sampling: top_k", "--top-k"},
      {"sampling: top_p", "--top-p"},
      {"sampling: min_p", "--min-p"},
      {"sampling: repetition_penalty", "--repeat-penalty"},
      {"sampling: presence_penalty", "--presence-penalty"},
      {"sampling: frequency_penalty", "--frequency-penalty"},
      {"sampling: penalty_last_n", "--repeat-last-n"},
      {"sampling: max_tokens", "-n/--n-predict"},
      {"sampling: stop string", "--stop string"},
      {"sampling: at most", "--stop: at most"},
  };
  for (const auto& [field, flag] : kFlags)
    if (message.rfind(field, 0) == 0) return flag + message.substr(std::string(field).size());
  return message;
}
}  // namespace

void KvTypeFlags::add_to(CLI::App& app) {
  const std::string names = kv_dtype_names();
  app.add_option("--kv-type", type,
                 "KV cache storage format for K and V: " + names +
                     "; int8 holds about twice the tokens of f16 in the same memory (kv-eval "
                     "measures its cost), f32 is the exact reference")
      ->capture_default_str();
  app.add_option("--kv-type-k,--cache-type-k", type_k,
                 "K storage format (overrides --kv-type); llama.cpp's -ctk");
  app.add_option("--kv-type-v,--cache-type-v", type_v,
                 "V storage format (overrides --kv-type); llama.cpp's -ctv");
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
  if (path == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    return s.str();
  }
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

SamplingParams llama_cpp_sampling_defaults() {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  return p;
}

void SamplingFlags::add_to(CLI::App& app) {
  SamplingParams& p = params;
  app.add_option("--temp", p.temperature, "sampling temperature; 0 = greedy")
      ->capture_default_str();
  app.add_option("--top-k", p.top_k, "keep the k most likely tokens; 0 = off")
      ->capture_default_str();
  app.add_option("--top-p", p.top_p, "nucleus sampling threshold; 1 = off")->capture_default_str();
  app.add_option("--min-p", p.min_p, "drop tokens below min_p * p(best); 0 = off")
      ->capture_default_str();
  app.add_option("--repeat-penalty", p.repetition_penalty, "repetition penalty; 1 = off")
      ->capture_default_str();
  app.add_option("--repeat-last-n", p.penalty_last_n,
                 "penalty window in tokens; -1 = whole context")
      ->capture_default_str();
  app.add_option("--presence-penalty", p.presence_penalty, "OpenAI presence penalty")
      ->capture_default_str();
  app.add_option("--frequency-penalty", p.frequency_penalty, "OpenAI frequency penalty")
      ->capture_default_str();
  app.add_option("-s,--seed", seed, "RNG seed; -1 = random (the seed used is printed)")
      ->capture_default_str();
  app.add_option("--stop", p.stop, "stop string (repeatable)");
  app.add_flag("--ignore-eos", p.ignore_eos, "keep generating after an end-of-generation token");
  add_grammar_flags(app);
}

SamplingParams SamplingFlags::to_params(int max_tokens) const {
  SamplingParams p = params;
  if (seed >= 0) p.seed = uint64_t(seed);
  if (max_tokens >= 0) p.max_tokens = max_tokens;
  if (auto err = p.validate()) throw std::invalid_argument(with_flag_names(*err));
  check_grammar();
  return p;
}

}  // namespace kvforge::cli
