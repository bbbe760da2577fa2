// One case of `attnrt bench attention`: its caches, its batch, and its timing.

#include "bench/bench_attention_cases.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "attnrt/backends/cpu_reference/cpu_reference_backend.h"
#include "attnrt/kv/kv_cache_views.h"
#include "core/fail.h"

namespace attnrt::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The reference is timed on at most this many keys (decode) or tokens (prefill): its cost per
// KV byte or per FLOP does not depend on the size, and full cases would take minutes.
constexpr int kReferenceDecodeKeys = 1024;
constexpr int kReferencePrefillTokens = 256;

int ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

KVCacheSpec spec_of(const AttentionBenchCase& c) {
  return KVCacheSpec::full(kBenchBlockSize, c.num_kv_heads, c.head_size, c.kv_dtype);
}

std::int64_t blocks_per_layer(const AttentionBenchCase& c) {
  return static_cast<std::int64_t>(c.batch) * ceil_div(c.length, kBenchBlockSize);
}

// `num_layers` layer views in LBNHC (layer-outermost: each layer its own region) over the arena.
std::vector<Tensor> layer_views(const KVArena& arena, const KVCacheSpec& spec,
                                std::int64_t num_blocks, int num_layers) {
  const std::array<std::int64_t, 5> bytes =
      compute_layout_strides(spec, num_blocks, num_layers, KVCacheLayout::LBNHC);
  const auto element = static_cast<std::int64_t>(dtype_size(spec.dtype));
  std::vector<Tensor> views;
  views.reserve(static_cast<std::size_t>(num_layers));
  for (int l = 0; l < num_layers; ++l) {
    views.emplace_back(
        arena.buffer(), spec.dtype,
        std::vector<std::int64_t>{num_blocks, spec.num_kv_heads, spec.block_size,
                                  spec.state_content_size_bytes() / element},
        std::vector<std::int64_t>{bytes[kv_axis::B] / element, bytes[kv_axis::H] / element,
                                  bytes[kv_axis::N] / element, 1},
        l * bytes[kv_axis::L]);
  }
  return views;
}

// The step arrays of `batch` requests with the same query and key lengths, their blocks drawn
// from a shuffled pool so that consecutive blocks of a request are far apart, as in a real cache.
class BenchBatch {
 public:
  BenchBatch(AttentionShape shape, int batch, int query_len, int kv_len, std::mt19937& rng)
      : shape_(shape), num_reqs_(batch), cols_(ceil_div(kv_len, kBenchBlockSize)) {
    std::vector<std::int32_t> pool(static_cast<std::size_t>(batch) * cols_);
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    block_table_ = pool;
    for (int r = 0; r <= batch; ++r) query_start_loc_.push_back(r * query_len);
    seq_lens_.assign(static_cast<std::size_t>(batch), kv_len);
    slot_mapping_.assign(static_cast<std::size_t>(batch) * query_len, PAD_SLOT_ID);
    std::uniform_real_distribution<float> uniform(-1.f, 1.f);
    query_.resize(slot_mapping_.size() * shape.num_heads * shape.head_size);
    for (float& x : query_) x = uniform(rng);
    output_.resize(slot_mapping_.size() * shape.num_heads * shape.head_size_v);
  }

  CommonAttentionMetadata common() const {
    CommonAttentionMetadata c;
    c.query_start_loc = c.query_start_loc_cpu = query_start_loc_;
    c.seq_lens = c.seq_lens_cpu = seq_lens_;
    c.num_reqs = num_reqs_;
    c.num_actual_tokens = query_start_loc_.back();
    c.max_query_len = query_start_loc_[1];
    c.max_seq_len = seq_lens_.front();
    c.block_table = {block_table_.data(), num_reqs_, cols_, cols_};
    c.slot_mapping = slot_mapping_;
    return c;
  }

  void forward(const AttentionBackend& backend, const Tensor& view,
               const AttentionMetadata& metadata) {
    const int tokens = query_start_loc_.back();
    const ActivationView query{query_.data(),
                               tokens,
                               shape_.num_heads,
                               shape_.head_size,
                               static_cast<std::int64_t>(shape_.num_heads) * shape_.head_size,
                               shape_.head_size};
    const ActivationView output{output_.data(),
                                tokens,
                                shape_.num_heads,
                                shape_.head_size_v,
                                static_cast<std::int64_t>(shape_.num_heads) * shape_.head_size_v,
                                shape_.head_size_v};
    backend.forward({shape_, query, output, view, metadata});
  }

 private:
  AttentionShape shape_;
  int num_reqs_;
  int cols_;
  std::vector<std::int32_t> query_start_loc_, seq_lens_, block_table_;
  std::vector<std::int64_t> slot_mapping_;
  std::vector<float> query_, output_;
};

