#include "core/byte_codec.h"

namespace kvforge {

std::string describe_short_read(const ShortRead& s) {
  return std::string(s.what) + " needs " + std::to_string(s.needed) + " bytes at offset " +
         std::to_string(s.offset) + ", " + std::to_string(s.left) + " left";
}

}  // namespace kvforge
