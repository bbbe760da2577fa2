"""attnrt.paged_attention and attnrt.write_kv against plain PyTorch on random mixed batches."""

import re

import numpy as np
import pytest
import torch

import attnrt
from attention_reference import Layer, fill_history, paged_attention, random_batch

LAYERS = {
    "mha": Layer(4, 4, 16, 16),
    "gqa": Layer(8, 2, 32, 32),
    "window": Layer(4, 2, 16, 16, type="sliding_window", sliding_window=5),
    "chunked": Layer(4, 2, 16, 16, type="chunked_local", attention_chunk_size=8),
    "bidirectional": Layer(4, 4, 16, 16, causal=False),
    "mla": Layer(8, 1, 40, 32, type="mla", scale=0.125),
    "value_width": Layer(4, 2, 16, 24),
}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# Tolerances against the float64 oracle on the stored cache values, by the coarser of the cache
# and activation dtypes: float32 is exact up to summation order; float16 rounds query and output
# to 11 bits; bfloat16 to 8 bits, and CPU_FLASH's bf16 path also rounds queries and softmax
# weights to bfloat16 for its dot products.
TOLERANCE = {torch.float32: 2e-5, torch.float16: 4e-3, torch.bfloat16: 4e-2}
BLOCK_SIZE, NUM_BLOCKS, MAX_LEN = 4, 96, 40


def kernel_kwargs(layer: Layer) -> dict:
    kwargs = dict(num_kv_heads=layer.num_kv_heads, head_size=layer.head_size,
                  head_size_v=layer.head_size_v, causal=layer.causal, scale=layer.scale)
    if layer.type == "sliding_window":
        kwargs["sliding_window"] = layer.sliding_window
    elif layer.type == "chunked_local":
        kwargs["attention_chunk_size"] = layer.attention_chunk_size
    elif layer.type == "mla":
        kwargs["attention_type"] = "mla"
    return kwargs


def cached_batch(layer: Layer, seed: int, num_reqs: int, cache_dtype=torch.float32):
    """A random mixed batch and a cache holding every request's history, written through torch.
    Returns (generator, query_start_loc, seq_lens, block_table, slot_mapping, cache); the
    generator continues the same stream for the caller's query rows."""
    generator = torch.Generator().manual_seed(seed)
    starts, lens, table, slots = random_batch(generator, num_reqs, MAX_LEN, BLOCK_SIZE,
                                              NUM_BLOCKS)
    cache = torch.zeros(NUM_BLOCKS, layer.num_kv_heads, BLOCK_SIZE, layer.content,
                        dtype=cache_dtype)
    fill_history(cache, layer, table, lens, generator)
    return generator, starts, lens, table, slots, cache


def run_case(layer: Layer, cache_dtype, act_dtype, backend: str, seed: int):
    generator, starts, lens, table, _, cache = cached_batch(layer, seed, 7, cache_dtype)
    num_tokens = int(starts[-1])
    query = torch.randn(num_tokens + 2, layer.num_heads, layer.head_size,  # 2 padding rows
                        generator=generator).to(act_dtype)
    out = attnrt.paged_attention(query, cache, block_table=table, seq_lens=lens,
                                 query_start_loc=starts, backend=backend, **kernel_kwargs(layer))
    expected = paged_attention(layer, query.float(), cache, table, lens, starts)
    return out, expected


@pytest.mark.parametrize("backend", ["CPU_FLASH", "CPU_REFERENCE"])
@pytest.mark.parametrize("kind", sorted(LAYERS))
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_paged_attention_equals_the_torch_reference(backend, kind, dtype):
    torch_dtype = DTYPES[dtype]
    out, expected = run_case(LAYERS[kind], torch_dtype, torch_dtype, backend, seed=len(kind))
    assert out.dtype == torch_dtype
    assert out.shape == expected.shape
    error = (out.double() - expected).abs().max().item()
    assert error <= TOLERANCE[torch_dtype], f"max abs error {error}"
    assert torch.all(out[-2:] == 0), "rows past the batch are zeroed"


