"""Paged attention on torch tensors (or NumPy arrays): the CPU backends' kernels, zero-copy.

Shapes follow vLLM. query `[num_tokens, num_heads, head_size]`, key/value
`[num_tokens, num_kv_heads, head_size(_v)]`, out `[num_tokens, num_heads, head_size_v]`,
slot_mapping int64 `[num_tokens]`, block_table int32 `[num_reqs, max_blocks]`, seq_lens int32
`[num_reqs]` (tokens including this step's), query_start_loc int32 `[num_reqs + 1]`.

kv_cache is a layer's paged cache, K then V along the last axis (MLA: the latent). With
layout="HND" (the default, what `KVCache.tensor` returns) it is `[blocks, kv_heads, block_size,
content]`; with layout="NHD", `[blocks, block_size, kv_heads, content]`. Block ids and slots
index its block axis: slot = block * block_size + offset.

What is read in place: every tensor is taken through DLPack without a copy. Activation rows may
have any token and head strides but their last axis must have stride 1; the int arrays must be
contiguous (block_table: rows of stride 1); the cache's content axis must have stride 1. Anything
else raises attnrt.Error: nothing is ever copied to make it fit. float16 and bfloat16 activations
are converted to float32 around the kernel (it computes in float32); float32 ones are used as they
are. The kernels run with the GIL released.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from . import _attnrt

__all__ = ["PagedAttentionWrapper", "paged_attention", "write_kv"]


def _new_rows(like: Any, num_tokens: int, num_heads: int, head_size: int) -> Any:
    """An uninitialised [num_tokens, num_heads, head_size] array of like's kind and dtype."""
    new_empty = getattr(like, "new_empty", None)
    if new_empty is not None:  # torch
        return new_empty((num_tokens, num_heads, head_size))
    import numpy

    return numpy.empty((num_tokens, num_heads, head_size), dtype=like.dtype)


def write_kv(kv_cache: Any, key: Any, value: Any, slot_mapping: Any, *, layout: str = "HND",
             backend: str = "CPU_FLASH") -> None:
    """Stores this step's K and V rows into `kv_cache` at `slot_mapping` (kernel slots; -1 skips
    a token), rounding to the cache's dtype. MLA: pass the latent as `key` and None as `value`.
    A bad slot raises attnrt.Error naming the token, and nothing is written."""
    _attnrt._write_kv(kv_cache, key, value, slot_mapping, layout, backend)


def paged_attention(query: Any, kv_cache: Any, *, block_table: Any, seq_lens: Any,
                    query_start_loc: Any, num_kv_heads: int, head_size: int,
                    head_size_v: Optional[int] = None, scale: Optional[float] = None,
                    sliding_window: Optional[int] = None,
                    attention_chunk_size: Optional[int] = None,
                    attention_type: Optional[str] = None, causal: bool = True,
                    layout: str = "HND", backend: str = "CPU_FLASH", out: Any = None) -> Any:
    """Varlen paged attention of each request's query rows over its cached keys; returns `out`.

    Query token i of request r sits at position seq_lens[r] - query_len(r) + i and sees keys
    [0, position] (full), the last `sliding_window` of them (vLLM's window convention), its
    attention chunk up to itself (chunked_local), or all of them when causal is False.
    `attention_type` is inferred ("sliding_window" / "chunked_local" when those sizes are given,
    else "full"); say "mla" for a latent cache (num_kv_heads 1, head_size the latent width,
    head_size_v the kv_lora_rank prefix that is V) or "cross". `scale` defaults to
    1/sqrt(head_size). backend is "CPU_FLASH" or "CPU_REFERENCE".
    """
    if head_size_v is None:
        head_size_v = head_size
    if out is None:
        out = _new_rows(query, query.shape[0], query.shape[1], head_size_v)
    _attnrt._paged_attention(query, kv_cache, block_table, seq_lens, query_start_loc, out,
                             num_kv_heads, head_size, head_size_v, scale, sliding_window,
                             attention_chunk_size, attention_type, causal, layout, backend)
    return out


class PagedAttentionWrapper:
    """FlashInfer's plan/run split over a bound KV cache: `plan()` once per step, then `run()`
    (and `write_kv()`) per layer, each layer on its own backend, shape and bound view.

    Built from a KVCache, or from a Plan (it then allocates one: `wrapper.kv_cache`).
    """

    def __init__(self, plan_or_cache: Any):
        from . import KVCache, Plan

        if isinstance(plan_or_cache, Plan):
            plan_or_cache = KVCache(plan_or_cache)
        if not isinstance(plan_or_cache, KVCache):
            raise _attnrt.Error(
                "PagedAttentionWrapper: expected an attnrt.Plan or attnrt.KVCache, got "
                f"{type(plan_or_cache).__name__}")
        self.kv_cache = plan_or_cache
        self._wrapper = _attnrt._PagedAttentionWrapper(plan_or_cache._cache)

    @property
    def num_kv_cache_groups(self) -> int:
        return self._wrapper.num_kv_cache_groups

    def plan(self, query_start_loc: Any, seq_lens: Any,
             block_table: Union[Any, Sequence[Any]], *, causal: bool = True) -> None:
        """Takes the step's batch: query_start_loc, seq_lens and the block table (one per KV cache
        group, as a list, when the plan has several). The arrays are copied; each group's slot
        mapping is derived from its table. Raises attnrt.Error on an inconsistent batch; after a
        failed plan() the wrapper needs a new one before run()."""
        self._wrapper.plan(query_start_loc, seq_lens, block_table, causal)

    def write_kv(self, layer: str, key: Any, value: Any = None) -> None:
        """Stores the step's K/V rows of `layer` at the planned slots (MLA: the latent as key)."""
        self._wrapper.write_kv(layer, key, value)

    def run(self, layer: str, query: Any, out: Any = None) -> Any:
        """Attention of `layer` for the planned batch; returns `out` [tokens, heads, head_size_v]."""
        if out is None:
            shape = self._wrapper.layer_shape(layer)
            out = _new_rows(query, query.shape[0], shape["num_heads"], shape["head_size_v"])
        self._wrapper.run(layer, query, out)
        return out

    def layer_shape(self, layer: str) -> dict:
        """The layer's per-rank kernel shape: type, num_heads, num_kv_heads, head sizes."""
        return self._wrapper.layer_shape(layer)

    def slot_mapping(self, group: int = 0) -> list:
        """The kernel slots plan() derived for KV cache group `group`."""
        return self._wrapper.slot_mapping(group)
