#include "app/server/response_store_file.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <system_error>

namespace kvforge::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int kVersion = 1;

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw ResponseStoreFileError(file.string() + ": " + what);
}

ordered_json entry_json(const ResponseStore::Entry& e) {
  const StoredResponse& r = *e.second;
  return {{"id", e.first},
          {"object", r.object},
          {"instructions", r.instructions},
          {"messages", r.messages},
          {"prompt_text", r.prompt_text},
          {"prompt_ids", r.prompt_ids},
          {"output_ids", r.output_ids},
          {"output_text", r.output_text}};
}

// One entry of the file; nlohmann's type errors become the caller's message.
std::pair<std::string, std::shared_ptr<StoredResponse>> entry_of(const ordered_json& j) {
  auto r = std::make_shared<StoredResponse>();
  r->object = j.at("object");
  r->instructions = j.at("instructions");
  r->messages = j.at("messages");
  r->prompt_text = j.at("prompt_text").get<std::string>();
  r->prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
  r->output_ids = j.at("output_ids").get<std::vector<int32_t>>();
  r->output_text = j.at("output_text").get<std::string>();
  if (!r->object.is_object() || !r->messages.is_array())
    throw std::invalid_argument("an entry's object or messages is of the wrong type");
  return {j.at("id").get<std::string>(), std::move(r)};
}

}  // namespace

std::filesystem::path response_store_path(const std::filesystem::path& dir,
                                          const std::string& fingerprint) {
  return dir / ("responses-" + fingerprint + ".json");
}

void load_response_store(const std::filesystem::path& file, const std::string& fingerprint,
                         ResponseStore& store) {
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(file, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return;
  if (status.type() != std::filesystem::file_type::regular) fail(file, "is not a regular file");
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) fail(file, "cannot be read");
  const std::string hint = " (move the file away or delete it to start with no stored responses)";
  try {
    const ordered_json doc = ordered_json::parse(text.str());
    if (!doc.is_object() || doc.value("kvforge_response_store", 0) != kVersion)
      fail(file, "is not a kvforge response store of version " + std::to_string(kVersion) + hint);
    if (doc.value("model", "") != fingerprint)
      fail(file, "holds the responses of another model (" + doc.value("model", "?") + ")" + hint);
    for (const ordered_json& j : doc.at("responses")) {
      auto [id, response] = entry_of(j);
      store.put(id, std::move(response));
    }
  } catch (const json::exception& e) {
    fail(file, std::string("is corrupt: ") + e.what() + hint);
  } catch (const std::invalid_argument& e) {
    fail(file, std::string("is corrupt: ") + e.what() + hint);
  }
}

void save_response_store(const std::filesystem::path& file, const std::string& fingerprint,
                         const ResponseStore& store) {
  ordered_json doc = {{"kvforge_response_store", kVersion},
                      {"model", fingerprint},
                      {"responses", ordered_json::array()}};
  for (const ResponseStore::Entry& e : store.entries()) doc["responses"].push_back(entry_json(e));
  const std::filesystem::path tmp =
      file.string() + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << doc.dump(-1, ' ', false, json::error_handler_t::replace);
    out.close();
    if (!out) fail(tmp, "cannot be written");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    fail(file, "cannot be replaced: " + why);
  }
}

}  // namespace kvforge::server
