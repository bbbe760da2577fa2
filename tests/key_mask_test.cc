// The one mask rule (SEMANTICS §5.1) that both CPU kernels and the dense reference use.

#include "attention/key_mask.h"

#include <gtest/gtest.h>

namespace attnrt {
namespace {

AttentionShape shape_of(AttentionType type, int window = 0, int chunk = 0) {
  AttentionShape shape;
  shape.type = type;
  shape.sliding_window = window;
  shape.attention_chunk_size = chunk;
  return shape;
}

void expect_keys(KeyRange keys, int begin, int end) {
  EXPECT_EQ(keys.begin, begin);
  EXPECT_EQ(keys.end, end);
}

TEST(KeyMask, CausalSeesEveryEarlierKeyAndItself) {
  const KeyMask mask = key_mask_of(shape_of(AttentionType::full), true);
  EXPECT_EQ(mask.kind, MaskKind::causal);
  expect_keys(visible_keys(mask, 0, 10), 0, 1);
  expect_keys(visible_keys(mask, 6, 10), 0, 7);
}

TEST(KeyMask, SlidingWindowIncludesTheQuerysOwnPosition) {
  const KeyMask mask = key_mask_of(shape_of(AttentionType::sliding_window, 4), true);
  EXPECT_EQ(mask.kind, MaskKind::sliding_window);
  expect_keys(visible_keys(mask, 2, 10), 0, 3);  // the window starts before the sequence
  expect_keys(visible_keys(mask, 6, 10), 3, 7);  // positions 3..6: four tokens
}

TEST(KeyMask, ChunkedLocalSeesItsChunkUpToItself) {
  const KeyMask mask = key_mask_of(shape_of(AttentionType::chunked_local, 0, 4), true);
  EXPECT_EQ(mask.kind, MaskKind::chunked_local);
  expect_keys(visible_keys(mask, 3, 10), 0, 4);
  expect_keys(visible_keys(mask, 4, 10), 4, 5);  // the first token of the next chunk
  expect_keys(visible_keys(mask, 6, 10), 4, 7);
}

TEST(KeyMask, CrossAndNonCausalSeeEveryKey) {
  expect_keys(visible_keys(key_mask_of(shape_of(AttentionType::cross), true), 2, 10), 0, 10);
  const AttentionShape window = shape_of(AttentionType::sliding_window, 4);
  expect_keys(visible_keys(key_mask_of(window, false), 2, 10), 0, 10);
}

}  // namespace
}  // namespace attnrt