@pytest.mark.parametrize("act_dtype", [torch.float16, torch.bfloat16])
def test_float32_cache_with_reduced_precision_activations(act_dtype):
    out, expected = run_case(LAYERS["gqa"], torch.float32, act_dtype, "CPU_FLASH", seed=3)
    assert (out.double() - expected).abs().max().item() <= TOLERANCE[act_dtype]


def test_nhd_layout_reads_the_same_cache_transposed():
    layer = LAYERS["gqa"]
    generator, starts, lens, table, _, hnd = cached_batch(layer, 11, 5)
    nhd = hnd.transpose(1, 2).contiguous()  # [blocks, block_size, heads, content]
    query = torch.randn(int(starts[-1]), layer.num_heads, layer.head_size, generator=generator)
    args = dict(block_table=table, seq_lens=lens, query_start_loc=starts, **kernel_kwargs(layer))
    a = attnrt.paged_attention(query, hnd, **args)
    b = attnrt.paged_attention(query, nhd, layout="NHD", **args)
    assert torch.equal(a, b)


def test_strided_query_rows_are_read_in_place_and_out_is_written_in_place():
    layer = LAYERS["gqa"]
    generator, starts, lens, table, _, cache = cached_batch(layer, 5, 4)
    qkv = torch.randn(int(starts[-1]), 3, layer.num_heads, layer.head_size, generator=generator)
    query = qkv[:, 0]  # token stride 3 * heads * d: not contiguous, but rows are
    out = torch.full((int(starts[-1]), layer.num_heads, layer.head_size_v), 9.0)
    result = attnrt.paged_attention(query, cache, block_table=table, seq_lens=lens,
                                    query_start_loc=starts, out=out, **kernel_kwargs(layer))
    assert result.data_ptr() == out.data_ptr()
    expected = paged_attention(layer, query, cache, table, lens, starts)
    assert (out.double() - expected).abs().max().item() <= TOLERANCE[torch.float32]


def test_numpy_arrays_work_as_well():
    layer = LAYERS["mha"]
    generator, starts, lens, table, _, cache = cached_batch(layer, 8, 3)
    query = torch.randn(int(starts[-1]), layer.num_heads, layer.head_size, generator=generator)
    out = attnrt.paged_attention(query.numpy(), cache.numpy(), block_table=table.numpy(),
                                 seq_lens=lens.numpy(), query_start_loc=starts.numpy(),
                                 **kernel_kwargs(layer))
    assert isinstance(out, np.ndarray)
    expected = paged_attention(layer, query, cache, table, lens, starts)
    assert np.abs(out - expected.numpy()).max() <= TOLERANCE[torch.float32]


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_write_kv_stores_rounded_rows_at_their_slots(dtype):
    torch_dtype = DTYPES[dtype]
    layer = LAYERS["gqa"]
    cache = torch.zeros(8, layer.num_kv_heads, BLOCK_SIZE, layer.content, dtype=torch_dtype)
    key = torch.randn(5, layer.num_kv_heads, layer.head_size)
    value = torch.randn(5, layer.num_kv_heads, layer.head_size_v)
    slots = torch.tensor([0, 7, -1, 13, 31], dtype=torch.int64)
    attnrt.write_kv(cache, key, value, slots)
    flat = cache.transpose(1, 2).reshape(-1, layer.num_kv_heads, layer.content)  # [slots, ...]
    for t, slot in enumerate(slots.tolist()):
        if slot < 0:
            continue
        assert torch.equal(flat[slot, :, : layer.head_size], key[t].to(torch_dtype))
        assert torch.equal(flat[slot, :, layer.head_size:], value[t].to(torch_dtype))
    assert int((flat.float().abs().sum(dim=(1, 2)) != 0).sum()) == 4  # the pad slot wrote nothing


def test_write_kv_then_attention_through_the_same_cache():
    layer = LAYERS["mla"]
    generator, starts, lens, table, slots, cache = cached_batch(layer, 2, 4, torch.bfloat16)
    latent = torch.randn(int(starts[-1]), 1, layer.head_size, generator=generator)
    attnrt.write_kv(cache, latent, None, slots)  # this step's tokens overwrite their slots
    query = torch.randn(int(starts[-1]), layer.num_heads, layer.head_size, generator=generator)
    out = attnrt.paged_attention(query, cache, block_table=table, seq_lens=lens,
                                 query_start_loc=starts, **kernel_kwargs(layer))
    expected = paged_attention(layer, query, cache, table, lens, starts)
    assert (out.double() - expected).abs().max().item() <= TOLERANCE[torch.bfloat16]


