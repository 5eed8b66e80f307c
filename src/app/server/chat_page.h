// The chat page kvforge serve answers at "/": chat_page.html, compiled in
// from the source tree (chat_page.cpp.in), so the binary needs no files.
#pragma once

#include <string_view>

namespace kvforge::server {

std::string_view chat_page_html();

}  // namespace kvforge::server
