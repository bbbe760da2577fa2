#include "config_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "attnrt/config/config_limits.h"
#include "attnrt/core/printable.h"
#include "core/fail.h"

namespace attnrt::detail {
namespace {

// A regular file or a pipe (`attnrt plan <(gen-config)`) holds a config; nothing else does.
void check_file_kind(const std::string& path, const std::string& shown) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    fail("{}: cannot open the config file ({})", shown, std::strerror(errno));
  }
  if (S_ISDIR(info.st_mode)) {
    fail("{}: is a directory; give the path of a config file", shown);
  }
  if (!S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode)) {
    fail("{}: is not a regular file (a device or socket); give the path of a config file", shown);
  }
}

// Opening a FIFO blocks until a writer appears; O_NONBLOCK opens at once (a FIFO nobody writes
// then reads as empty), and blocking reads are restored for a writer that is still producing.
std::FILE* open_for_reading(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return nullptr;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
    ::close(fd);
    return nullptr;
  }
  std::FILE* file = ::fdopen(fd, "rb");
  if (file == nullptr) ::close(fd);
  return file;
}

}  // namespace

std::string read_config_file(const std::string& path) {
  const std::string shown = printable(path);
  if (path.empty()) fail("the config path is empty; give the path of a config file");
  check_file_kind(path, shown);
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(open_for_reading(path), &std::fclose);
  if (!file) fail("{}: cannot open the config file ({})", shown, std::strerror(errno));
  std::string text;
  char chunk[1 << 16];
  while (true) {
    const std::size_t read = std::fread(chunk, 1, sizeof chunk, file.get());
    text.append(chunk, read);
    if (text.size() > limits::kMaxConfigBytes) {
      fail("{}: larger than {} MiB; a config file is far smaller", shown,
           limits::kMaxConfigBytes >> 20);
    }
    if (read < sizeof chunk) break;
  }
  if (std::ferror(file.get())) {
    fail("{}: cannot read the config file ({})", shown, std::strerror(errno));
  }
  if (text.empty()) fail("{}: the config file is empty", shown);
  return text;
}

}  // namespace attnrt::detail
