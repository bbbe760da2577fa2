"""attnrt.KVCache: views exported without a copy, with the plan's geometry."""

import numpy as np
import pytest
import torch

import attnrt
from conftest import EXAMPLES

YOCO = EXAMPLES[0].parent / "tiny-yoco.json"


def test_tensors_alias_the_plan_bindings():
    config = attnrt.load_config(YOCO, memory=4 << 20)
    plan = attnrt.plan(config)
    cache = attnrt.KVCache(plan)
    bindings = {b.layer: b for b in plan.bindings}
    assert cache.layers == [b.layer for b in plan.bindings]
    dtype_size = {"bfloat16": 2, "float16": 2, "float32": 4}
    for name in cache.layers:
        t = cache.tensor(name)
        b = bindings[name]
        assert list(t.shape) == b.shape
        assert list(t.stride()) == b.strides
        assert t.data_ptr() == cache.backing_address + b.offset_bytes
        assert t.element_size() == dtype_size[b.dtype]
        assert cache.view(name).data_ptr == t.data_ptr()


def test_kv_sharing_layers_alias_their_target():
    cache = attnrt.KVCache(attnrt.load_config(YOCO, memory=4 << 20))
    shared = cache.tensor("model.layers.2.self_attn")
    sharing = cache.tensor("model.layers.4.self_attn")
    assert sharing.data_ptr() == shared.data_ptr()
    sharing[3, 0, 1, :3] = 1.5
    assert torch.all(shared[3, 0, 1, :3] == 1.5)


def test_a_write_through_torch_is_seen_through_numpy_and_again():
    config = attnrt.load_config({"model": {"layers": [{"num_heads": 4, "head_size": 16}]},
                                 "cache": {"dtype": "float32", "memory": 1 << 20}})
    cache = attnrt.KVCache(config)
    name = cache.layers[0]
    t = cache.tensor(name)
    t[1, 0, 2, 5] = 7.25
    array = np.from_dlpack(cache.view(name))
    assert array.shape == tuple(t.shape)
    assert array[1, 0, 2, 5] == 7.25
    assert cache.tensor(name)[1, 0, 2, 5].item() == 7.25


def test_a_tensor_keeps_the_cache_memory_alive():
    cache = attnrt.KVCache(attnrt.load_config(YOCO, memory=4 << 20))
    t = cache.tensor(cache.layers[0])
    del cache
    t.fill_(2.0)
    assert float(t.sum()) == 2.0 * t.numel()


def test_unknown_layer_is_an_error():
    cache = attnrt.KVCache(attnrt.load_config(YOCO, memory=4 << 20))
    with pytest.raises(attnrt.Error, match="has no KV cache view"):
        cache.tensor("model.layers.99.self_attn")
