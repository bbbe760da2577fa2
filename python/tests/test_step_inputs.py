"""BlockTables, CudaGraphManager.dispatch and FastPrefillHelper.prepare from Python."""

import pytest
import torch

import attnrt
from test_wrapper import YOCO_LIKE

BLOCK = YOCO_LIKE["cache"]["block_size"]


def test_block_tables_append_gather_and_map_slots_zero_copy():
    cache = attnrt.KVCache(attnrt.load_config(YOCO_LIKE))
    tables = attnrt.BlockTables(cache)
    assert tables.num_groups == 2
    tables.append_block_ids(0, [[3, 5], [7, 2]])
    tables.append_block_ids(1, [[1], [4]])
    assert tables.num_blocks(0, 0) == 2 and tables.num_blocks(1, 1) == 1
    tables.gather_block_tables([1, 0], 3)
    table = tables.block_table(0)
    assert table.dtype == torch.int32
    assert table[0, :1].tolist() == [1] and table[1, :2].tolist() == [3, 5]
    assert table[2].abs().sum() == 0  # padding rows are zeroed
    # Request 0 (batch row 1) runs positions 6..8, request 1 (row 0) position 0; one pad token.
    tables.compute_slot_mappings([1, 0], [0, 1, 4], [0, 6, 7, 8], 5)
    assert tables.slot_mapping(0).tolist()[:5] == [1 * BLOCK, 3 * BLOCK + 6, 3 * BLOCK + 7,
                                                   5 * BLOCK, -1]
    assert tables.slot_mapping(1).tolist()[:5] == [4 * BLOCK, 7 * BLOCK + 6, 7 * BLOCK + 7,
                                                   2 * BLOCK, -1]
    # The tensors are views of the tables' buffers, alive after the tables go.
    pointer = table.data_ptr()
    tables.gather_block_tables([0], 1)
    assert tables.block_table(0).data_ptr() == pointer
    assert table[0, :2].tolist() == [3, 5]
    del tables
    assert table[0, :2].tolist() == [3, 5]


def test_block_tables_feed_the_wrapper_which_derives_the_same_slots():
    cache = attnrt.KVCache(attnrt.load_config(YOCO_LIKE))
    tables = attnrt.BlockTables(cache)
    tables.append_block_ids(0, [[3, 5], [7, 2]])
    tables.gather_block_tables([0], 1)
    tables.compute_slot_mappings([0], [0, 3], [6, 7, 8], 3)
    wrapper = attnrt.PagedAttentionWrapper(cache)
    starts = torch.tensor([0, 3], dtype=torch.int32)
    wrapper.plan(starts, torch.tensor([9], dtype=torch.int32),
                 [tables.block_table(0)[:1], tables.block_table(1)[:1]])
    for group in range(2):
        assert wrapper.slot_mapping(group) == tables.slot_mapping(group)[:3].tolist()


def test_block_tables_refuse_bad_ids_without_writing():
    cache = attnrt.KVCache(attnrt.load_config(YOCO_LIKE))
    tables = attnrt.BlockTables(cache)
    tables.append_block_ids(0, [[3], [4]])
    with pytest.raises(attnrt.Error, match=str(cache.num_blocks)):
        tables.append_block_ids(0, [[6], [cache.num_blocks]])
    assert tables.num_blocks(0, 0) == 1 and tables.num_blocks(1, 0) == 1
    with pytest.raises(attnrt.Error):
        tables.append_block_ids(0, [[6]])  # one list per group
    with pytest.raises(attnrt.Error, match="no KV cache group 2"):
        tables.block_table(2)


def test_cuda_graph_manager_dispatch_pads_to_the_captured_graphs():
    config = attnrt.load_config({"model": {"layers": [{"num_heads": 4, "head_size": 16}]}})
    manager = attnrt.CudaGraphManager(config, "FULL_AND_PIECEWISE")
    assert manager.mode == "FULL_AND_PIECEWISE"
    descriptors = manager.capture_descriptors()
    # vLLM's default ladder for 128 sequences: 35 piecewise sizes, 19 uniform-decode FULL graphs.
    assert sum(d.cg_mode == "PIECEWISE" for d in descriptors) == 35
    assert sum(d.cg_mode == "FULL" for d in descriptors) == 19
    eager = manager.dispatch(3, 3, uniform_token_count=1)
    assert (eager.cg_mode, eager.num_tokens, eager.num_reqs) == ("NONE", 3, 3)
    manager.mark_captured()
    decode = manager.dispatch(3, 3, uniform_token_count=1, max_query_len=1)
    assert decode == attnrt.BatchExecutionDescriptor("FULL", 4, 4, uniform_token_count=1)
    mixed = manager.dispatch(2, 7, max_query_len=6)
    assert (mixed.cg_mode, mixed.num_tokens) == ("PIECEWISE", 8)
    assert "cg_mode=PIECEWISE" in repr(mixed)
    assert attnrt.CudaGraphManager(config).mode == "FULL_AND_PIECEWISE"  # the plan's resolution
    with pytest.raises(attnrt.Error, match="FULL_AND_SOMETHING"):
        attnrt.CudaGraphManager(config, "FULL_AND_SOMETHING")


def test_fast_prefill_helper_pads_the_logits_rows_to_the_reduced_graph():
    config = attnrt.load_config({"model": {"layers": [{"num_heads": 4, "head_size": 16}]}})
    manager = attnrt.CudaGraphManager(config, "FULL_AND_PIECEWISE")
    manager.mark_captured()
    helper = attnrt.FastPrefillHelper(64, manager)
    piecewise = attnrt.BatchExecutionDescriptor("PIECEWISE", 32)
    staged = helper.prepare([4, 9, 17], 3, [0, 1, 2, 3], True, piecewise)
    assert staged == {"logits_indices_padded": [4, 9, 17, 17], "num_logits_indices": 3,
                      "max_logits_per_req": 1}
    full = attnrt.BatchExecutionDescriptor("FULL", 32, 32)
    assert helper.prepare([4, 9, 17], 3, [0, 1, 2, 3], True, full) is None
    assert helper.prepare([4, 9, 17], 3, [0, 1, 2, 3], False, piecewise) is None
    with pytest.raises(attnrt.Error):
        helper.prepare([], 0, [0], True, piecewise)
