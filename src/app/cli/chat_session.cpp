#include "app/cli/chat_session.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kvforge::cli {

std::string session_kv_dir(const std::string& session_file) { return session_file + ".kv"; }

std::optional<ChatSession> load_chat_session(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (!std::filesystem::exists(path)) return std::nullopt;
    throw std::runtime_error(path + ": cannot read the session");
  }
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("kvforge_session", 0) != 1)
    throw std::runtime_error(path + ": not a kvforge chat session (\"kvforge_session\": 1)");
  if (!j.contains("messages") || !j["messages"].is_array())
    throw std::runtime_error(path + ": \"messages\" must be an array of chat messages");
  ChatSession s;
  s.messages = j["messages"];
  if (j.contains("tokens")) {
    if (!j["tokens"].is_array()) throw std::runtime_error(path + ": \"tokens\" must be an array");
    for (const auto& t : j["tokens"]) {
      if (!t.is_number_integer()) throw std::runtime_error(path + ": a token id is not an integer");
      s.tokens.push_back(t.get<int32_t>());
    }
  }
  return s;
}

void save_chat_session(const std::string& path, const ChatSession& session) {
  const nlohmann::ordered_json j = {
      {"kvforge_session", 1}, {"messages", session.messages}, {"tokens", session.tokens}};
  const std::string tmp = path + ".tmp-" + std::to_string(long(getpid()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(1) << "\n";
    if (!out.flush()) {
      std::remove(tmp.c_str());
      throw std::runtime_error(path + ": cannot write the session (" + tmp + ")");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot write the session (rename failed)");
  }
}

}  // namespace kvforge::cli
