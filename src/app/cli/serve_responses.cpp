#include "app/cli/serve_responses.h"

#include <cstdio>
#include <stdexcept>

#include "app/cli/cli_common.h"
#include "app/cli/flag_checks.h"
#include "app/server/response_store_file.h"
#include "model/model_fingerprint.h"

namespace kvforge::cli {

void ResponseStoreFlags::add_to(CLI::App& app) {
  app.add_option("--responses-max", limits.max_count,
                 "Responses API: stored responses kept (least recently used dropped first; "
                 "0 = store none)")
      ->capture_default_str();
  app.add_option("--responses-max-bytes", limits.max_bytes,
                 "Responses API: bytes of stored responses kept (conversations and their "
                 "token ids)")
      ->check(at_least(1))
      ->capture_default_str();
}

ServedResponses::ServedResponses(const ResponseStoreFlags& flags, const std::string& kv_disk_dir,
                                 const Model& model)
    : store(std::make_shared<server::ResponseStore>(flags.limits)) {
  if (kv_disk_dir.empty()) return;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(model_fingerprint(model)));
  fingerprint_ = hex;
  std::error_code ec;
  std::filesystem::create_directories(kv_disk_dir, ec);
  file_ = server::response_store_path(kv_disk_dir, fingerprint_);
  try {
    server::load_response_store(file_, fingerprint_, *store);
  } catch (const server::ResponseStoreFileError& e) {
    throw std::runtime_error(std::string("the stored responses: ") + e.what());
  }
}

void ServedResponses::save() const {
  if (file_.empty()) return;
  try {
    server::save_response_store(file_, fingerprint_, *store);
  } catch (const server::ResponseStoreFileError& e) {
    std::fprintf(stderr, "kvforge serve: warning: the stored responses were not saved: %s\n",
                 e.what());
  }
}

std::string ServedResponses::describe() const {
  std::string out = "responses: up to " + std::to_string(store->limits().max_count) + " stored (" +
                    human_bytes(static_cast<double>(store->limits().max_bytes)) + ")";
  if (!file_.empty())
    out += ", " + std::to_string(store->size()) + " restored from " + file_.string();
  return out;
}

}  // namespace kvforge::cli