double seconds_of(const std::function<void()>& body) {
  const auto start = Clock::now();
  body();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Median seconds of `body` over at least `min_iterations` runs and `min_seconds`, after one
// warm-up run.
double median_seconds(const std::function<void()>& body, int min_iterations, double min_seconds) {
  body();
  std::vector<double> times;
  double total = 0.0;
  while (static_cast<int>(times.size()) < min_iterations || total < min_seconds) {
    times.push_back(seconds_of(body));
    total += times.back();
  }
  return median_of(times);
}

// CPU_FLASH's rate on the fixture (median of at least 5 decode or 2 prefill iterations and 0.5 s).
double median_rate(AttentionBenchFixture& fixture, const AttentionBenchCase& c) {
  const double seconds =
      median_seconds([&] { fixture.run(); }, c.kind == BenchKind::decode ? 5 : 2, 0.5);
  return fixture.work_per_iteration() / seconds / 1e9;
}

AttentionShape shape_of(const AttentionBenchCase& c) {
  return AttentionShape{
      AttentionType::full, c.num_q_heads, c.num_kv_heads, c.head_size, c.head_size, 0, 0, 0.f};
}

// Seconds of one CPU_REFERENCE forward over `batch` (the reference needs no workspace).
double reference_seconds(BenchBatch& batch, const Tensor& view) {
  const CpuReferenceBackend reference;
  AttentionMetadata metadata;
  metadata.common = batch.common();
  return seconds_of([&] { batch.forward(reference, view, metadata); });
}

// FLOPs of causal attention over `tokens` fresh tokens: 4·q·k·d per head, halved by the mask.
double causal_flops(int tokens, int head_size, int num_heads) {
  return 2.0 * tokens * static_cast<double>(tokens) * head_size * num_heads;
}

}  // namespace

double median_of(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

struct AttentionBenchFixture::State {
  AttentionBenchCase bench_case;
  std::vector<Tensor> views;
  std::mt19937 rng{1234};
  BenchBatch batch;
  const CpuFlashBackend& flash;
  std::unique_ptr<AttentionMetadataBuilder> builder;
  const AttentionMetadata* metadata = nullptr;
  EngineConfig config;

  State(const AttentionBenchCase& c, const KVArena& arena, bool hot, const CpuFlashBackend& f)
      : bench_case(c),
        views(layer_views(arena, spec_of(c), blocks_per_layer(c), decode_layers(c, hot))),
        batch(shape_of(c), c.batch, c.kind == BenchKind::decode ? 1 : c.length, c.length, rng),
        flash(f) {
    builder = flash.create_builder(spec_of(c), {"bench"}, config, Device::cpu());
    metadata = &builder->build(0, batch.common());
  }
};

AttentionBenchFixture::AttentionBenchFixture(const AttentionBenchCase& bench_case,
                                             const KVArena& arena, bool hot,
                                             const CpuFlashBackend& flash) {
  if (arena.dtype() != bench_case.kv_dtype ||
      arena.buffer()->size() < arena_bytes(bench_case, hot)) {
    fail("bench case needs an arena of {} bytes of {}", arena_bytes(bench_case, hot),
         dtype_name(bench_case.kv_dtype));
  }
  state_ = std::make_unique<State>(bench_case, arena, hot, flash);
}

AttentionBenchFixture::~AttentionBenchFixture() = default;

void AttentionBenchFixture::run() {
  for (const Tensor& view : state_->views) {
    state_->batch.forward(state_->flash, view, *state_->metadata);
  }
}

int AttentionBenchFixture::layers() const {
  return static_cast<int>(state_->views.size());
}

double AttentionBenchFixture::work_per_iteration() const {
  const AttentionBenchCase& c = state_->bench_case;
  if (c.kind == BenchKind::decode) {
    return static_cast<double>(kv_bytes_per_layer(c)) * layers();
  }
  return causal_flops(c.length, c.head_size, c.num_q_heads);
}

double AttentionBenchFixture::reference_rate() const {
  const AttentionBenchCase& c = state_->bench_case;
  std::mt19937 rng(4321);
  if (c.kind == BenchKind::decode) {
    AttentionBenchCase slice = c;
    slice.batch = 1;
    slice.length = std::min(c.length, kReferenceDecodeKeys);
    BenchBatch batch(shape_of(c), 1, 1, slice.length, rng);
    return static_cast<double>(kv_bytes_per_layer(slice)) /
           reference_seconds(batch, state_->views.front());
  }
  AttentionShape group = shape_of(c);
  group.num_kv_heads = 1;
  group.num_heads = c.num_q_heads / c.num_kv_heads;
  const int tokens = std::min(c.length, kReferencePrefillTokens);
  BenchBatch batch(group, 1, tokens, tokens, rng);
  return causal_flops(tokens, c.head_size, group.num_heads) /
         reference_seconds(batch, state_->views.front());
}

KVArena::KVArena(DType dtype, std::size_t bytes) : dtype_(dtype), buffer_(Buffer::allocate(bytes)) {
  // A pool of encoded values, then a cheap generator picking from it: gigabytes in about a second.
  const std::size_t element = dtype_size(dtype);
  constexpr std::size_t kPool = 4096;
  std::vector<std::byte> pool(kPool * element);
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  for (std::size_t i = 0; i < kPool; ++i) store_from_float(dtype, &pool[i * element], uniform(rng));
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  std::byte* data = buffer_->data();
  for (std::size_t at = 0; at + element <= bytes; at += element) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    std::memcpy(data + at, &pool[(state % kPool) * element], element);
  }
}

