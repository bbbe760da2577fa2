"""python3 -m attnrt.plot: the roofline of a bench report and the KV budget of a plan, as PNGs."""

import json
import subprocess
import sys

import pytest

from attnrt.plot import decode_intensity, prefill_intensity
from conftest import SOURCE_DIR

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run_plot(*args):
    return subprocess.run([sys.executable, "-m", "attnrt.plot", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def cli_plan(cli, example, *args):
    config = SOURCE_DIR / "examples" / f"{example}.json"
    return subprocess.run([cli, "plan", str(config), "--json", *args], check=True,
                          capture_output=True, text=True).stdout


def assert_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 20_000  # axes, bars and text, not an empty canvas


def decode_case(batch, q, kv, dtype, gbps, context=4096, **extra):
    return {"kind": "decode", "batch": batch, "context": context, "num_q_heads": q,
            "num_kv_heads": kv, "head_size": 128, "kv_dtype": dtype, "gbps": gbps,
            "limit": 40.0, "ratio_to_limit": gbps / 40.0, **extra}


def prefill_case(tokens, head_size, gflops):
    return {"kind": "prefill", "batch": 1, "tokens": tokens, "num_q_heads": 32,
            "num_kv_heads": 8, "head_size": head_size, "kv_dtype": "bfloat16",
            "gflops": gflops, "limit": 190.0, "ratio_to_limit": gflops / 190.0}


def bench_report(cases):
    return {"dram_read_gbps": 40.0, "paged_read_gbps": 30.0, "fma_peak_gflops": 190.0,
            "simd_target": "AVX2", "threads": 4, "hot": False, "cases": cases}


def test_decode_intensity_is_flops_per_kv_byte():
    # 4·D·(Hq/Hkv) FLOPs per key and KV head over 2·D·elem bytes of K and V.
    assert decode_intensity(32, 8, "float16") == pytest.approx(4.0)
    assert decode_intensity(8, 8, "bfloat16") == pytest.approx(1.0)
    assert decode_intensity(32, 8, "float32") == pytest.approx(2.0)
    assert decode_intensity(8, 8, "fp8_e4m3") == pytest.approx(2.0)


def test_prefill_intensity_follows_the_bench_flop_count():
    # 2·T²·D·Hq causal FLOPs over 2·T·D·Hkv·elem bytes of fresh K and V.
    assert prefill_intensity(2048, 32, 8, "bfloat16") == pytest.approx(4096.0)
    assert prefill_intensity(512, 8, 8, "float32") == pytest.approx(128.0)


@pytest.mark.parametrize("example", ["tiny-yoco", "gemma-3n-e2b", "llama-3-8b"])
def test_plan_png_with_and_without_kv_sharing(cli, tmp_path, example):
    plan = cli_plan(cli, example)
    sharing = any(b["shares_with"] for b in json.loads(plan)["bindings"])
    config = SOURCE_DIR / "examples" / f"{example}.json"
    assert sharing == ("kv_sharing_target" in config.read_text())
    source, image = tmp_path / "plan.json", tmp_path / "plan.png"
    source.write_text(plan)
    result = run_plot("plan", source, "-o", image, "--title", example)
    assert result.returncode == 0, result.stderr
    assert_png(image)


def test_plan_png_with_left_over_budget(cli, tmp_path):
    plan = cli_plan(cli, "tiny-yoco", "--memory", "73900000")  # not a whole number of blocks
    kv = json.loads(plan)["kv_cache"]
    assert kv["available_bytes"] > kv["bytes_total"]
    source, image = tmp_path / "plan.json", tmp_path / "plan.png"
    source.write_text(plan)
    assert run_plot("plan", source, "-o", image).returncode == 0
    assert_png(image)


@pytest.mark.parametrize("shape", ["few", "many", "newer"])
def test_roofline_png(tmp_path, shape):
    if shape == "few":  # every point labelled in place
        cases = [decode_case(1, 8, 8, "bfloat16", 30.0), decode_case(8, 32, 8, "bfloat16", 22.0),
                 decode_case(8, 32, 8, "float16", 24.0), prefill_case(2048, 128, 150.0)]
    elif shape == "many":  # a full run: contexts by marker area, the legend names the series
        cases = [decode_case(b, q, 8, d, 5.0 + b / 4 + c / 2048, context=c)
                 for b in (1, 8, 32) for q in (8, 32) for d in ("bfloat16", "float16")
                 for c in (512, 2048, 8192)]
        cases += [prefill_case(t, h, 60.0 + t / 100) for t in (512, 4096) for h in (128, 256)]
    else:  # per-case roofs, a prefill without its token count, and an unknown future kind
        cases = [decode_case(1, 8, 8, "bfloat16", 30.0, roofline_gbps=35.0, ratio_to_roofline=0.86),
                 {**prefill_case(1024, 128, 140.0), "tokens": None}, {"kind": "step", "us": 3.0}]
    source, image = tmp_path / "bench.json", tmp_path / "roofline.png"
    source.write_text(json.dumps(bench_report(cases)))
    result = run_plot("roofline", source, "-o", image)
    assert result.returncode == 0, result.stderr
    assert_png(image)


def bad_inputs(tmp_path):
    """(subcommand, file, what the message names) for reports the plots must refuse."""
    def write(name, text):
        (tmp_path / name).write_text(text)
        return tmp_path / name

    no_gflops = bench_report([prefill_case(512, 128, 10.0)])
    del no_gflops["cases"][0]["gflops"]
    bad_dtype = bench_report([decode_case(1, 8, 8, "int4", 10.0)])
    return [
        ("roofline", tmp_path / "absent.json", "cannot read"),
        ("plan", write("broken.json", "{\"kv_cache\": "), "not JSON"),
        ("roofline", write("list.json", "[1, 2]"), "expected a JSON object"),
        ("roofline", write("plan.json", json.dumps({"kv_cache": {}, "bindings": []})),
         "dram_read_gbps"),
        ("plan", write("bench.json", json.dumps(bench_report([]))), "kv_cache"),
        ("roofline", write("no_gflops.json", json.dumps(no_gflops)), "cases[0].gflops"),
        ("roofline", write("bad_dtype.json", json.dumps(bad_dtype)), "int4"),
        ("roofline", write("empty.json", json.dumps(bench_report([]))), "no decode or prefill"),
        ("plan", write("no_groups.json", json.dumps({"kv_cache": {"groups": []}, "bindings": []})),
         "kv_cache.bytes_total"),
    ]


def test_bad_input_exits_2_with_one_line(tmp_path):
    for command, source, named in bad_inputs(tmp_path):
        image = tmp_path / "out.png"
        result = run_plot(command, source, "-o", image)
        assert result.returncode == 2, (source, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert str(source) in lines[0] and named in lines[0], lines[0]
        assert "Traceback" not in result.stderr
        assert not image.exists()


def test_unwritable_output_exits_2(tmp_path):
    source = tmp_path / "bench.json"
    source.write_text(json.dumps(bench_report([decode_case(1, 8, 8, "bfloat16", 30.0)])))
    result = run_plot("roofline", source, "-o", tmp_path / "missing" / "out.png")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and "out.png" in result.stderr


def test_output_is_required():
    result = run_plot("plan", "plan.json")
    assert result.returncode == 2 and "--output" in result.stderr
