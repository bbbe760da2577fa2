"""The reference page's functions under their names agree with the plan."""

import attnrt
from conftest import EXAMPLES

EXAMPLE_DIR = EXAMPLES[0].parent


def test_init_attn_backend_groups_match_the_plan():
    config = attnrt.load_config(EXAMPLE_DIR / "gemma-3n-e2b.json")
    plan = attnrt.plan(config)
    backends = attnrt.init_attn_backend(config)
    groups = [[(g.backend, g.layer_names, g.kv_cache_group_id) for g in lst]
              for lst in backends.attn_groups]
    planned = [[(g.backend, g.layer_names, g.kv_cache_group_id) for g in lst]
               for lst in plan.attention_groups]
    assert groups == planned
    support, backend = attnrt.get_attn_cg_support(backends, config)
    assert support == plan.cudagraph.min_cg_support
    assert backend == plan.cudagraph.min_cg_attn_backend
    assert attnrt.get_query_lens_mismatch_unsupported_backend(backends) is None
    assert attnrt.get_varlen_cudagraph_unsupported_backend(backends, config, max_query_len=1) is None


def test_fast_prefill_layers_with_keyword_arguments():
    config = attnrt.load_config(EXAMPLE_DIR / "tiny-yoco.json", kv_sharing_fast_prefill=True)
    eligible = attnrt.get_kv_sharing_fast_prefill_eligible_layers(vllm_config=config)
    assert eligible == sorted(attnrt.plan(config).fast_prefill.eligible_layers)
    assert eligible  # the trailing KV-sharing layers
    assert attnrt.get_kv_sharing_fast_prefill_eligible_layers(
        config, draft_layer_names=eligible) == []