def small_call(**changes):
    cache = torch.zeros(4, 2, 4, 32)
    args = dict(query=torch.zeros(3, 4, 16), kv_cache=cache,
                block_table=torch.zeros(1, 4, dtype=torch.int32),
                seq_lens=torch.tensor([3], dtype=torch.int32),
                query_start_loc=torch.tensor([0, 3], dtype=torch.int32), num_kv_heads=2,
                head_size=16)
    args.update(changes)
    query, kv_cache = args.pop("query"), args.pop("kv_cache")
    return attnrt.paged_attention(query, kv_cache, **args)


@pytest.mark.parametrize("changes, message", [
    (dict(seq_lens=torch.tensor([3])), "seq_lens: expected a 1-D int32 array"),
    (dict(block_table=torch.zeros(4, 2, dtype=torch.int32).t()), "column stride 1"),
    (dict(query=torch.zeros(3, 16, 4).transpose(1, 2)), "query: the last axis has stride 4"),
    (dict(query=torch.zeros(3, 4, 16, dtype=torch.float64)), "query: DLPack import: dtype float64"),
    (dict(query=torch.zeros(3, 4, 16, requires_grad=True)), "pass tensor.detach()"),
    (dict(block_table=[[0, 1]]), "expected a torch.Tensor or numpy.ndarray"),
    (dict(block_table=torch.full((1, 4), 9, dtype=torch.int32)), "block"),
    (dict(seq_lens=torch.tensor([99], dtype=torch.int32)), "needs 25 kernel blocks"),
    (dict(num_kv_heads=3), "2 head slots but the layer has 3 KV heads"),
    (dict(num_kv_heads=2, query=torch.zeros(3, 3, 16)), "3 query heads do not divide"),
    (dict(layout="XYZ"), "layout: 'XYZ'"),
    (dict(backend="FLASH_ATTN"), "FLASH_ATTN"),
    (dict(attention_type="mamba"), "attention_type: 'mamba'"),
    (dict(scale=-1.0), "scale: -1"),
    (dict(kv_cache=torch.zeros(4, 2, 32)), "kv_cache: expected a 4-D paged cache"),
    (dict(sliding_window=0, attention_type="sliding_window"), "positive window"),
])
def test_bad_input_raises_attnrt_error_naming_the_culprit(changes, message):
    with pytest.raises(attnrt.Error, match=re.escape(message)):
        small_call(**changes)


def test_attnrt_error_is_a_value_error():
    assert issubclass(attnrt.Error, ValueError)


def test_write_kv_without_value_is_only_for_an_mla_latent():
    cache = torch.zeros(4, 2, 4, 32)
    with pytest.raises(attnrt.Error, match="value: None means an MLA latent"):
        attnrt.write_kv(cache, torch.ones(2, 2, 16), None, torch.tensor([0, 1]))


def test_a_bad_slot_raises_and_writes_nothing():
    cache = torch.zeros(4, 2, 4, 32)
    key = torch.ones(2, 2, 16)
    with pytest.raises(attnrt.Error, match="token 1 has slot 16"):
        attnrt.write_kv(cache, key, key, torch.tensor([0, 16], dtype=torch.int64))
    assert float(cache.abs().sum()) == 0.0


def test_calls_from_several_threads_run_without_the_gil_and_agree():
    import threading

    layer = LAYERS["gqa"]
    generator, starts, lens, table, _, cache = cached_batch(layer, 21, 6)
    query = torch.randn(int(starts[-1]), layer.num_heads, layer.head_size, generator=generator)
    args = dict(block_table=table, seq_lens=lens, query_start_loc=starts, **kernel_kwargs(layer))
    expected = attnrt.paged_attention(query, cache, **args)
    results = [[] for _ in range(3)]

    def work(index):
        for _ in range(20):
            results[index].append(attnrt.paged_attention(query, cache, **args))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(torch.equal(out, expected) for outs in results for out in outs)
