// Names and descriptions of state layers' mixers (SEMANTICS §4.4).

#include "attnrt/config/state_layer.h"

#include <fmt/format.h>

namespace attnrt {
namespace {

std::string dims_text(const Mamba1Dims& d) {
  return fmt::format("intermediate {}, state {}, conv {}", d.intermediate_size, d.state_size,
                     d.conv_kernel);
}

std::string dims_text(const Mamba2Dims& d) {
  return fmt::format("intermediate {}, n_groups {}, {} heads x {}, state {}, conv {}",
                     d.intermediate_size, d.n_groups, d.num_heads, d.head_dim, d.state_size,
                     d.conv_kernel);
}

std::string dims_text(const GatedDeltaNetDims& d) {
  return fmt::format("{} key heads x {}, {} value heads x {}, conv {}", d.num_k_heads, d.head_k_dim,
                     d.num_v_heads, d.head_v_dim, d.conv_kernel);
}

std::string dims_text(const ShortConvDims& d) {
  return fmt::format("intermediate {}, conv {}", d.intermediate_size, d.conv_kernel);
}

}  // namespace

std::string_view state_mixer_name(StateMixer mixer) {
  return kStateMixerNames.at(static_cast<std::size_t>(mixer));
}

std::string StateLayerConfig::describe() const {
  const std::string dims_part = std::visit([](const auto& d) { return dims_text(d); }, dims);
  if (mixer() == StateMixer::short_conv) {
    return fmt::format("{}: {}; conv {}", state_mixer_name(mixer()), dims_part,
                       dtype_name(dtypes.conv));
  }
  return fmt::format(
      "{}: {}; conv {}, {} {}", state_mixer_name(mixer()), dims_part, dtype_name(dtypes.conv),
      mixer() == StateMixer::gated_delta_net ? "recurrent" : "SSM", dtype_name(dtypes.ssm));
}

}  // namespace attnrt
