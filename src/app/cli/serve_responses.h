// The response store of `kvforge serve` (app/server/response_store.h): its
// bounds (--responses-max, --responses-max-bytes) and, with --kv-disk DIR,
// its file in DIR (app/server/response_store_file.h): read at start (a file
// that cannot be read stops the server with its name and the problem),
// written when the server stops.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "app/server/response_store.h"
#include "model/model.h"

namespace kvforge::cli {

struct ResponseStoreFlags {
  server::ResponseStoreLimits limits;
  void add_to(CLI::App& app);
};

class ServedResponses {
 public:
  // Throws std::runtime_error naming the file when it cannot be read.
  ServedResponses(const ResponseStoreFlags& flags, const std::string& kv_disk_dir,
                  const Model& model);
  // Writes the store when it has a file; a failure is a warning on stderr.
  void save() const;
  // One line for the start banner: the bounds and where the store is kept.
  std::string describe() const;

  std::shared_ptr<server::ResponseStore> store;

 private:
  std::filesystem::path file_;  // empty: in memory only
  std::string fingerprint_;
};

}  // namespace kvforge::cli
