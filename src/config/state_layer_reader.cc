// The `state` object of a state layer: one mixer's dimensions, each read with its JSON path.

#include "state_layer_reader.h"

#include "core/fail.h"
#include "json_reader.h"

namespace attnrt::detail {
namespace {

// The mixers a layer type may hold, and the default one.
bool mixer_fits_type(StateMixer mixer, AttentionType type) {
  if (type == AttentionType::linear_attention) return mixer == StateMixer::gated_delta_net;
  return mixer != StateMixer::gated_delta_net;
}

StateMixer default_mixer(AttentionType type) {
  return type == AttentionType::linear_attention ? StateMixer::gated_delta_net : StateMixer::mamba2;
}

DType read_state_dtype(const json& value, const std::string& path) {
  const std::string name = read_string(value, path);
  try {
    return parse_dtype(name);
  } catch (const Error& error) {
    fail("{}: {}", path, error.what());
  }
}

void read_int64(ObjectReader& reader, std::string_view key, std::int64_t& out) {
  if (const json* value = reader.field(key)) out = read_int(*value, reader.path_of(key));
}

void read_dims(ObjectReader& reader, Mamba1Dims& dims) {
  read_int64(reader, "intermediate_size", dims.intermediate_size);
  reader.read("state_size", dims.state_size);
  reader.read("conv_kernel", dims.conv_kernel);
}

void read_dims(ObjectReader& reader, Mamba2Dims& dims) {
  read_int64(reader, "intermediate_size", dims.intermediate_size);
  reader.read("n_groups", dims.n_groups);
  reader.read("num_heads", dims.num_heads);
  reader.read("head_dim", dims.head_dim);
  reader.read("state_size", dims.state_size);
  reader.read("conv_kernel", dims.conv_kernel);
}

void read_dims(ObjectReader& reader, GatedDeltaNetDims& dims) {
  reader.read("num_k_heads", dims.num_k_heads);
  reader.read("num_v_heads", dims.num_v_heads);
  reader.read("head_k_dim", dims.head_k_dim);
  reader.read("head_v_dim", dims.head_v_dim);
  reader.read("conv_kernel", dims.conv_kernel);
}

void read_dims(ObjectReader& reader, ShortConvDims& dims) {
  read_int64(reader, "intermediate_size", dims.intermediate_size);
  reader.read("conv_kernel", dims.conv_kernel);
}

}  // namespace

StateLayerConfig read_state_layer(const json& value, const std::string& path, AttentionType type) {
  ObjectReader reader(value, path);
  StateMixer mixer = default_mixer(type);
  reader.read_choice("mixer", mixer, "a state mixer", kStateMixerNames, kAllStateMixers);
  if (!mixer_fits_type(mixer, type)) {
    fail("{}: a {} layer cannot hold a {} mixer; use {}", reader.path_of("mixer"),
         attention_type_name(type), state_mixer_name(mixer),
         type == AttentionType::linear_attention ? "gated_delta_net"
                                                 : "mamba1, mamba2 or short_conv");
  }
  StateLayerConfig state;
  switch (mixer) {
    case StateMixer::mamba1:
      state.dims = Mamba1Dims{};
      break;
    case StateMixer::mamba2:
      state.dims = Mamba2Dims{};
      break;
    case StateMixer::gated_delta_net:
      state.dims = GatedDeltaNetDims{};
      break;
    case StateMixer::short_conv:
      state.dims = ShortConvDims{};
      break;
  }
  std::visit([&reader](auto& dims) { read_dims(reader, dims); }, state.dims);
  if (const json* dtype = reader.field("conv_dtype")) {
    state.dtypes.conv = read_state_dtype(*dtype, reader.path_of("conv_dtype"));
  }
  if (const json* dtype = reader.field("ssm_dtype")) {
    state.dtypes.ssm = read_state_dtype(*dtype, reader.path_of("ssm_dtype"));
  }
  reader.reject_unknown_keys();
  return state;
}

}  // namespace attnrt::detail
