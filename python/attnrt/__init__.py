"""attnrt from Python: load a config, plan its KV cache, hold the cache's views zero-copy, run
paged attention on torch tensors and build a runner's per-step inputs.

The C++ core is the `_attnrt` extension; this package gives it a Pythonic surface. Errors raise
`attnrt.Error`, a `ValueError` carrying the library's one-line message.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Optional, Union

from . import _attnrt
from ._attnrt import (
    AttentionGroup,
    AttnBackends,
    BatchExecutionDescriptor,
    Config,
    Error,
    TensorView,
    get_attn_cg_support,
    get_kv_sharing_fast_prefill_eligible_layers,
    get_query_lens_mismatch_unsupported_backend,
    get_varlen_cudagraph_unsupported_backend,
    init_attn_backend,
)
from .attention import PagedAttentionWrapper, paged_attention, write_kv
from .step import BlockTables, CudaGraphManager, FastPrefillHelper

LayerView = TensorView  # a layer's KV cache view is a TensorView

__version__ = _attnrt.__version__
__all__ = [
    "AttentionGroup",
    "AttnBackends",
    "BatchExecutionDescriptor",
    "BlockTables",
    "Config",
    "CudaGraphManager",
    "Error",
    "FastPrefillHelper",
    "KVCache",
    "LayerView",
    "PagedAttentionWrapper",
    "Plan",
    "TensorView",
    "get_attn_cg_support",
    "get_kv_sharing_fast_prefill_eligible_layers",
    "get_query_lens_mismatch_unsupported_backend",
    "get_varlen_cudagraph_unsupported_backend",
    "init_attn_backend",
    "load_config",
    "paged_attention",
    "plan",
    "write_kv",
]


def load_config(source: Union[str, os.PathLike, Mapping[str, Any]], **engine_args: Any) -> Config:
    """Loads an attnrt config or a Hugging Face config.json.

    `source` is a path (a config file or a model folder) or a dict. Keyword arguments are vLLM's
    engine arguments, as the CLI takes them: max_model_len, tensor_parallel_size, block_size,
    kv_cache_dtype, num_gpu_blocks_override, kv_sharing_fast_prefill, max_num_seqs,
    max_num_batched_tokens and memory (KV cache bytes per rank).
    """
    if isinstance(source, Mapping):
        return _attnrt._load_config_text(json.dumps(source), **engine_args)
    return _attnrt._load_config_path(os.fspath(source), **engine_args)


class _Node:
    """Attribute access over a JSON object: plan.kv_cache.groups[0].page_size_bytes."""

    def __init__(self, value: Mapping[str, Any]):
        self._value = value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return _wrap(self._value[name])
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, name: str) -> Any:
        return _wrap(self._value[name])

    def __repr__(self) -> str:
        return f"_Node({sorted(self._value)})"


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return _Node(value)
    if isinstance(value, list):
        return [_wrap(item) for item in value]
    return value


class Plan(_Node):
    """The attention plan of a config: what `attnrt plan --json` prints, with attribute access
    (`plan.kv_cache`, `plan.attention_groups`, `plan.cudagraph`, `plan.bindings`, ...)."""

    def __init__(self, config: Config, memory: Optional[int] = None):
        self.config = config
        self.memory = memory
        super().__init__(json.loads(_attnrt._plan_json(config, memory)))

    def to_dict(self) -> dict:
        """The plan as `attnrt plan --json` prints it (a fresh copy)."""
        return json.loads(json.dumps(self._value))

    @property
    def groups(self) -> list:
        """The KV cache groups (kv_cache.groups)."""
        return _wrap(self._value["kv_cache"]["groups"])


def plan(config: Config, memory: Optional[int] = None) -> Plan:
    """Plans `config` (with `memory` KV cache bytes per rank instead of cache.memory, if given)."""
    return Plan(config, memory)


class KVCache:
    """A plan's KV cache, allocated (zeroed) and bound. `tensor(name)` is a torch.Tensor that
    aliases the layer's view (same data_ptr, shape and strides as the plan's binding); KV-sharing
    layers alias their target. `view(name)` is a DLPack producer for NumPy or any consumer. The
    exported tensors keep the cache's memory alive."""

    def __init__(self, plan_or_config: Union[Plan, Config], memory: Optional[int] = None):
        if isinstance(plan_or_config, Plan):
            config, memory = plan_or_config.config, plan_or_config.memory
        else:
            config = plan_or_config
        self._cache = _attnrt._KVCache(config, memory)

    @property
    def layers(self) -> list:
        """Names of the layers with a KV cache view, in execution order."""
        return self._cache.layers

    @property
    def num_blocks(self) -> int:
        return self._cache.num_blocks

    @property
    def backing_address(self) -> int:
        """Address of byte 0 of the shared backing allocation."""
        return self._cache.backing_address

    def view(self, name: str) -> TensorView:
        return self._cache.view(name)

    def tensor(self, name: str):
        """The layer's view as a torch.Tensor, without a copy."""
        import torch.utils.dlpack

        return torch.utils.dlpack.from_dlpack(self._cache._capsule(name))
