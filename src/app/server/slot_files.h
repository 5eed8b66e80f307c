// llama-server's slot save and restore under `serve --slot-save-path DIR`
// (POST /slots/{id}?action=save|restore, body {"filename"}; the id and the
// bare file name are checked first, slot_actions.h):
//   save: the whole prefix blocks of what the slot entry last held
//     (EngineLoop::slot_tokens) that the prefix cache still has, written to
//     DIR/filename (slot_file.h) → {"id_slot", "filename", "n_saved" (tokens),
//     "n_written" (bytes), "timings": {"save_ms"}};
//   restore: DIR/filename read (a regular file, never through a link),
//     checked (format, this server's model and KV format, each block's token
//     ids and checksum) and its blocks put in the prefix cache, so the next
//     request starting with those tokens reuses them → {"id_slot",
//     "filename", "n_restored", "n_read", "timings": {"restore_ms"}}.
// Both run on the engine loop's thread between two steps. Errors: 404 for a
// missing file, 400 naming what is wrong with a file, 501 where the engine
// cannot move blocks (recurrent or windowed models, tensor parallelism).
// On static slots (`serve --static`, whose slots then keep their K/V between
// requests) save reads the free slot holding the entry's tokens and restore
// fills a free slot, which the next request starting with those tokens takes.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "app/server/engine_loop.h"

namespace kvforge::server {

class SlotFiles {
 public:
  // `model`: the name files are labelled with (the GGUF file name). Creates
  // `dir` if needed; throws std::runtime_error when it cannot be a directory.
  SlotFiles(std::filesystem::path dir, std::string model);

  // Throw ApiError.
  nlohmann::json save(EngineLoop& loop, size_t slot, const std::string& filename) const;
  nlohmann::json restore(EngineLoop& loop, size_t slot, const std::string& filename) const;

 private:
  std::filesystem::path dir_;
  std::string model_;
};

}  // namespace kvforge::server
