// Feeds each framing case (cases.py, passed on stdin as "name\0bytes\0...")
// to Boost.Beast's request parser as a server would: header_limit 8 KiB, then
// the body; prints whether Beast refused the request or accepted it (and what
// it left on the connection for a next request).
// Build: g++ -std=c++20 -O1 beast_probe.cpp -o beast_probe (Boost >= 1.81 headers)
#include <boost/beast/http.hpp>
#include <iostream>
#include <iterator>
#include <string>

namespace http = boost::beast::http;

int main() {
  const std::string all((std::istreambuf_iterator<char>(std::cin)), {});
  size_t at = 0;
  while (at < all.size()) {
    const size_t name_end = all.find('\0', at);
    const std::string name = all.substr(at, name_end - at);
    const size_t bytes_end = all.find('\0', name_end + 1);
    const std::string bytes = all.substr(name_end + 1, bytes_end - name_end - 1);
    at = bytes_end + 1;
    http::request_parser<http::string_body> p;
    p.header_limit(8 * 1024);
    p.body_limit(1 << 20);
    p.eager(true);
    boost::beast::error_code ec;
    size_t used = 0;
    while (!p.is_done() && !ec && used < bytes.size()) {
      const size_t n = p.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
      if (n == 0 && !ec) break;  // needs more than there is
      used += n;
    }
    if (!ec && !p.is_done()) ec = http::error::partial_message;
    std::cout << name << "\t"
              << (ec ? "refused (" + ec.message() + ")"
                     : "ACCEPTED, " + std::to_string(bytes.size() - used) + " bytes left over")
              << "\n";
  }
}
