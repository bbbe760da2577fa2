"""attnrt.load_config and attnrt.plan: the plan dict equals `attnrt plan --json`."""

import json
import subprocess

import pytest

import attnrt
from conftest import EXAMPLES, HF_FIXTURES


def cli_json(cli, *args):
    out = subprocess.run([cli, "plan", *args, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_plan_dict_equals_cli_json_on_every_example(cli, path):
    plan = attnrt.plan(attnrt.load_config(path))
    assert plan.to_dict() == cli_json(cli, str(path))


@pytest.mark.parametrize("path", HF_FIXTURES, ids=lambda p: p.stem)
def test_plan_dict_equals_cli_json_on_hugging_face_configs(cli, path):
    config = attnrt.load_config(path, memory=48 << 30, max_model_len=8192)
    assert attnrt.plan(config).to_dict() == cli_json(
        cli, str(path), "--memory", str(48 << 30), "--max-model-len", "8192")


def test_attribute_access_and_memory_override():
    config = attnrt.load_config(EXAMPLES[0].parent / "llama-3-8b.json")
    small = attnrt.plan(config, memory=1 << 30)
    large = attnrt.plan(config, memory=2 << 30)
    assert large.kv_cache.num_blocks == 2 * small.kv_cache.num_blocks
    assert small.groups[0].kind == "full"
    assert small.cudagraph.resolved_mode == small.to_dict()["cudagraph"]["resolved_mode"]
    assert small.bindings[0].layer == config.layer_names[0]


def test_a_dict_loads_like_a_file():
    text = (EXAMPLES[0].parent / "tiny-yoco.json").read_text()
    from_dict = attnrt.plan(attnrt.load_config(json.loads(text)))
    from_file = attnrt.plan(attnrt.load_config(EXAMPLES[0].parent / "tiny-yoco.json"))
    assert from_dict.to_dict() == from_file.to_dict()


def test_hybrid_plan_reports_the_alignment():
    path = EXAMPLES[0].parents[1] / "tests" / "data" / "hf" / "qwen3-next-80b-a3b-thinking.json"
    plan = attnrt.plan(attnrt.load_config(path, memory=24 << 30))
    assert plan.kv_cache.hybrid.alignment.block_size == 544
    assert plan.kv_cache.hybrid.max_concurrency_limited_by == "tokens"
    assert plan.groups[0].kind == "linear_attention"


def test_errors_are_attnrt_errors_with_the_library_message():
    assert issubclass(attnrt.Error, ValueError)
    with pytest.raises(attnrt.Error, match="model.layers: the model has no layers"):
        attnrt.load_config({"model": {"layers": []}})
    with pytest.raises(attnrt.Error, match="unknown keyword argument 'colour'"):
        attnrt.load_config({"model": {"layers": [{"num_heads": 4, "head_size": 16}]}}, colour=1)
    with pytest.raises(attnrt.Error, match="cache.memory"):
        attnrt.plan(attnrt.load_config(EXAMPLES[0].parent / "llama-3-8b.json"), memory=1024)
