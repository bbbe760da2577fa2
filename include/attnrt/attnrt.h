#pragma once
// attnrt: everything an embedder uses, in one include. Each header can also be included on its
// own; this one is a convenience for `#include <attnrt/attnrt.h>`. Link attnrt::attnrt (CMake) or
// `pkg-config --libs attnrt`; build as C++20.
//
// Not included here: the message helpers core/nearest_name.h and core/printable.h. The CLI's,
// benchmarks' and tests' helpers (the run workload, the dense check, machine probes, the SIMD
// target switch) and the engine's private parts are not installed: they live in src/.

#include "attnrt/version.h"

// core
#include "attnrt/core/buffer.h"
#include "attnrt/core/checked_math.h"
#include "attnrt/core/device.h"
#include "attnrt/core/dtype.h"
#include "attnrt/core/error.h"
#include "attnrt/core/tensor.h"

// config: the JSON config, Hugging Face import, vLLM engine arguments, device budgets
#include "attnrt/config/config_limits.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/config/device_budget.h"
#include "attnrt/config/engine_args.h"
#include "attnrt/config/engine_config.h"
#include "attnrt/config/hf_import.h"
#include "attnrt/config/hf_weights.h"
#include "attnrt/config/model_source.h"

// kv: specs, layouts, planning, views and allocation
#include "attnrt/config/kv_cache_layout.h"
#include "attnrt/kv/block_copy.h"
#include "attnrt/kv/kernel_block_geometry.h"
#include "attnrt/kv/kv_cache_capacity.h"
#include "attnrt/kv/kv_cache_config.h"
#include "attnrt/kv/kv_cache_planner.h"
#include "attnrt/kv/kv_cache_spec.h"
#include "attnrt/kv/kv_cache_views.h"

// attention: layers, backends' interface, metadata
#include "attnrt/attention/attention_backend.h"
#include "attnrt/attention/attention_layer.h"
#include "attnrt/attention/attention_metadata_builder.h"
#include "attnrt/attention/backend_profile.h"
#include "attnrt/attention/backend_registry.h"
#include "attnrt/attention/common_attention_metadata.h"
#include "attnrt/attention/forward_context.h"
#include "attnrt/attention/kernel_block_size.h"
#include "attnrt/config/cg_support.h"

// backends: the built-in executable backends
#include "attnrt/backends/builtin_backends.h"
#include "attnrt/backends/cpu_flash/cpu_flash_backend.h"
#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"
#include "attnrt/backends/fast_prefill_backend.h"

// runner: attn_utils, the attention plan, CUDA-graph modes and dispatch, per-step inputs
#include "attnrt/config/cudagraph_mode.h"
#include "attnrt/runner/attention_group.h"
#include "attnrt/runner/attention_plan.h"
#include "attnrt/runner/attn_metadata.h"
#include "attnrt/runner/attn_utils.h"
#include "attnrt/runner/batch_descriptor.h"
#include "attnrt/runner/block_tables.h"
#include "attnrt/runner/capture_sizes.h"
#include "attnrt/runner/cudagraph_manager.h"
#include "attnrt/runner/cudagraph_resolution.h"
#include "attnrt/runner/fast_prefill_helper.h"
#include "attnrt/runner/input_batch.h"
#include "attnrt/runner/kernel_block_sizes.h"
#include "attnrt/runner/kv_cache_plan.h"
#include "attnrt/runner/kv_sharing.h"
#include "attnrt/runner/replay_check.h"

// engine: the step loop around the built-in model
#include "attnrt/engine/block_pool.h"
#include "attnrt/engine/engine.h"
#include "attnrt/engine/engine_stats.h"
#include "attnrt/engine/kv_block_manager.h"
#include "attnrt/engine/model_math.h"
#include "attnrt/engine/request.h"
#include "attnrt/engine/scheduler.h"
#include "attnrt/engine/scheduler_output.h"
#include "attnrt/engine/tiny_transformer.h"
