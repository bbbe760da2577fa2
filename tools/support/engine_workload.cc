// The seeded workload of `attnrt run` and the digest of its outputs.

#include "support/engine_workload.h"

#include "core/fail.h"

namespace attnrt {
namespace {

// SplitMix64: a tiny generator whose stream is the same on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [low, high] (the modulo bias is below 2^-40 for these ranges).
  int between(int low, int high) {
    const auto span = static_cast<std::uint64_t>(high - low) + 1;
    return low + static_cast<int>(next() % span);
  }

 private:
  std::uint64_t state_;
};

void check_range(const char* name, int low, int high, int least) {
  if (low < least || high < low) {
    fail("workload: {} {}:{} must be a range A:B with {} <= A <= B", name, low, high, least);
  }
}

}  // namespace

void check_workload_options(const WorkloadOptions& options, int max_model_len) {
  if (options.num_requests < 0) {
    fail("workload: --requests {} must not be negative", options.num_requests);
  }
  check_range("--prompt-len", options.min_prompt_len, options.max_prompt_len, 1);
  check_range("--output-len", options.min_output_len, options.max_output_len, 1);
  if (options.max_prompt_len >= max_model_len) {
    fail(
        "--prompt-len: prompts of up to {} tokens leave no room to generate within "
        "model.max_model_len {}; lower --prompt-len",
        options.max_prompt_len, max_model_len);
  }
  const std::int64_t longest =
      std::int64_t{options.max_prompt_len} + std::int64_t{options.max_output_len};
  if (longest > max_model_len) {
    fail(
        "--output-len: a prompt of {} tokens and an output of {} tokens make {}, more than "
        "model.max_model_len {}; lower --output-len or --prompt-len",
        options.max_prompt_len, options.max_output_len, longest, max_model_len);
  }
}

std::vector<WorkloadRequest> make_workload(const WorkloadOptions& options, int vocab_size,
                                           int max_model_len) {
  check_workload_options(options, max_model_len);
  if (vocab_size < 1) fail("workload: the model has no vocabulary (vocab_size {})", vocab_size);
  SplitMix64 random(options.seed);
  std::vector<WorkloadRequest> workload(static_cast<std::size_t>(options.num_requests));
  for (WorkloadRequest& request : workload) {
    const int prompt_len = random.between(options.min_prompt_len, options.max_prompt_len);
    request.max_tokens = random.between(options.min_output_len, options.max_output_len);
    request.prompt.resize(static_cast<std::size_t>(prompt_len));
    for (std::int32_t& token : request.prompt) token = random.between(0, vocab_size - 1);
  }
  return workload;
}

void submit(Engine& engine, std::span<const WorkloadRequest> workload) {
  for (const WorkloadRequest& request : workload) {
    engine.add_request(request.prompt, request.max_tokens);
  }
}

std::uint64_t output_digest(std::span<const RequestRecord> requests) {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  const auto mix = [&hash](std::uint32_t value) {
    for (int byte = 0; byte < 4; ++byte) {
      hash ^= (value >> (8 * byte)) & 0xFFu;
      hash *= 0x100000001B3ull;
    }
  };
  for (const RequestRecord& request : requests) {
    mix(static_cast<std::uint32_t>(request.output.size()));
    for (const std::int32_t token : request.output) mix(static_cast<std::uint32_t>(token));
  }
  return hash;
}

}  // namespace attnrt
