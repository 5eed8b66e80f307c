// Pieces shared by the subcommands of the `kvforge` executable.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "app/cli/llama_compat.h"
#include "app/structured/constraint_spec.h"
#include "app/tokenizer/tokenizer.h"
#include "core/comm/communicator.h"
#include "core/formats/kv_format.h"
#include "kvforge/sampling_params.h"
#include "model/model.h"

namespace kvforge::cli {

// models/<default> inside the source tree the binary was built from.
std::filesystem::path default_model_path();
// `path` if given, else the default model; throws with a hint when it is missing.
std::filesystem::path resolve_model_path(const std::string& path);
// The machine's hardware threads (-t -1).
int hardware_threads();
// Threads when -t is not given: the hardware threads, shared evenly among
// the ranks mpirun started on this machine (at least 1 each).
int default_threads();
// The file's bytes; "-" reads standard input, as llama.cpp's -f -.
std::string read_text_file(const std::filesystem::path& path);

// -m/--model and -t/--threads, declared once for every command that runs a
// model: a command's flag struct derives from this one. add_model_flag also
// declares llama.cpp's loading flags (-ngl, -fa, --mlock, --no-mmap).
struct ModelFlags {
  std::string model;  // empty: the default model
  int threads = default_threads();
  int tp = 0;             // tensor-parallel ranks; 0 = the processes mpirun started
  double tp_timeout = 5;  // seconds a rank waits for another in a collective, once all loaded
  LlamaLoadFlags loading;

  void add_model_flag(CLI::App& app,
                      const std::string& help = "GGUF model (default: the model in models/)");
  // -t N, N >= 1; -t -1 = every hardware thread (llama.cpp's meaning); more
  // threads than the machine has warns. Anything else is refused, naming -t.
  void add_threads_flag(CLI::App& app, const std::string& help = "threads");
  // --tp N and --tp-timeout, for the commands that run tensor-parallel under mpirun.
  void add_tp_flag(CLI::App& app);
};

// The processes of this run (main() sets it: MPI's world under mpirun, else
// one process). Only rank 0 writes to stdout and stderr; main() silences
// the others.
Communicator& world();
void set_world(Communicator* world);

// The communicator a model of `tp` tensor-parallel ranks loads with
// (0 = as many as the world has): nullptr for one process, else world().
// Throws std::invalid_argument when tp cannot be had: more than one rank
// without MPI built in, without mpirun, or not the number of processes
// mpirun started.
Communicator* tensor_parallel_world(int tp);

// What a command that runs a model starts from: the resolved file, the model
// and its tokenizer.
struct LoadedModel {
  std::filesystem::path path;
  std::unique_ptr<Model> model;
  Tokenizer tokenizer;
};
// ", tensor parallel over N ranks (K KV heads each)", or "" on one process.
std::string describe_tp(const Model& model);
// The KV heads of `c`'s layers: "4", or with Gemma 4's windowed layers
// having their own count "4 full, 8 windowed".
std::string kv_heads_text(const ModelConfig& c);
// Once every rank has loaded its share: a rank that waits longer than
// `seconds` for another in a collective ends the run naming it.
void start_tp_deadline(Communicator& comm, double seconds);
// Rank 0's `tokens` on every rank (a size, then the ids), without a
// deadline: rank 0 may take long to read and tokenize them.
void broadcast_tokens(Communicator& comm, std::vector<int32_t>& tokens);

// Refuses a tokenizer with more tokens than the model has embedding rows and
// logits (tokenizer.ggml.tokens against <arch>.vocab_size / token_embd):
// a prompt holding one of the extra ids would be refused on every request.
// Fewer tokens than rows (padding) is fine.
void check_tokenizer_fits(const Tokenizer& tokenizer, const Model& model);

// Resolves `model_flag` (resolve_model_path) and loads the model and its
// tokenizer (check_tokenizer_fits); with `comm`, this rank's share of it (Model::load).
LoadedModel load_model(const std::string& model_flag, Communicator* comm = nullptr);
// The same for -m (this rank's share under mpirun, checked against --tp), then --mlock.
LoadedModel load_model(const ModelFlags& flags);

// Thrown on ranks other than 0 of a tensor-parallel run once they have
// followed rank 0's engine to its end (make_paged_engine): they have no
// output of their own, so main() ends them quietly with status 0.
struct FollowerFinished {};

// -n/--n-predict of run, chat and batch: N >= 1 tokens, or -1 = until done
// (an end-of-generation token or the full context). 0 and other negatives
// are refused with the flag's name.
void add_n_predict_flag(CLI::App& app, int& n, const std::string& help);
// -c/--ctx-size and -b/--batch-size: llama.cpp's names for a context length
// and for the tokens of one forward pass, the default shown in --help.
void add_ctx_size_flag(CLI::App& app, int& ctx, const std::string& help);
void add_batch_size_flag(CLI::App& app, int& batch, const std::string& help);
// The warning (beyond the training context) or error (beyond what the
// model's RoPE scaling covers) for a context of `ctx` tokens set by `flag`.
void check_context_size(const ModelConfig& config, int ctx, const char* flag);
std::string human_bytes(double bytes);

// llama.cpp's sampling defaults: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05.
SamplingParams llama_cpp_sampling_defaults();

// Sampling flags shared by run, chat and batch: declared once, driving
// parsing, help and defaults. They set the request's SamplingParams directly,
// from llama.cpp's defaults; only the seed has a CLI form of its own.
struct SamplingFlags {
  SamplingParams params = llama_cpp_sampling_defaults();
  int64_t seed = -1;  // -1: a fresh seed (SamplingParams::seed unset)

  void add_to(CLI::App& app);
  void add_grammar_flags(CLI::App& app);
  // The constraint the flags ask for (files read), or nullopt. Throws
  // std::invalid_argument for conflicting flags or an unreadable file.
  std::optional<ConstraintSpec> constraint() const;
  void check_grammar() const;
  // Output constraint (grammar_flags.cpp): --grammar TEXT|@FILE,
  // --grammar-file FILE (llama.cpp's), -j/--json-schema TEXT|@FILE.
  std::string grammar, grammar_file, json_schema;

  // Throws std::invalid_argument with the validation message, naming the
  // flag; a grammar or schema that does not compile is refused here too.
  SamplingParams to_params(int max_tokens) const;
  // Binds the constraint, if any, to the model's vocabulary.
  void bind_grammar(SamplingParams& out, const Tokenizer& tokenizer) const;
};

// The KV storage format of every command that owns a cache, unless --kv-type
// says otherwise: f16, as llama.cpp's cache. Half the bytes of f32 per token
// (twice the tokens in the same --kv-memory) at an error far below the
// weights' own rounding; int8 halves it again (kv-eval measures the cost).
inline constexpr const char* kDefaultKvType = "f16";

// KV cache storage flags shared by every command that owns a cache:
// --kv-type sets both K and V, --kv-type-k / --kv-type-v override one side
// (llama.cpp's -ctk / -ctv, with its q8_0 and q4_0 names).
struct KvTypeFlags {
  std::string type = kDefaultKvType;
  std::string type_k, type_v;

  void add_to(CLI::App& app);
  // Throws std::invalid_argument naming the flag and the accepted names.
  KvFormat format() const;
  std::string describe() const;  // "f16" or "K int8, V f16"
};

}  // namespace kvforge::cli
