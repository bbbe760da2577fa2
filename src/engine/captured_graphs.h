#pragma once
// CapturedGraphs: the engine's CUDA-graph emulation (SEMANTICS §0, §2.9). Capturing a FULL
// descriptor builds every attention group's metadata once, at the descriptor's padded sizes, with
// build_for_cudagraph_capture, and keeps a clone: the "graph". Its host scalars (num_reqs,
// num_actual_tokens, max_query_len, max_seq_len) stay frozen at their capture values while its
// arrays are views of the runner's persistent buffers, so a replay sees what the step wrote
// there in place — exactly what a real graph replay would read.

#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "attnrt/attention/attention_metadata_builder.h"
#include "attnrt/attention/forward_context.h"
#include "attnrt/runner/attn_metadata.h"
#include "attnrt/runner/batch_descriptor.h"

namespace attnrt {

// Which attention group (flattened in KV cache group order) serves each layer of a context.
class LayerGroupIndex {
 public:
  LayerGroupIndex() = default;
  // Throws Error naming a layer of the context that no attention group serves.
  LayerGroupIndex(const ForwardContext& forward_context,
                  std::span<const std::vector<AttentionGroup>> attn_groups);

  int num_attention_groups() const { return num_attention_groups_; }
  std::span<const int> group_of_layer() const { return group_of_layer_; }  // context order
  // The first layer of each attention group (its name finds the group's metadata).
  std::span<const std::string> first_layer() const { return first_layer_; }

 private:
  int num_attention_groups_ = 0;
  std::vector<int> group_of_layer_;
  std::vector<std::string> first_layer_;
};

class CapturedGraphs {
 public:
  // Keeps a clone of the metadata `built` holds for every attention group, as the graph of
  // `descriptor`. Throws Error if that descriptor was captured already.
  void capture(const BatchExecutionDescriptor& descriptor, const AttentionMetadataByLayer& built,
               const LayerGroupIndex& index);

  bool contains(const BatchExecutionDescriptor& descriptor) const {
    return graphs_.contains(descriptor);
  }
  std::size_t size() const { return graphs_.size(); }
  // The per-layer metadata (context order) of the graph of `descriptor`. Throws Error when it
  // was never captured: the dispatcher chose a graph the runner does not have.
  std::span<const AttentionMetadata* const> replay(
      const BatchExecutionDescriptor& descriptor) const;

 private:
  struct Graph {
    std::vector<std::unique_ptr<AttentionMetadata>> by_attention_group;
    std::vector<const AttentionMetadata*> by_layer;
  };
  std::unordered_map<BatchExecutionDescriptor, Graph> graphs_;
};

}  // namespace attnrt
