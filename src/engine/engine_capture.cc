// CUDA-graph emulation at start-up (SEMANTICS §0, §2.9): every FULL descriptor's metadata is
// built once at its padded sizes with build_for_cudagraph_capture and kept as a clone. PIECEWISE
// descriptors need nothing kept: their steps pad and build metadata normally.

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "attnrt/engine/engine.h"
#include "captured_graphs.h"
#include "core/fail.h"
#include "engine_impl.h"
#include "engine_work.h"

namespace attnrt {
namespace {

// Requests and the longest query of the batch a FULL descriptor is captured with: its padded
// request count, the tokens spread evenly (the first requests take the remainder).
int capture_num_reqs(const BatchExecutionDescriptor& descriptor) {
  return std::max(1, descriptor.num_reqs.value_or(1));
}

int capture_max_query_len(const BatchExecutionDescriptor& descriptor) {
  if (descriptor.uniform_token_count) return *descriptor.uniform_token_count;
  const int num_reqs = capture_num_reqs(descriptor);
  return (descriptor.num_tokens + num_reqs - 1) / num_reqs;
}

// The fast-prefill wrapper rewrites a prefill batch's query layout into its own buffer when it
// builds; a FULL graph would freeze that layout, so only decode-shaped captures can serve it.
void check_fast_prefill_graphs(const CudaGraphManager& graphs,
                               const std::set<std::string>& fast_prefill_layers, int max_num_seqs) {
  if (fast_prefill_layers.empty()) return;
  for (const BatchExecutionDescriptor& d : graphs.capture_descriptors(CUDAGraphMode::FULL)) {
    if (capture_max_query_len(d) <= 1) continue;
    fail(
        "engine: cudagraph mode {} captures FULL graphs of prefill batches ({} tokens over {} "
        "requests), but the "
        "fast-prefill layers ({}, ...) rewrite their metadata to the sampled rows when it is "
        "built, which a FULL graph would freeze; use FULL_AND_PIECEWISE or FULL_DECODE_ONLY, "
        "turn fast prefill off (--fast-prefill off, cache.kv_sharing_fast_prefill), or keep "
        "capture sizes within scheduler.max_num_seqs ({})",
        graphs.mode().name(), d.num_tokens, capture_num_reqs(d), *fast_prefill_layers.begin(),
        max_num_seqs);
  }
}

}  // namespace

LayerGroupIndex::LayerGroupIndex(const ForwardContext& forward_context,
                                 std::span<const std::vector<AttentionGroup>> attn_groups) {
  std::map<std::string, int, std::less<>> group_of;
  for (const std::vector<AttentionGroup>& groups : attn_groups) {
    for (const AttentionGroup& group : groups) {
      for (const std::string& layer : group.layer_names)
        group_of.emplace(layer, num_attention_groups_);
      first_layer_.push_back(group.layer_names.empty() ? std::string() : group.layer_names.front());
      ++num_attention_groups_;
    }
  }
  for (const AttentionLayer& layer : forward_context.layers()) {
    const auto it = group_of.find(layer.name());
    if (it == group_of.end()) {
      fail("engine: layer {} belongs to no attention group, so no metadata would reach it",
           layer.name());
    }
    group_of_layer_.push_back(it->second);
  }
}

void CapturedGraphs::capture(const BatchExecutionDescriptor& descriptor,
                             const AttentionMetadataByLayer& built, const LayerGroupIndex& index) {
  if (graphs_.contains(descriptor)) {
    fail("CapturedGraphs: {} was captured already", descriptor.describe());
  }
  Graph graph;
  for (const std::string& layer : index.first_layer()) {
    const AttentionMetadata* metadata = layer.empty() ? nullptr : built.find(layer);
    graph.by_attention_group.push_back(metadata ? metadata->clone() : nullptr);
  }
  for (const int group : index.group_of_layer()) {
    graph.by_layer.push_back(graph.by_attention_group[static_cast<std::size_t>(group)].get());
  }
  graphs_.emplace(descriptor, std::move(graph));
}

std::span<const AttentionMetadata* const> CapturedGraphs::replay(
    const BatchExecutionDescriptor& descriptor) const {
  const auto it = graphs_.find(descriptor);
  if (it == graphs_.end()) {
    fail("CapturedGraphs: no graph was captured for {}; dispatch chose a graph the runner lacks",
         descriptor.describe());
  }
  return it->second.by_layer;
}

void Engine::Impl::capture_graphs() {
  check_fast_prefill_graphs(graphs_, plan_.fast_prefill_layers, config_.scheduler.max_num_seqs);
  for (const BatchExecutionDescriptor& descriptor :
       graphs_.capture_descriptors(CUDAGraphMode::FULL)) {
    lay_out_capture_batch(descriptor);
    map_slots(all_padding_);  // a capture writes no K/V
    AttentionMetadataInputs inputs = make_attention_metadata_inputs(batch_, block_tables_);
    inputs.for_cudagraph_capture = true;
    build_attn_metadata(plan_.backends.attn_groups, inputs, metadata_);
    captured_->capture(descriptor, metadata_, *layer_groups_);
  }
  graphs_.mark_captured();
}

// Requests at the end of max_model_len, so the frozen max_seq_len bounds every replay's.
void Engine::Impl::lay_out_capture_batch(const BatchExecutionDescriptor& descriptor) {
  const int num_reqs = capture_num_reqs(descriptor);
  const int base = descriptor.uniform_token_count.value_or(descriptor.num_tokens / num_reqs);
  const int remainder =
      descriptor.uniform_token_count ? 0 : descriptor.num_tokens - base * num_reqs;
  scheduled_.clear();
  for (int r = 0; r < num_reqs; ++r) {
    const int query_len = base + (r < remainder ? 1 : 0);
    const int computed = std::max(0, config_.model.max_model_len - query_len);
    scheduled_.push_back(ScheduledRequest{r, computed, query_len, 0, 0});
  }
  batch_.prepare(scheduled_);
  batch_.pad_to(descriptor);
  std::fill_n(token_ids_.begin(), batch_.num_tokens_padded(), 0);
}

}  // namespace attnrt
