"""Plain PyTorch paged attention, the oracle of the kernel tests: gather each request's keys and
values through its block table, mask, softmax, in float64."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch


@dataclass
class Layer:
    """What the kernels need to know of a layer (per rank)."""

    num_heads: int
    num_kv_heads: int
    head_size: int
    head_size_v: int
    type: str = "full"
    sliding_window: int = 0
    attention_chunk_size: int = 0
    causal: bool = True
    scale: Optional[float] = None

    @property
    def mla(self) -> bool:
        return self.type == "mla"

    @property
    def content(self) -> int:
        """Entries per head and token in the cache: K then V, or the MLA latent."""
        return self.head_size if self.mla else self.head_size + self.head_size_v


def visible(layer: Layer, position: int, seq_len: int) -> torch.Tensor:
    """Key positions the query at `position` sees."""
    keys = torch.arange(seq_len)
    if not layer.causal:
        return keys
    mask = keys <= position
    if layer.type == "sliding_window":
        mask &= keys > position - layer.sliding_window
    if layer.type == "chunked_local":
        mask &= keys >= position // layer.attention_chunk_size * layer.attention_chunk_size
    return keys[mask]


def gather(cache: torch.Tensor, row: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """[len(keys), kv_heads, content] of an HND cache [blocks, heads, block_size, content]."""
    block_size = cache.shape[2]
    blocks = row[keys // block_size].long()
    return cache[blocks, :, keys % block_size, :].double()


def paged_attention(layer: Layer, query: torch.Tensor, cache: torch.Tensor,
                    block_table: torch.Tensor, seq_lens: torch.Tensor,
                    query_start_loc: torch.Tensor) -> torch.Tensor:
    """[tokens, heads, head_size_v] float64; rows past the batch stay zero."""
    out = torch.zeros(query.shape[0], layer.num_heads, layer.head_size_v, dtype=torch.float64)
    scale = layer.scale or 1.0 / math.sqrt(layer.head_size)
    group = layer.num_heads // layer.num_kv_heads
    for r in range(len(seq_lens)):
        start, end = int(query_start_loc[r]), int(query_start_loc[r + 1])
        seq_len = int(seq_lens[r])
        for t in range(start, end):
            position = seq_len - (end - start) + (t - start)
            keys = visible(layer, position, seq_len)
            content = gather(cache, block_table[r], keys)  # [keys, kv_heads, content]
            k = content[..., : layer.head_size]
            v = content[..., : layer.head_size_v] if layer.mla else content[..., layer.head_size:]
            k = k.repeat_interleave(group, dim=1)  # [keys, heads, d]
            v = v.repeat_interleave(group, dim=1)
            q = query[t].double()
            scores = torch.einsum("hd,khd->hk", q, k) * scale
            out[t] = torch.einsum("hk,khd->hd", scores.softmax(dim=-1), v)
    return out


def random_batch(generator: torch.Generator, num_reqs: int, max_len: int, block_size: int,
                 num_blocks: int):
    """A mixed batch: decodes, whole prefills and chunked prefills, over a shuffled block pool.
    Returns (query_start_loc, seq_lens, block_table, slot_mapping) with int32/int64 dtypes."""
    seq_lens, query_lens = [], []
    for r in range(num_reqs):
        seq_len = int(torch.randint(1, max_len + 1, (1,), generator=generator))
        kind = r % 3
        query_len = 1 if kind == 0 else seq_len if kind == 1 else max(1, seq_len // 3)
        seq_lens.append(seq_len)
        query_lens.append(query_len)
    width = -(-max_len // block_size)
    pool = torch.randperm(num_blocks, generator=generator)
    assert num_reqs * width <= num_blocks, "the pool must hold every request's blocks"
    block_table = pool[: num_reqs * width].reshape(num_reqs, width).to(torch.int32)
    query_start_loc = torch.tensor([0] + list(torch.tensor(query_lens).cumsum(0)),
                                   dtype=torch.int32)
    slots = []
    for r in range(num_reqs):
        for i in range(query_lens[r]):
            position = seq_lens[r] - query_lens[r] + i
            slots.append(int(block_table[r, position // block_size]) * block_size +
                         position % block_size)
    return (query_start_loc, torch.tensor(seq_lens, dtype=torch.int32), block_table,
            torch.tensor(slots, dtype=torch.int64))


def fill_history(cache: torch.Tensor, layer: Layer, block_table: torch.Tensor,
                 seq_lens: torch.Tensor, generator: torch.Generator) -> None:
    """Random K/V (MLA: latent) for every cached position of every request, written through
    torch directly into the cache, so the kernels read what torch wrote."""
    block_size = cache.shape[2]
    for r in range(len(seq_lens)):
        for position in range(int(seq_lens[r])):
            block = int(block_table[r, position // block_size])
            values = torch.randn(layer.num_kv_heads, layer.content, generator=generator)
            cache[block, : layer.num_kv_heads, position % block_size, : layer.content] = values
