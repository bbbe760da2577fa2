"""attnrt.PagedAttentionWrapper: plan once per step, run every layer of a bound KVCache on its own
backend, shape and view; K/V written through torch into cache.tensor() are what the kernels read."""

import pytest
import torch

import attnrt
from attention_reference import Layer, fill_history, paged_attention, random_batch

MAX_LEN = 40

# Two KV cache groups (window 5, full) with GQA, then two layers sharing their targets' caches.
YOCO_LIKE = {
    "model": {"max_model_len": 64, "layers": [
        {"type": "sliding_window", "sliding_window": 5, "num_heads": 8, "num_kv_heads": 2,
         "head_size": 32},
        {"type": "full", "num_heads": 8, "num_kv_heads": 2, "head_size": 32},
        {"type": "sliding_window", "sliding_window": 5, "num_heads": 8, "num_kv_heads": 2,
         "head_size": 32, "kv_sharing_target": "model.layers.0.self_attn"},
        {"type": "full", "num_heads": 8, "num_kv_heads": 2, "head_size": 32,
         "kv_sharing_target": "model.layers.1.self_attn"},
    ]},
    "cache": {"block_size": 8, "dtype": "float32", "memory": 4 << 20},
}
MLA = {
    "model": {"max_model_len": 64, "layers": [
        {"type": "mla", "num_heads": 8, "head_size": 72, "head_size_v": 64}]},
    "cache": {"block_size": 16, "dtype": "bfloat16", "memory": 4 << 20},
}
TOLERANCE = {"float32": 2e-5, "bfloat16": 4e-2}


def layer_of(shape: dict, window: int = 0) -> Layer:
    return Layer(shape["num_heads"], shape["num_kv_heads"], shape["head_size"],
                 shape["head_size_v"], type=shape["type"], sliding_window=window)


def table_for(generator, template: torch.Tensor, num_blocks: int) -> torch.Tensor:
    """Another group's table: the same shape over a different shuffle of its blocks."""
    pool = torch.randperm(num_blocks, generator=generator)[: template.numel()]
    return pool.reshape(template.shape).to(torch.int32)


@pytest.mark.parametrize("config, dtype", [(YOCO_LIKE, "float32"), (MLA, "bfloat16")])
def test_wrapper_equals_the_torch_reference_on_every_layer(config, dtype):
    generator = torch.Generator().manual_seed(4)
    cache = attnrt.KVCache(attnrt.plan(attnrt.load_config(config)))
    wrapper = attnrt.PagedAttentionWrapper(cache)
    owners = [name for name in cache.layers
              if not config["model"]["layers"][cache.layers.index(name)].get("kv_sharing_target")]
    first = cache.tensor(owners[0])
    block_size, num_blocks = first.shape[2], first.shape[0]
    starts, lens, table0, slots0 = random_batch(generator, 6, MAX_LEN, block_size, num_blocks)
    tables = [table0] + [table_for(generator, table0, num_blocks)
                         for _ in range(wrapper.num_kv_cache_groups - 1)]
    wrapper.plan(starts, lens, tables if len(tables) > 1 else tables[0])
    assert wrapper.slot_mapping(0) == slots0.tolist()

    num_tokens = int(starts[-1])
    group_of = {}
    for g, group in enumerate(attnrt.plan(attnrt.load_config(config)).groups):
        for name in group.layer_names:
            group_of[name] = g
    for name in owners:
        shape = wrapper.layer_shape(name)
        layer = layer_of(shape)
        view = cache.tensor(name)
        fill_history(view, layer, tables[group_of[name]], lens, generator)  # through torch
        key = torch.randn(num_tokens, shape["num_kv_heads"], shape["head_size"],
                          generator=generator)
        value = None if layer.mla else torch.randn(num_tokens, shape["num_kv_heads"],
                                                   shape["head_size_v"], generator=generator)
        wrapper.write_kv(name, key, value)  # this step's tokens, at the planned slots
        slots = torch.tensor(wrapper.slot_mapping(group_of[name]))
        flat = view.transpose(1, 2).reshape(-1, view.shape[1], view.shape[3])
        assert torch.equal(flat[slots, :, : shape["head_size"]], key.to(view.dtype))

    for index, name in enumerate(cache.layers):
        spec = config["model"]["layers"][index]
        shape = wrapper.layer_shape(name)
        layer = layer_of(shape, spec.get("sliding_window", 0))
        query = torch.randn(num_tokens, shape["num_heads"], shape["head_size"],
                            generator=generator)
        out = wrapper.run(name, query)
        expected = paged_attention(layer, query, cache.tensor(name), tables[group_of[name]],
                                   lens, starts)
        error = (out.double() - expected).abs().max().item()
        assert error <= TOLERANCE[dtype], f"{name}: max abs error {error}"


def test_a_wrapper_from_a_plan_allocates_its_cache():
    wrapper = attnrt.PagedAttentionWrapper(attnrt.plan(attnrt.load_config(MLA)))
    assert isinstance(wrapper.kv_cache, attnrt.KVCache)
    assert wrapper.layer_shape(wrapper.kv_cache.layers[0])["type"] == "mla"


def test_wrapper_refuses_bad_steps_and_keeps_the_last_plan():
    cache = attnrt.KVCache(attnrt.load_config(YOCO_LIKE))
    wrapper = attnrt.PagedAttentionWrapper(cache)
    name = cache.layers[0]
    query = torch.zeros(1, 8, 32)
    with pytest.raises(attnrt.Error, match="call plan"):
        wrapper.run(name, query)
    starts = torch.tensor([0, 1], dtype=torch.int32)
    lens = torch.tensor([3], dtype=torch.int32)
    table = torch.zeros(1, 2, dtype=torch.int32)
    with pytest.raises(attnrt.Error, match="1 tables for a plan of 2 KV cache groups"):
        wrapper.plan(starts, lens, table)
    wrapper.plan(starts, lens, [table, table])
    with pytest.raises(attnrt.Error, match="column 0 is block 100000"):
        wrapper.plan(starts, lens, [table, torch.full((1, 2), 100000, dtype=torch.int32)])
    with pytest.raises(attnrt.Error, match="request 0: 1 query tokens but seq_lens 0"):
        wrapper.plan(starts, torch.tensor([0], dtype=torch.int32), [table, table])
    assert wrapper.slot_mapping(0) == [2]  # the good plan still stands
    wrapper.run(name, query)
    with pytest.raises(attnrt.Error, match="shares the KV cache of model.layers.0.self_attn"):
        wrapper.write_kv(cache.layers[2], torch.zeros(1, 2, 32), torch.zeros(1, 2, 32))
    with pytest.raises(attnrt.Error, match="has no KV cache view"):
        wrapper.run("model.layers.9.self_attn", query)
    with pytest.raises(attnrt.Error, match="expected an attnrt.Plan or attnrt.KVCache"):
        attnrt.PagedAttentionWrapper("llama")
