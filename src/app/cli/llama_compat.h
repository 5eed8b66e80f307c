// llama.cpp's spellings, accepted where kvforge means the same thing, so a
// command line copied from llama-cli, llama-server or llama-bench runs here.
// Flags that have no meaning on a CPU engine (-ngl, -fa, --no-mmap) are
// accepted with a note saying why they change nothing.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/formats/kv_format.h"

namespace kvforge::cli {

// argv with llama.cpp's multi-letter single-dash flags (-ctk, -ctv, -fa,
// -ngl, -sys, -np) spelled as their long forms, which the commands declare:
// CLI11 would read "-fa" as "-f a". On run and chat, -r (the reverse prompt)
// is --stop. llama.cpp's flags kvforge has no use for are dropped where they
// change nothing (-cnv on chat, -no-cnv elsewhere, -cb) and otherwise refused
// with std::invalid_argument naming what to use (-cnv/-i: kvforge chat; -hf:
// download the file and pass -m). Nothing after "--" is touched.
std::vector<std::string> spell_llama_flags(int argc, char** argv);

// The model-loading flags of llama.cpp's common parameters: -ngl, -fa,
// --mlock, --no-mmap. Declared by ModelFlags on every command that loads a model.
struct LlamaLoadFlags {
  bool mlock = false;
  bool no_mmap = false;
  int n_gpu_layers = 0;
  std::string flash_attn;

  void add_to(CLI::App& app);
  // After parsing: one "note:" line on stderr per flag given that kvforge ignores.
  void print_notes() const;
  // After the model is mapped: --mlock pins its pages (and everything mapped
  // so far) in RAM, as llama.cpp's --mlock; a warning when the OS refuses.
  void lock_memory() const;

 private:
  CLI::App* app_ = nullptr;
};

// A KV type name as kvforge or llama.cpp spells it (q8_0 → int8, q4_0 → q4,
// with a note on stderr on how kvforge's format differs); nullopt if neither.
std::optional<KvDtype> kv_dtype_from_user_name(const std::string& name);

}  // namespace kvforge::cli
