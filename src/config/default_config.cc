// The embedded default config: examples/tiny-yoco.json, compiled into the library by CMake
// (attnrt_embed_text) so that `attnrt plan` and `attnrt run` work without any file.

#include "attnrt/config/config_loader.h"

namespace attnrt {
namespace detail {
extern const std::string_view
    kDefaultConfigText;  // defined in the generated default_config_text.cc
}  // namespace detail

std::string_view default_config_text() {
  return detail::kDefaultConfigText;
}

EngineConfig default_config() {
  return load_config_text(default_config_text(), "<default>");
}

}  // namespace attnrt
