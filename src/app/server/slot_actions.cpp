#include "app/server/slot_actions.h"

#include <algorithm>
#include <charconv>

#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

// llama.cpp's fs_validate_filename, in short: a bare file name, never a path.
bool valid_slot_filename(const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c == ':') return false;
  return true;
}

std::string slot_filename(const std::string& body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("filename") || !j["filename"].is_string())
    throw ApiError(400, "'filename' is required: a string", "invalid_request_error", "filename");
  const std::string name = j["filename"];
  if (!valid_slot_filename(name))
    throw ApiError(400, "Invalid filename", "invalid_request_error", "filename");
  return name;
}

}  // namespace

nlohmann::json slot_action_response(EngineLoop& loop, const SlotFiles* files, int total_slots,
                                    const std::string& id, const std::string& action,
                                    const std::string& body) {
  const std::vector<EngineLoop::RunningRequest> running = loop.running();
  const size_t entries = std::max(running.size(), static_cast<size_t>(std::max(total_slots, 0)));
  size_t slot = 0;
  const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), slot);
  if (ec != std::errc() || end != id.data() + id.size() || slot >= entries)
    throw ApiError(400, "Invalid slot ID: '" + id + "' (GET /slots lists " +
                            std::to_string(entries) + " slots)");
  if (action == "save" || action == "restore") {
    const std::string filename = slot_filename(body);
    if (!files)
      throw ApiError(501,
                     "slot " + action +
                         " needs `kvforge serve --slot-save-path DIR` (the directory of the slot "
                         "files): without it the server keeps no KV per slot to save or restore. "
                         "The paged engine reuses an earlier prompt's blocks for any request with "
                         "the same prefix by itself (--kv-disk keeps them across restarts)",
                     "not_supported_error");
    return action == "save" ? files->save(loop, slot, filename)
                            : files->restore(loop, slot, filename);
  }
  if (action != "erase")
    throw ApiError(400, "Invalid action: '" + action + "' (save, restore or erase)",
                   "invalid_request_error", "action");
  if (slot < running.size())
    throw ApiError(409,
                   "slot " + id + " is processing request " + std::to_string(running[slot].id) +
                       "; erase it once it is idle (its blocks then belong to no slot)",
                   "invalid_request_error");
  return {{"id_slot", slot}, {"n_erased", 0}};
}

}  // namespace kvforge::server
