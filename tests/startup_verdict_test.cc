// vLLM's start-up refusals as a verdict (AttentionPlan::startup): the plan is always made, its
// JSON says whether vLLM would start and why not, and an engine refuses on the first reason.

#include "attnrt/runner/startup_verdict.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attnrt/backends/builtin_backends.h"
#include "attnrt/config/config_loader.h"
#include "attnrt/engine/engine.h"
#include "attnrt/runner/attention_plan.h"
#include "attnrt/runner/plan_json.h"
#include "error_of.h"

namespace attnrt {
namespace {

using testing::error_of;

// One full layer of 2 KV heads of 64 (512 bf16 bytes per token and layer, K and V), 16-token
// blocks: `memory` bytes hold memory / 8192 blocks.
EngineConfig small(int max_model_len, std::int64_t memory) {
  return load_config_text(R"({"model": {"hidden_size": 256, "vocab_size": 512, "max_model_len": )" +
                              std::to_string(max_model_len) +
                              R"(, "layers": [{"num_heads": 4, "num_kv_heads": 2,
                              "head_size": 64}]}, "cache": {"memory": )" +
                              std::to_string(memory) + "}}",
                          "small");
}

AttentionPlan plan_of(const EngineConfig& config) {
  return plan_attention(config, backend_registry_for(config));
}

TEST(StartupVerdict, APlanThatFitsStarts) {
  const EngineConfig config = small(1024, 1 << 20);
  const AttentionPlan plan = plan_of(config);
  EXPECT_TRUE(plan.startup.starts());
  EXPECT_TRUE(plan.startup.reasons.empty());
  EXPECT_NO_THROW(require_startup(plan.startup));
  const nlohmann::json json = nlohmann::json::parse(plan_json_text(config, plan));
  EXPECT_EQ(json["startup"],
            (nlohmann::json{{"starts", true}, {"reasons", nlohmann::json::array()}}));
}

TEST(StartupVerdict, AMaxLengthRequestThatDoesNotFitIsVllmsRefusalAfterTheWholePlan) {
  // 1 MiB = 128 blocks = 2048 tokens; one request of 4096 tokens needs 2 MiB.
  const EngineConfig config = small(4096, 1 << 20);
  const AttentionPlan plan = plan_of(config);
  EXPECT_EQ(plan.kv.kv_cache_config.num_blocks, 128);  // the plan is whole
  EXPECT_FALSE(plan.backends.attn_groups.empty());
  ASSERT_EQ(plan.startup.reasons.size(), 1u);
  EXPECT_EQ(plan.startup.reasons[0], plan.kv.capacity.message());
  EXPECT_NE(plan.startup.reasons[0].find("the estimated maximum model length is 2048"),
            std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(plan_json_text(config, plan));
  EXPECT_FALSE(json["startup"]["starts"].get<bool>());
  EXPECT_EQ(json["startup"]["reasons"][0], plan.startup.reasons[0]);
  EXPECT_EQ(error_of([&] { require_startup(plan.startup); }), plan.startup.reasons[0]);
  // An engine starts only where vLLM would.
  EXPECT_EQ(error_of([&] { Engine engine(config); }), plan.startup.reasons[0]);
  EXPECT_NO_THROW(Engine engine(small(2048, 1 << 20)));
}

}  // namespace
}  // namespace attnrt
