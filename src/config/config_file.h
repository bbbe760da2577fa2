#pragma once
// Reads a config file's bytes with the checks a path from a user needs: a directory, a device, a
// missing or unreadable file and a file past limits::kMaxConfigBytes are each named as such,
// never reported as "invalid JSON" nor read forever (/dev/zero).

#include <string>

namespace attnrt::detail {

std::string read_config_file(const std::string& path);

}  // namespace attnrt::detail
