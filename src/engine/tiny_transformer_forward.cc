// TinyTransformer::forward: one step of the model over the engine's padded batch. Owning layers
// write their K/V through the slot mapping, then every layer runs its backend on its bound view.
// On a fast-prefill step (SEMANTICS §6.5) the layers before the trailing KV-sharing run see every
// row; the hidden states and positions of the logits rows are then gathered, the trailing layers
// run on those rows only, and the real ones are scattered back.

#include <algorithm>

#include "attnrt/engine/tiny_transformer.h"
#include "core/fail.h"
#include "tiny_transformer_impl.h"

namespace attnrt {
namespace {

bool uses_fast_prefill(const ModelStep& step, int first_fast_prefill_layer, int num_layers) {
  return !step.logits_indices_padded.empty() && first_fast_prefill_layer < num_layers;
}

void check_rows(std::span<const std::int32_t> rows, int num_tokens, std::string_view what) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= num_tokens) {
      fail("step: {} entry {} is row {}, outside the step's {} token rows", what, i, rows[i],
           num_tokens);
    }
  }
}

// Query rows [first, output.num_tokens) past the batch get zeros rather than stale values.
void zero_rows_past(const ActivationView& output, int first) {
  for (int t = std::max(first, 0); t < output.num_tokens; ++t) {
    std::fill_n(output.row(t, 0), output.num_heads * output.head_size, 0.f);
  }
}

}  // namespace

void TinyTransformer::Impl::check_step(const ModelStep& step) const {
  const int n = step.num_tokens;
  if (n < 0 || n > max_num_tokens_) {
    fail("step: {} token rows, but the model was sized for 0 to {} (max_num_tokens)", n,
         max_num_tokens_);
  }
  if (step.token_ids.size() < static_cast<std::size_t>(n) ||
      step.positions.size() < static_cast<std::size_t>(n)) {
    fail("step: {} token rows need as many token ids and positions, got {} and {}", n,
         step.token_ids.size(), step.positions.size());
  }
  for (int t = 0; t < n; ++t) {
    if (step.token_ids[t] < 0 || step.token_ids[t] >= vocab_size_) {
      fail("step: token row {} has id {}, outside the vocabulary of {} tokens", t,
           step.token_ids[t], vocab_size_);
    }
    if (step.positions[t] < 0) fail("step: token row {} has position {}", t, step.positions[t]);
  }
  if (step.metadata.size() != layers_.size()) {
    fail("step: {} attention metadata entries for a model of {} layers", step.metadata.size(),
         layers_.size());
  }
  if (step.logits_indices.size() > static_cast<std::size_t>(max_num_logits_)) {
    fail("step: {} logits rows, but the model keeps at most {} (max_num_seqs x (1 + drafts))",
         step.logits_indices.size(), max_num_logits_);
  }
  check_rows(step.logits_indices, n, "logits_indices");
  const bool fast = uses_fast_prefill(step, first_fast_prefill_layer_, num_layers());
  const auto num_padded = static_cast<int>(step.logits_indices_padded.size());
  if (fast) {
    if (num_padded > max_num_tokens_ || step.num_logits_indices < 0 ||
        step.num_logits_indices > num_padded) {
      fail("step: {} real of {} padded fast-prefill rows (capacity {})", step.num_logits_indices,
           num_padded, max_num_tokens_);
    }
    check_rows(step.logits_indices_padded, n, "logits_indices_padded");
  }
  for (int l = 0; l < num_layers(); ++l) {
    check_layer_metadata(step, l, fast && l >= first_fast_prefill_layer_ ? num_padded : n);
  }
}

