#pragma once
// Dense, unpaged attention of one request, for tests: plain per-request arrays of Q, K and V (no
// blocks, no cache layout, no dtype) in, softmax(scale · q·k) · v out, in double precision. Paged
// backends are checked against it, so it shares no code with any of them.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace attnrt {

// Which keys a query at absolute position p sees; key j sits at position j.
struct DenseAttentionMask {
  enum class Kind { causal, sliding_window, chunked_local, bidirectional };
  Kind kind = Kind::causal;
  int size = 0;  // sliding_window: tokens in the window, the query's own included; chunked: chunk

  static DenseAttentionMask causal() { return {Kind::causal, 0}; }
  static DenseAttentionMask sliding_window(int window) { return {Kind::sliding_window, window}; }
  static DenseAttentionMask chunked_local(int chunk) { return {Kind::chunked_local, chunk}; }
  static DenseAttentionMask bidirectional() { return {Kind::bidirectional, 0}; }

  bool visible(int query_position, int key_position) const {
    switch (kind) {
      case Kind::causal:
        return key_position <= query_position;
      case Kind::sliding_window:
        return key_position <= query_position && key_position > query_position - size;
      case Kind::chunked_local:
        return key_position <= query_position && key_position / size == query_position / size;
      case Kind::bidirectional:
        return true;
    }
    return false;
  }
};

struct DenseAttentionShape {
  int num_heads = 1;
  int num_kv_heads = 1;  // query head h reads KV head h / (num_heads / num_kv_heads)
  int head_size = 1;
  int head_size_v = 1;
  double scale = 0.0;  // 0: 1 / sqrt(head_size)
};

// One request, row-major: q [num_queries][num_heads][head_size], k [num_keys][num_kv_heads]
// [head_size], v [num_keys][num_kv_heads][head_size_v]. Query i is at absolute position
// first_query_position + i (its cached context length plus i for self-attention).
struct DenseAttentionRequest {
  std::vector<float> q;
  std::vector<float> k;
  std::vector<float> v;
  int num_queries = 0;
  int num_keys = 0;
  int first_query_position = 0;
};

// [num_queries][num_heads][head_size_v]; a query that sees no key gets zeros.
inline std::vector<float> dense_attention(const DenseAttentionShape& shape,
                                          const DenseAttentionRequest& request,
                                          const DenseAttentionMask& mask) {
  const int group = shape.num_heads / shape.num_kv_heads;
  const double scale = shape.scale != 0.0 ? shape.scale : 1.0 / std::sqrt(shape.head_size);
  std::vector<float> out(static_cast<std::size_t>(request.num_queries) * shape.num_heads *
                         shape.head_size_v);
  std::vector<double> weights(static_cast<std::size_t>(request.num_keys));
  for (int i = 0; i < request.num_queries; ++i) {
    const int position = request.first_query_position + i;
    for (int h = 0; h < shape.num_heads; ++h) {
      const int kv_head = h / group;
      const float* q =
          &request.q[(static_cast<std::size_t>(i) * shape.num_heads + h) * shape.head_size];
      double max_score = -INFINITY;
      for (int j = 0; j < request.num_keys; ++j) {
        if (!mask.visible(position, j)) continue;
        const float* k =
            &request
                 .k[(static_cast<std::size_t>(j) * shape.num_kv_heads + kv_head) * shape.head_size];
        double dot = 0.0;
        for (int d = 0; d < shape.head_size; ++d) dot += static_cast<double>(q[d]) * k[d];
        weights[j] = scale * dot;
        max_score = std::max(max_score, weights[j]);
      }
      double total = 0.0;
      std::vector<double> acc(static_cast<std::size_t>(shape.head_size_v), 0.0);
      for (int j = 0; j < request.num_keys; ++j) {
        if (!mask.visible(position, j)) continue;
        const double p = std::exp(weights[j] - max_score);
        total += p;
        const float* v = &request.v[(static_cast<std::size_t>(j) * shape.num_kv_heads + kv_head) *
                                    shape.head_size_v];
        for (int d = 0; d < shape.head_size_v; ++d) acc[d] += p * v[d];
      }
      float* o = &out[(static_cast<std::size_t>(i) * shape.num_heads + h) * shape.head_size_v];
      for (int d = 0; d < shape.head_size_v; ++d) {
        o[d] = total > 0.0 ? static_cast<float>(acc[d] / total) : 0.f;
      }
    }
  }
  return out;
}

}  // namespace attnrt
