#include "app/cli/llama_compat.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

namespace kvforge::cli {

std::vector<std::string> spell_llama_flags(int argc, char** argv) {
  static const std::map<std::string, std::string> kLongForm = {
      {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},  {"-fa", "--flash-attn"},
      {"-ngl", "--n-gpu-layers"}, {"-sys", "--system-prompt"}, {"-np", "--parallel"},
  };
  std::vector<std::string> out(argv, argv + argc);
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i] == "--") break;
    if (auto it = kLongForm.find(out[i]); it != kLongForm.end()) out[i] = it->second;
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
