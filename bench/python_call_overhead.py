"""What one paged_attention decode call costs from Python against the same call from C++.

Times attnrt.paged_attention (the free function: DLPack import of six tensors, checks, a cached
builder) and PagedAttentionWrapper.run (metadata planned once per step) on the cases of
bench/call_overhead_bench.cc (CPU_FLASH, bf16 cache, 32/8 heads, head 128, float32 rows), and
runs that C++ benchmark in the same rounds, interleaved: the difference is the binding's cost.
Both Python calls read a cache attnrt allocated (KVCache.tensor, on 2 MiB pages as the C++ side's
is); the last column is the free function on a torch.zeros cache (4 KiB pages), for comparison.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_call_overhead.py \\
        --cpp build/release/bench/call_overhead_bench [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time

import torch

import attnrt

HEAD, KV_HEADS, BLOCK = 128, 8, 16
CASES = [(1, 16), (8, 16), (1, 512), (8, 512)]  # (batch, context), as the C++ benchmark
Q_HEADS = 32


def make_inputs(batch: int, context: int):
    blocks = -(-context // BLOCK)
    query = torch.full((batch, Q_HEADS, HEAD), 0.5)
    out = torch.empty_like(query)
    table = torch.arange(batch * blocks, dtype=torch.int32).reshape(batch, blocks)
    seq_lens = torch.full((batch,), context, dtype=torch.int32)
    starts = torch.arange(batch + 1, dtype=torch.int32)
    return query, out, table, seq_lens, starts


def attnrt_cache(batch: int, context: int) -> "attnrt.KVCache":
    """A KVCache holding the case's blocks: attnrt's own allocation (2 MiB pages, as C++ has)."""
    blocks = -(-context // BLOCK)
    config = attnrt.load_config({
        "model": {"max_model_len": context, "layers": [
            {"num_heads": Q_HEADS, "num_kv_heads": KV_HEADS, "head_size": HEAD}]},
        "cache": {"block_size": BLOCK, "dtype": "bfloat16",
                  "memory": batch * blocks * KV_HEADS * BLOCK * 2 * HEAD * 2},
        "scheduler": {"max_num_seqs": 256}})
    return attnrt.KVCache(attnrt.plan(config))


def per_call_us(call, budget_s: float = 0.3) -> float:
    """Median over 5 repeats of the mean time per call, each repeat ~budget_s / 5."""
    call()
    start = time.perf_counter()
    calls = 0
    while time.perf_counter() - start < 0.02:
        call()
        calls += 1
    per_repeat = max(1, int(calls * budget_s / 5 / 0.02))
    samples = []
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(per_repeat):
            call()
        samples.append((time.perf_counter_ns() - start) / per_repeat / 1e3)
    return statistics.median(samples)


def free_function_us(batch: int, context: int, torch_cache: bool) -> float:
    """attnrt.paged_attention on a cache from attnrt (KVCache.tensor) or from torch.zeros."""
    query, out, table, seq_lens, starts = make_inputs(batch, context)
    if torch_cache:
        cache = torch.zeros(table.numel(), KV_HEADS, BLOCK, 2 * HEAD, dtype=torch.bfloat16)
    else:
        kv = attnrt_cache(batch, context)
        cache = kv.tensor(kv.layers[0])
    return per_call_us(lambda: attnrt.paged_attention(
        query, cache, block_table=table, seq_lens=seq_lens, query_start_loc=starts,
        num_kv_heads=KV_HEADS, head_size=HEAD, out=out))


def wrapper_us(batch: int, context: int) -> float:
    wrapper = attnrt.PagedAttentionWrapper(attnrt_cache(batch, context))
    query, out, table, seq_lens, starts = make_inputs(batch, context)
    wrapper.plan(starts, seq_lens, table)
    layer = wrapper.kv_cache.layers[0]
    return per_call_us(lambda: wrapper.run(layer, query, out))


def cpp_us(binary: str) -> dict:
    result = subprocess.run([binary, "--benchmark_format=json", "--benchmark_min_time=0.3"],
                            check=True, capture_output=True, text=True)
    times = {}
    for bench in json.loads(result.stdout)["benchmarks"]:
        parts = dict(p.split(":") for p in bench["name"].split("/")[1:] if ":" in p)
        times[(int(parts["batch"]), int(parts["context"]))] = bench["real_time"] / 1e3  # ns
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpp", required=True, help="build/release/bench/call_overhead_bench")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = {case: {"cpp": [], "python": [], "wrapper": [], "torch_cache": []} for case in CASES}
    for _ in range(args.rounds):
        cpp = cpp_us(args.cpp)
        for case in CASES:
            rows[case]["cpp"].append(cpp[case])
            rows[case]["python"].append(free_function_us(*case, torch_cache=False))
            rows[case]["wrapper"].append(wrapper_us(*case))
            rows[case]["torch_cache"].append(free_function_us(*case, torch_cache=True))
    report = []
    for (batch, context), times in rows.items():
        median = {key: statistics.median(values) for key, values in times.items()}
        report.append({"batch": batch, "context": context, "q_heads": Q_HEADS,
                       "cpp_us": median["cpp"], "paged_attention_us": median["python"],
                       "wrapper_run_us": median["wrapper"],
                       "paged_attention_torch_cache_us": median["torch_cache"],
                       "paged_attention_overhead_us": median["python"] - median["cpp"],
                       "wrapper_run_overhead_us": median["wrapper"] - median["cpp"]})
    if args.json:
        print(json.dumps({"rounds": args.rounds, "threads": torch.get_num_threads(),
                          "cases": report}, indent=2))
        return
    print(f"one CPU_FLASH decode call, bf16 cache, {Q_HEADS}/{KV_HEADS} heads, head {HEAD}; "
          f"medians of {args.rounds} interleaved rounds (us)")
    print(f"{'batch':>5} {'context':>7} {'C++':>9} {'paged_attention':>16} {'overhead':>9} "
          f"{'wrapper.run':>12} {'overhead':>9} {'torch-allocated cache':>22}")
    for r in report:
        print(f"{r['batch']:>5} {r['context']:>7} {r['cpp_us']:>9.1f} "
              f"{r['paged_attention_us']:>16.1f} {r['paged_attention_overhead_us']:>9.1f} "
              f"{r['wrapper_run_us']:>12.1f} {r['wrapper_run_overhead_us']:>9.1f} "
              f"{r['paged_attention_torch_cache_us']:>22.1f}")


if __name__ == "__main__":
    main()