void TinyTransformer::Impl::check_layer_metadata(const ModelStep& step, int layer, int rows) const {
  const std::string& name = forward_context_->layers()[layer].name();
  const AttentionMetadata* metadata = step.metadata[layer];
  if (metadata == nullptr) fail("step: layer {} has no attention metadata", name);
  const CommonAttentionMetadata& common = metadata->common;
  if (owns_kv(layer) && common.slot_mapping.size() < static_cast<std::size_t>(rows)) {
    fail("step: layer {} writes K/V of {} token rows, but its slot mapping has {} entries", name,
         rows, common.slot_mapping.size());
  }
  if (common.num_reqs < 0 ||
      common.query_start_loc.size() < static_cast<std::size_t>(common.num_reqs) + 1) {
    fail("step: layer {}'s metadata has query_start_loc of {} entries for {} requests", name,
         common.query_start_loc.size(), common.num_reqs);
  }
  if (common.query_start_loc[common.num_reqs] > rows) {
    fail(
        "step: layer {}'s metadata describes {} query tokens, but the layer runs on {} rows; "
        "fast-prefill layers need the metadata of the step's logits_indices_padded rows",
        name, common.query_start_loc[common.num_reqs], rows);
  }
}

void TinyTransformer::Impl::forward(const ModelStep& step) {
  check_step(step);
  const int n = step.num_tokens;
  const RowsView hidden{hidden_.data(), n, hidden_size_};
  embed(step.token_ids, hidden);
  const bool fast = uses_fast_prefill(step, first_fast_prefill_layer_, num_layers());
  const int last_full_layer = fast ? first_fast_prefill_layer_ : num_layers();
  for (int l = 0; l < last_full_layer; ++l) {
    run_layer(l, hidden, step.positions.first(n), *step.metadata[l]);
  }
  if (fast) run_fast_prefill_layers(step);
  compute_logits(step.logits_indices);
}

void TinyTransformer::Impl::run_layer(int layer, RowsView hidden,
                                      std::span<const std::int64_t> positions,
                                      const AttentionMetadata& metadata) {
  attention_inputs(layer, hidden, positions, acts_);
  const AttentionLayer& attention = forward_context_->layers()[layer];
  const AttentionBackend& backend = *attention.get_attn_backend();
  const AttentionShape& shape = layers_[layer].shape;
  const AttentionOperands operands = attention_operands(layer, acts_, hidden.num_rows);
  if (owns_kv(layer)) {
    backend.write_kv(
        {shape, operands.key, operands.value, metadata.common.slot_mapping, attention.kv_cache()});
  }
  // A KV-sharing layer's bound view is its target's: it reads the K/V the target wrote.
  backend.forward({shape, operands.query, operands.output, attention.kv_cache(), metadata});
  zero_rows_past(operands.output, metadata.common.query_start_loc[metadata.common.num_reqs]);
  attention_output_and_mlp(layer, hidden, acts_);
}

void TinyTransformer::Impl::run_fast_prefill_layers(const ModelStep& step) {
  const std::span<const std::int32_t> rows = step.logits_indices_padded;
  const auto num_padded = static_cast<int>(rows.size());
  const RowsView hidden{hidden_.data(), step.num_tokens, hidden_size_};
  const RowsView reduced{reduced_hidden_.data(), num_padded, hidden_size_};
  for (int j = 0; j < num_padded; ++j) {
    std::copy_n(hidden.row(rows[j]), hidden_size_, reduced.row(j));
    reduced_positions_[j] = step.positions[rows[j]];
  }
  const std::span<const std::int64_t> positions(reduced_positions_.data(), rows.size());
  for (int l = first_fast_prefill_layer_; l < num_layers(); ++l) {
    run_layer(l, reduced, positions, *step.metadata[l]);
  }
  // Rows past num_logits_indices repeat the last index (graph padding): only real ones go back.
  for (int j = 0; j < step.num_logits_indices; ++j) {
    std::copy_n(reduced.row(j), hidden_size_, hidden.row(rows[j]));
  }
}

void TinyTransformer::Impl::compute_logits(std::span<const std::int32_t> rows) {
  num_logits_ = rows.size();
  const auto num_rows = static_cast<int>(rows.size());
  const RowsView gathered{logits_hidden_.data(), num_rows, hidden_size_};
  for (int j = 0; j < num_rows; ++j) {
    std::copy_n(hidden_.data() + static_cast<std::size_t>(rows[j]) * hidden_size_, hidden_size_,
                gathered.row(j));
  }
  lm_head(gathered, RowsView{logits_.data(), num_rows, vocab_size_});
}

}  // namespace attnrt
