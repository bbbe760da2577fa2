"""The per-step inputs of a model runner: block tables and slot mappings, CUDA-graph dispatch and
KV-sharing fast prefill (the reference page's BlockTables, CudaGraphManager, FastPrefillHelper).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from . import _attnrt
from ._attnrt import BatchExecutionDescriptor, Config

__all__ = ["BatchExecutionDescriptor", "BlockTables", "CudaGraphManager", "FastPrefillHelper"]


def _torch_view(view: Any) -> Any:
    import torch.utils.dlpack

    return torch.utils.dlpack.from_dlpack(view.__dlpack__())


class BlockTables:
    """The runner's block tables of a KVCache, one per KV cache group, in kernel-block units with a
    row per request slot (max_num_seqs rows of max_model_len tokens). Appended ids are manager
    block ids; `block_table(g)` and `slot_mapping(g)` are torch tensors over the tables' own
    buffers (no copy; they change with the next gather / compute)."""

    def __init__(self, kv_cache: Any):
        self._tables = _attnrt._BlockTables(kv_cache._cache)

    @property
    def num_groups(self) -> int:
        return self._tables.num_groups

    @property
    def max_num_reqs(self) -> int:
        return self._tables.max_num_reqs

    @property
    def max_num_tokens(self) -> int:
        return self._tables.max_num_tokens

    def append_block_ids(self, req_index: int, block_ids: Sequence[Sequence[int]],
                         overwrite: bool = False) -> None:
        """Appends the request's new manager block ids of every group (one list per group);
        checks everything first and raises attnrt.Error without writing on a bad id."""
        self._tables.append_block_ids(req_index, [list(ids) for ids in block_ids], overwrite)

    def remove_request(self, req_index: int) -> None:
        self._tables.remove_request(req_index)

    def num_blocks(self, group: int, req_index: int) -> int:
        """Kernel blocks in the request's row of `group`."""
        return self._tables.num_blocks(group, req_index)

    def gather_block_tables(self, idx_mapping: Sequence[int], num_reqs_padded: int) -> None:
        """Batch row i <- request slot idx_mapping[i]; rows past the batch are zeroed."""
        self._tables.gather_block_tables(list(idx_mapping), num_reqs_padded)

    def compute_slot_mappings(self, idx_mapping: Sequence[int], query_start_loc: Sequence[int],
                              positions: Sequence[int], num_tokens_padded: int) -> None:
        """Slots of every batch token (kernel slots where the backends take them), -1 for
        padding up to num_tokens_padded."""
        self._tables.compute_slot_mappings(list(idx_mapping), list(query_start_loc),
                                           list(positions), num_tokens_padded)

    def block_table(self, group: int = 0) -> Any:
        """The gathered batch block table of `group`, int32 [rows, kernel blocks per row]."""
        return _torch_view(self._tables.block_table(group))

    def slot_mapping(self, group: int = 0) -> Any:
        """The slot mapping of `group` from the last compute_slot_mappings, int64."""
        return _torch_view(self._tables.slot_mapping(group))


class CudaGraphManager:
    """Which graphs a config captures and, per step, which one serves a batch and its padded sizes.
    `mode` is a CUDA-graph mode name ("FULL_AND_PIECEWISE", ...); None takes the mode the
    config's plan resolves. Until `mark_captured()` every dispatch is eager and unpadded."""

    def __init__(self, config: Config, mode: Optional[str] = None):
        self._manager = _attnrt._CudaGraphManager(config, mode)

    @property
    def mode(self) -> str:
        return self._manager.mode

    @property
    def captured(self) -> bool:
        return self._manager.captured

    def capture_descriptors(self) -> list:
        """Every graph to capture, in capture order."""
        return self._manager.capture_descriptors()

    def mark_captured(self) -> None:
        self._manager.mark_captured()

    def dispatch(self, num_reqs: int, num_tokens: int, uniform_token_count: Optional[int] = None,
                 num_active_loras: int = 0, max_query_len: Optional[int] = None,
                 num_ubatches: int = 1) -> BatchExecutionDescriptor:
        """The descriptor the batch runs under (its num_tokens / num_reqs: the padded sizes)."""
        return self._manager.dispatch(num_reqs, num_tokens, uniform_token_count,
                                      num_active_loras, max_query_len, num_ubatches)


class FastPrefillHelper:
    """Stages a prefill step's logits rows, padded to the size the reduced batch's graph runs at,
    for the KV-sharing layers that run on those rows only."""

    def __init__(self, max_num_tokens: int, manager: CudaGraphManager):
        self._helper = _attnrt._FastPrefillHelper(max_num_tokens, manager._manager)

    @property
    def max_num_tokens(self) -> int:
        return self._helper.max_num_tokens

    def prepare(self, logits_indices: Sequence[int], num_reqs: int,
                cu_num_logits_cpu: Sequence[int], has_prefill: bool,
                batch_desc: BatchExecutionDescriptor,
                num_active_loras: int = 0) -> Optional[dict]:
        """None without a prefill, under a FULL graph or in micro-batches; otherwise a dict of
        logits_indices_padded, num_logits_indices and max_logits_per_req."""
        return self._helper.prepare(list(logits_indices), num_reqs, list(cu_num_logits_cpu),
                                    has_prefill, batch_desc, num_active_loras)
