// A program outside attnrt's tree that embeds it: load a config, plan attention, allocate the KV
// cache and bind every layer's view. Built by examples/consumer/CMakeLists.txt against an
// installed attnrt, or by hand with pkg-config:
//   g++ -std=c++20 main.cc $(pkg-config --cflags --libs attnrt)

#include <attnrt/attnrt.h>

#include <cstdio>
#include <exception>
#include <string_view>

namespace {

// Two full-attention layers (8 query heads, 2 KV heads, head size 64) with a 4 MiB KV cache.
constexpr std::string_view kConfig = R"({
  "model": {
    "name": "consumer-2-layer",
    "max_model_len": 512,
    "layers": [
      {"repeat": 2, "layers": [{"type": "full", "num_heads": 8, "num_kv_heads": 2, "head_size": 64}]}
    ]
  },
  "cache": {"block_size": 16, "dtype": "bfloat16", "memory": "4MiB"}
})";

}  // namespace

int main() {
  try {
    const attnrt::EngineConfig config = attnrt::load_config_text(kConfig, "<consumer>");
    const attnrt::BackendRegistry registry = attnrt::backend_registry_for(config);
    attnrt::AttentionPlan plan = attnrt::plan_attention(config, registry);

    attnrt::KVCacheAllocation cache = attnrt::allocate_kv_cache(
        plan.kv.kv_cache_config, attnrt::Device::cpu(), plan.backends.kernel_block_sizes);
    attnrt::bind_kv_caches(cache.views, plan.kv.forward_context, plan.kv.kv_cache_config, config,
                           plan.backends.attn_groups);

    int bound = 0;
    for (const attnrt::AttentionLayer& layer : plan.kv.forward_context.layers()) {
      if (layer.has_kv_cache()) ++bound;
    }
    const std::string backend =
        plan.backends.attn_groups.empty() || plan.backends.attn_groups.front().empty()
            ? std::string("none")
            : plan.backends.attn_groups.front().front().backend->name();
    std::printf(
        "attnrt %.*s: %zu layers, %d bound, %lld blocks of %d tokens, %llu KiB, backend %s\n",
        static_cast<int>(attnrt::version().size()), attnrt::version().data(),
        plan.kv.forward_context.size(), bound,
        static_cast<long long>(plan.kv.kv_cache_config.num_blocks), config.cache.block_size,
        static_cast<unsigned long long>(plan.kv.kv_cache_config.backing_bytes() >> 10),
        backend.c_str());
    return bound == static_cast<int>(plan.kv.forward_context.size()) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attnrt_consumer: %s\n", e.what());
    return 1;
  }
}
