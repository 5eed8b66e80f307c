#include "app/cli/llama_compat.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <utility>

namespace kvforge::cli {

namespace {

// The subcommand of a command line: its first argument that is not a flag.
std::string subcommand_of(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i)
    if (!args[i].empty() && args[i][0] != '-') return args[i];
  return "";
}

bool is_one_of(const std::string& arg, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (arg == n) return true;
  return false;
}

// llama.cpp flags with no kvforge spelling on `command`: true to drop `arg`
// (with a note saying why it changes nothing); throws std::invalid_argument
// naming the flag and what to use instead; false when `arg` is none of them.
bool drop_llama_only_flag(const std::string& command, const std::string& arg) {
  const bool chat = command == "chat";
  if (is_one_of(arg,
                {"-cnv", "--conversation", "-i", "--interactive", "-if", "--interactive-first"})) {
    if (chat) return true;  // chat is the conversation
    throw std::invalid_argument(arg + ": kvforge " + command +
                                " does not converse; for a conversation use `kvforge chat`");
  }
  if (is_one_of(arg, {"-no-cnv", "--no-conversation", "-st", "--single-turn"})) {
    if (chat)
      throw std::invalid_argument(arg +
                                  ": kvforge chat is always a conversation; to generate once "
                                  "from a prompt use `kvforge run -p TEXT`");
    return true;  // the other commands never converse
  }
  if (is_one_of(arg, {"-cb", "--cont-batching"})) {
    std::fprintf(stderr, "note: %s ignored: kvforge always batches continuously\n", arg.c_str());
    return true;
  }
  if (is_one_of(arg, {"-nocb", "--no-cont-batching"}))
    throw std::invalid_argument(arg +
                                ": kvforge always batches continuously; --max-seqs 1 runs one "
                                "sequence at a time");
  if (arg == "--no-context-shift") return true;  // the default: generation ends at -c
  if (arg == "--context-shift" && command != "run" && command != "chat" && command != "serve")
    throw std::invalid_argument(
        "--context-shift: only kvforge run, chat and serve shift the KV cache");
  if (is_one_of(arg, {"-hf", "-hfr", "--hf-repo", "-hff", "--hf-file", "-mu", "--model-url"}))
    throw std::invalid_argument(arg +
                                ": kvforge does not download models; download the GGUF file "
                                "(e.g. `huggingface-cli download REPO FILE.gguf`) and pass "
                                "-m FILE.gguf");
  return false;
}

}  // namespace

std::vector<std::string> spell_llama_flags(int argc, char** argv) {
  static const std::map<std::string, std::string> kLongForm = {
      {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},  {"-fa", "--flash-attn"},
      {"-ngl", "--n-gpu-layers"}, {"-sys", "--system-prompt"}, {"-np", "--parallel"},
  };
  const std::vector<std::string> in(argv, argv + argc);
  const std::string command = subcommand_of(in);
  // llama.cpp's reverse prompt ends generation at that text outside interactive mode: a stop
  // string. Elsewhere -r keeps kvforge's meaning (--repetitions of the benches).
  const bool reverse_prompt_is_stop = command == "run" || command == "chat";
  std::vector<std::string> out;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string& a = in[i];
    if (a == "--") {
      out.insert(out.end(), in.begin() + long(i), in.end());
      break;
    }
    if (i > 0 && drop_llama_only_flag(command, a)) continue;
    if (reverse_prompt_is_stop && (a == "-r" || a == "--reverse-prompt")) {
      out.push_back("--stop");
    } else if (auto it = kLongForm.find(a); it != kLongForm.end()) {
      out.push_back(it->second);
    } else {
      out.push_back(a);
    }
  }
  return out;
}

void LlamaLoadFlags::add_to(CLI::App& app) {
  app_ = &app;
  app.add_option("--n-gpu-layers,--gpu-layers", n_gpu_layers,
                 "llama.cpp's -ngl: accepted and ignored (kvforge runs on the CPU)");
  app.add_option("--flash-attn", flash_attn,
                 "llama.cpp's -fa [on|off|auto]: accepted and ignored (attention always streams "
                 "over the KV cache)")
      ->expected(0, 1);
  app.add_flag("--mlock", mlock, "keep the model's pages in RAM (mlockall), as llama.cpp");
  app.add_flag("--no-mmap", no_mmap,
               "llama.cpp's --no-mmap: accepted and ignored (kvforge always maps the file)");
}

void LlamaLoadFlags::print_notes() const {
  if (!app_) return;
  if (app_->count("--n-gpu-layers") > 0)
    std::fprintf(stderr, "note: -ngl %d ignored: kvforge runs every layer on the CPU\n",
                 n_gpu_layers);
  if (app_->count("--flash-attn") > 0)
    std::fprintf(stderr,
                 "note: -fa ignored: kvforge's attention already streams over the KV cache "
                 "block by block (online softmax), the memory behaviour flash attention gives\n");
  if (no_mmap)
    std::fprintf(stderr,
                 "note: --no-mmap ignored: kvforge maps the GGUF file read-only; the page cache "
                 "holds the weights (use --mlock to pin them)\n");
}

void LlamaLoadFlags::lock_memory() const {
  if (!mlock) return;
  if (mlockall(MCL_CURRENT) != 0)
    std::fprintf(stderr,
                 "warning: --mlock: mlockall failed (%s); the model may be paged out. Raise "
                 "the limit with `ulimit -l unlimited` or run with CAP_IPC_LOCK\n",
                 std::strerror(errno));
}

std::optional<KvDtype> kv_dtype_from_user_name(const std::string& name) {
  // llama.cpp's KV type names for kvforge's nearest formats, and how they differ.
  struct LlamaKvName {
    const char* name;
    KvDtype dtype;
    const char* note;
    bool noted;  // each note once: the format is read more than once per command
  };
  static LlamaKvName llama_names[] = {
      {"q8_0", KvDtype::Int8,
       "note: KV type q8_0 is kvforge's int8: one f16 scale per head of each token "
       "rather than per 32 values, about the same bytes\n",
       false},
      {"q4_0", KvDtype::Q4,
       "note: KV type q4_0 is kvforge's q4: 32 values per group as q4_0, with an f16 "
       "offset besides the step (affine, as q4_1), 20 bytes a group instead of 18\n",
       false},
  };
  for (LlamaKvName& n : llama_names) {
    if (name != n.name) continue;
    if (!std::exchange(n.noted, true)) std::fputs(n.note, stderr);
    return n.dtype;
  }
  return kv_dtype_from_name(name);
}

}  // namespace kvforge::cli