std::size_t kv_bytes_per_layer(const AttentionBenchCase& c) {
  return static_cast<std::size_t>(blocks_per_layer(c)) *
         static_cast<std::size_t>(spec_of(c).page_size_bytes());
}

PagedReadOrder paged_read_order(const AttentionBenchCase& c) {
  const KVCacheSpec spec = spec_of(c);
  return {.record_bytes = static_cast<int>(spec.state_content_size_bytes()),
          .records_per_row = c.num_kv_heads,
          .rows_per_page = kBenchBlockSize,
          .ways = kBenchPagedReadWays};
}

AttentionBenchCase warm_case(const AttentionBenchCase& c) {
  AttentionBenchCase warm = c;
  warm.batch = 1;
  warm.length = kWarmContext;
  return warm;
}

int decode_layers(const AttentionBenchCase& c, bool hot) {
  if (hot || c.kind == BenchKind::prefill) return 1;
  return std::max(1, ceil_div(kColdBytesPerIteration, kv_bytes_per_layer(c)));
}

std::size_t arena_bytes(const AttentionBenchCase& c, bool hot) {
  return kv_bytes_per_layer(c) * static_cast<std::size_t>(decode_layers(c, hot));
}

AttentionBenchResult measure_case(const AttentionBenchCase& c, const KVArena& arena, bool hot,
                                  const CpuFlashBackend& flash) {
  AttentionBenchFixture fixture(c, arena, hot, flash);
  AttentionBenchResult result{c};
  result.layers = fixture.layers();
  result.bytes_per_iteration = static_cast<double>(kv_bytes_per_layer(c)) * fixture.layers();
  result.rate = median_rate(fixture, c);
  result.reference_rate = fixture.reference_rate() / 1e9;
  return result;
}

double measure_warm_rate(const AttentionBenchCase& c, const KVArena& arena,
                         const CpuFlashBackend& flash) {
  const AttentionBenchCase warm = warm_case(c);
  AttentionBenchFixture fixture(warm, arena, /*hot=*/true, flash);
  return median_rate(fixture, warm);
}

double decode_flop_per_byte(const AttentionBenchCase& c, bool bf16_dot_products) {
  const double per_element = 2.0 * c.num_q_heads / c.num_kv_heads;
  const double per_byte = per_element / static_cast<double>(dtype_size(c.kv_dtype));
  return bf16_dot_products && c.kv_dtype == DType::bf16 ? per_byte / 2 : per_byte;
}

AttentionBenchResult measure_decode_case(const AttentionBenchCase& c, const KVArena& arena,
                                         bool hot, const CpuFlashBackend& flash,
                                         const DramReadProbe& probe, int threads,
                                         double fma_peak_gflops) {
  AttentionBenchFixture fixture(c, arena, hot, flash);
  AttentionBenchResult result{c};
  result.layers = fixture.layers();
  result.bytes_per_iteration = static_cast<double>(kv_bytes_per_layer(c)) * fixture.layers();
  fixture.run();  // warm-up: first touch, workspace
  std::vector<double> rates;
  std::vector<double> limits;
  std::vector<double> ratios;
  std::vector<double> paged_reads;
  std::vector<double> paged_ratios;
  std::vector<double> roofs;
  std::vector<double> roof_ratios;
  const PagedReadOrder order = paged_read_order(c);
  result.flop_per_byte = decode_flop_per_byte(c, flash.runs_bf16_dot_products());
  const double compute_roof = fma_peak_gflops / result.flop_per_byte;
  for (int round = 0; round < kDecodeRounds; ++round) {
    paged_reads.push_back(probe.measure_paged(order, threads, 1));
    limits.push_back(probe.measure(threads, 1));
    int iterations = 0;
    double seconds = 0.0;
    while (iterations == 0 || seconds < kRoundSeconds) {
      seconds += seconds_of([&] { fixture.run(); });
      ++iterations;
    }
    rates.push_back(fixture.work_per_iteration() * iterations / seconds / 1e9);
    ratios.push_back(rates.back() / limits.back());
    paged_ratios.push_back(rates.back() / paged_reads.back());
    roofs.push_back(std::min(limits.back(), compute_roof));
    roof_ratios.push_back(rates.back() / roofs.back());
  }
  result.rate = median_of(rates);
  result.limit = median_of(limits);
  result.ratio = median_of(ratios);
  result.paged_read = median_of(paged_reads);
  result.ratio_to_paged_read = median_of(paged_ratios);
  result.roofline = median_of(roofs);
  result.ratio_to_roofline = median_of(roof_ratios);
  result.reference_rate = fixture.reference_rate() / 1e9;
  return result;
}

}  // namespace attnrt::cli
