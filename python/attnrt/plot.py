"""Pictures of attnrt's JSON reports.

    python3 -m attnrt.plot roofline BENCH.json -o roofline.png   # attnrt bench attention --json
    python3 -m attnrt.plot plan PLAN.json -o plan.png            # attnrt plan CONFIG --json

Bad input (a missing file, bad JSON, the wrong report) exits with status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any, Optional

import matplotlib

matplotlib.use("Agg")  # headless: CI and build machines have no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1, "int8": 1}
DTYPE_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "fp8_e4m3": "fp8"}


class PlotInputError(ValueError):
    """A report the plots cannot use; the message is one line naming the file and the problem."""


def load_report(path: str | Path) -> dict:
    """Read a JSON object from `path`, turning every way it can be unusable into PlotInputError."""
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise PlotInputError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise PlotInputError(f"{path}: not JSON: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise PlotInputError(f"{path}: not JSON: {error.msg} (line {error.lineno})") from None
    if not isinstance(report, dict):
        raise PlotInputError(f"{path}: expected a JSON object, got {type(report).__name__}")
    return report


class _Reader:
    """Field access whose errors name the file, the key's path and the report expected."""

    def __init__(self, path: str | Path, what: str):
        self.path, self.what = path, what

    def fail(self, problem: str) -> PlotInputError:
        return PlotInputError(f"{self.path}: {problem} (expected {self.what})")

    def get(self, obj: Any, key: str, where: str, kind: type | tuple = object) -> Any:
        if not isinstance(obj, dict) or key not in obj:
            raise self.fail(f"missing key '{where}{key}'")
        if not isinstance(obj[key], kind):
            raise self.fail(f"key '{where}{key}' has the wrong type: {obj[key]!r}")
        return obj[key]

    def num(self, obj: Any, key: str, where: str, positive: bool = False) -> float:
        value = self.get(obj, key, where)
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value) or (positive and value <= 0)):
            kind = "a positive number" if positive else "a number"
            raise self.fail(f"key '{where}{key}' is not {kind}: {value!r}")
        return value


def decode_intensity(num_q_heads: float, num_kv_heads: float, kv_dtype: str) -> float:
    """FLOP per KV byte of decode attention for one query row.

    Per key and KV head the Hq/Hkv query heads spend 2·D FLOPs each on QK and 2·D on PV, and the
    cache supplies K and V, 2·D·elem bytes: I = 4·D·(Hq/Hkv) / (2·D·elem) = 2·(Hq/Hkv) / elem.
    The batch does not enter: each request reads its own cache.
    """
    return 2.0 * num_q_heads / num_kv_heads / DTYPE_BYTES[kv_dtype]


def prefill_intensity(tokens: float, num_q_heads: float, num_kv_heads: float,
                      kv_dtype: str) -> float:
    """FLOP per KV byte of causal prefill, with the FLOPs counted as the bench counts them.

    2·T²·D·Hq FLOPs (4·q·k·d per head, halved by the mask) over the T fresh tokens' K and V,
    2·T·D·Hkv·elem bytes: I = T·(Hq/Hkv) / elem.
    """
    return tokens * num_q_heads / num_kv_heads / DTYPE_BYTES[kv_dtype]


def _roofline_points(report: dict, r: _Reader) -> list[dict]:
    """One dict per plottable case: where it sits, its family (colour) and batch (marker)."""
    points = []
    for i, case in enumerate(r.get(report, "cases", "", list)):
        where = f"cases[{i}]."
        kind = r.get(case, "kind", where, str)
        if kind not in ("decode", "prefill"):
            continue  # a future kind this picture does not know how to place
        hq, hkv = r.num(case, "num_q_heads", where, True), r.num(case, "num_kv_heads", where, True)
        head, dtype = r.num(case, "head_size", where, True), r.get(case, "kv_dtype", where, str)
        if dtype not in DTYPE_BYTES:
            raise r.fail(f"unknown dtype {dtype!r} at '{where}kv_dtype'")
        r.num(case, "limit", where)
        point = {"kind": kind, "family": (kind, hq, hkv, dtype, head), "roof": None,
                 "ratio": r.num(case, "ratio_to_limit", where),
                 "heads": f"{hq:g}/{hkv:g} {DTYPE_SHORT.get(dtype, dtype)}"}
        if kind == "decode":
            x = decode_intensity(hq, hkv, dtype)
            point.update(x=x, y=r.num(case, "gbps", where, True) * x,
                         batch=r.num(case, "batch", where),
                         size=r.num(case, "context", where, True))
            # Newer reports carry the case's own bandwidth ceiling: prefer it when present.
            if isinstance(case.get("roofline_gbps"), (int, float)):
                point["roof"] = case["roofline_gbps"] * x
                point["ratio"] = case.get("ratio_to_roofline", point["ratio"])
        else:
            tokens = case.get("tokens")
            ok = isinstance(tokens, (int, float)) and not isinstance(tokens, bool) and tokens > 0
            point.update(x=prefill_intensity(tokens, hq, hkv, dtype) if ok else math.nan,
                         y=r.num(case, "gflops", where, True), batch=None, size=tokens if ok else 0)
        points.append(point)
    if not points:
        raise r.fail("no decode or prefill case in 'cases'")
    return points


def plot_roofline(path: str | Path, output: str | Path, title: Optional[str] = None) -> None:
    """Draw `attnrt bench attention --json` output as a log-log roofline into `output`."""
    report = load_report(path)
    r = _Reader(path, "the output of `attnrt bench attention --json`")
    dram = r.num(report, "dram_read_gbps", "", True)
    paged = r.num(report, "paged_read_gbps", "", True)
    peak, threads = r.num(report, "fma_peak_gflops", "", True), r.num(report, "threads", "")
    simd = r.get(report, "simd_target", "", str)
    points = _roofline_points(report, r)
    ridge = peak / dram
    right = 4 * max([p["x"] for p in points if not math.isnan(p["x"])] + [ridge])
    for p in points:  # prefill without a token count: a marker right of everything else
        p["x"] = right if math.isnan(p["x"]) else p["x"]
    xs = [p["x"] for p in points] + [ridge]
    xlo, xhi = min(xs) / 6, max(xs) * 4  # room on the left for the DRAM label
    ylo, yhi = min(min(p["y"] for p in points), dram * xlo) / 2, peak * 3

    # Colour: the family (kind, heads, dtype, head size); marker: the decode batch; area: the
    # context. Series sharing an intensity stand side by side to its right, never to its left,
    # so that no point is drawn above its roof.
    families = list(dict.fromkeys(p["family"] for p in points))
    batches = sorted({p["batch"] for p in points if p["batch"] is not None})
    columns: dict[float, dict[tuple, None]] = {}
    for p in points:
        p["series"] = (p["family"], p["batch"], p["size"] if p["kind"] == "prefill" else 0)
        columns.setdefault(round(math.log10(p["x"]), 3), {})[p["series"]] = None
    for p in points:
        keys = list(columns[round(math.log10(p["x"]), 3)])
        p["xd"] = p["x"] * 10 ** (0.035 * keys.index(p["series"]))
    contexts = sorted({p["size"] for p in points if p["kind"] == "decode"})
    vary = {k: len({f[4] for f in families if f[0] == k}) > 1 for k in ("decode", "prefill")}
    colors, markers = plt.get_cmap("tab10").colors, "o^Dvph<>"

    fig, ax = plt.subplots(figsize=(11, 7), layout="constrained")
    ax.set(xscale="log", yscale="log", xlim=(xlo, xhi), ylim=(ylo, yhi), ylabel="GFLOP/s",
           xlabel="arithmetic intensity (FLOP per KV byte)")
    grid = [xlo * (xhi / xlo) ** (k / 200) for k in range(201)]
    ax.plot(grid, [min(dram * x, peak) for x in grid], color="black", lw=2, zorder=2)
    ax.plot(grid, [min(paged * x, peak) for x in grid], color="0.45", lw=1.2, ls="--", zorder=2)
    ax.axvline(ridge, color="0.7", lw=0.8, ls=":", zorder=1)
    ax.text(xhi / 1.2, peak * 1.08, f"FMA peak {peak:.0f} GFLOP/s", ha="right", va="bottom")
    ax.text(ridge * 1.05, ylo * 1.15, f"ridge {ridge:.1f} FLOP/B", color="0.4", fontsize=8)
    fig.canvas.draw()  # the slope's angle on screen depends on the final axes size
    # The DRAM roof's label rides above it, where no case can be; the paged one is in the legend.
    x0 = max(xlo * 1.15, ylo * 4 / dram)
    (a, b), (c, d) = ax.transData.transform([(x0, dram * x0), (x0 * 2, dram * x0 * 2)])
    ax.text(x0, dram * x0 * 1.15, f"DRAM read {dram:.1f} GB/s", ha="left", va="bottom",
            rotation=math.degrees(math.atan2(d - b, c - a)), rotation_mode="anchor")

    labels = []
    for p in points:
        decode = p["kind"] == "decode"
        color = colors[families.index(p["family"]) % len(colors)]
        ax.scatter([p["xd"]], [p["y"]], color=color, edgecolors="black", linewidths=0.5, zorder=4,
                   marker=markers[batches.index(p["batch"]) % len(markers)] if decode else "s",
                   s=30 + 22 * math.log2(p["size"] / contexts[0]) if decode else 55)
        if p["roof"]:
            ax.plot([p["xd"]] * 2, [p["y"], p["roof"]], color=color, lw=0.8, alpha=0.6)
            ax.scatter([p["xd"]], [p["roof"]], marker="_", color=color, s=60, zorder=3)
        if len(points) <= 14:  # few enough to name each point in place
            tokens = f" T{p['size']:g}" if p["size"] else ""
            name = f"b{p['batch']:g}" if decode else f"prefill{tokens}"
            size = f" d{p['family'][4]:g}" if vary[p["kind"]] else ""
            left = math.log(p["xd"] / xlo) > 0.7 * math.log(xhi / xlo)  # near the right edge
            labels.append(ax.annotate(
                f"{name} {p['heads']}{size} {p['ratio']:.0%}", (p["xd"], p["y"]),
                xytext=(-7 if left else 7, 0), textcoords="offset points",
                ha="right" if left else "left", va="center", fontsize=8, zorder=5,
                arrowprops=dict(arrowstyle="-", color="0.6", lw=0.5, shrinkA=0, shrinkB=3)))
    _spread_labels(fig, ax, labels)

    ax.grid(True, which="major", color="0.9", lw=0.6)
    hot = ", hot cache" if report.get("hot") else ""
    note = "; labels: % of the case's own limit" if labels else ""
    ax.set_title(f"{title or 'attnrt CPU_FLASH attention roofline'}\n{simd}, {threads:g} threads"
                 f"{hot}: decode at KV GB/s x intensity, prefill at causal GFLOP/s{note}",
                 fontsize=11)
    handles = [Line2D([], [], color="black", lw=2, label="DRAM read / FMA peak"),
               Line2D([], [], color="0.45", lw=1.2, ls="--",
                      label=f"paged read probe {paged:.1f} GB/s")]
    for n, family in enumerate(families):
        heads = next(p["heads"] for p in points if p["family"] == family)
        handles.append(Line2D([], [], ls="", marker="o" if family[0] == "decode" else "s",
                              color=colors[n % len(colors)], mec="black", mew=0.5,
                              label=f"{family[0]} {heads}" + f" d{family[4]:g}" * vary[family[0]]))
    if len(batches) > 1:
        handles += [Line2D([], [], ls="", marker=markers[n % len(markers)], color="0.75",
                           mec="black", mew=0.5, label=f"decode batch {batch:g}")
                    for n, batch in enumerate(batches)]
    if len(contexts) > 1:
        handles.append(Line2D([], [], ls="",
                              label=f"marker area: context {contexts[0]:g}-{contexts[-1]:g}"))
    if any(len(keys) > 1 for keys in columns.values()):
        handles.append(Line2D([], [], ls="", label="series of one intensity: side by side from it"))
    ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9,
              ncol=2 if len(handles) > 7 else 1)
    fig.savefig(output, dpi=130)
    plt.close(fig)


def _spread_labels(fig, ax, labels) -> None:
    """Push overlapping annotations upwards (lowest first), showing a leader where one moved."""
    renderer = fig.canvas.get_renderer()
    placed = []
    for label in sorted(labels, key=lambda a: ax.transData.transform(a.xy)[1]):
        for _ in range(60):
            box = label.get_window_extent(renderer)
            hit = next((b for b in placed if b.overlaps(box)), None)
            if hit is None:
                break
            label.xyann = (label.xyann[0], label.xyann[1] + (hit.y1 - box.y0 + 1) * 72 / fig.dpi)
        label.arrow_patch.set_visible(label.xyann[1] != 0)
        placed.append(label.get_window_extent(renderer))


def _bytes(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}".replace(".00 ", " ")
    return f"{n:g} B"


def _short(layer: str) -> str:
    number = re.search(r"\d+", layer)
    return f"L{number.group()}" if number else layer


def _ranges(layers: list[str]) -> str:
    """'L20-23, 25-28' from layer names, so that many sharers fit under one segment."""
    ids = [int(m.group()) for m in (re.search(r"\d+", s) for s in layers) if m]
    if len(ids) != len(layers):
        return ", ".join(_short(s) for s in layers)
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return "L" + ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r))
                           for r in runs)


def plot_plan(path: str | Path, output: str | Path, title: Optional[str] = None) -> None:
    """Draw the KV budget of `attnrt plan --json` output: a row per group, a segment per layer."""
    report = load_report(path)
    r = _Reader(path, "the output of `attnrt plan CONFIG --json`")
    kv = r.get(report, "kv_cache", "", dict)
    groups = r.get(kv, "groups", "kv_cache.", list)
    total, blocks = r.num(kv, "bytes_total", "kv_cache."), r.num(kv, "num_blocks", "kv_cache.")
    budget = max(r.num(kv, "available_bytes", "kv_cache."), total)
    if not groups or total <= 0 or blocks <= 0:
        raise r.fail("a plan without a KV cache ('kv_cache.groups' empty or no bytes)")
    by_layer, sharers = {}, {}
    for i, b in enumerate(r.get(report, "bindings", "", list)):
        by_layer[r.get(b, "layer", f"bindings[{i}].", str)] = b
        r.num(b, "offset_bytes", f"bindings[{i}].")
        if b.get("shares_with"):
            sharers.setdefault(b["shares_with"], []).append(b["layer"])

    rows = []  # (label, a layer's bytes, owning layers in slot order)
    for g, group in enumerate(groups):
        where = f"kv_cache.groups[{g}]."
        page = r.num(group, "page_size_bytes", where, True)
        names, kind = r.get(group, "layer_names", where, list), r.get(group, "kind", where, str)
        owners = [n for n in names if n in by_layer and not by_layer[n].get("shares_with")]
        width = page * blocks  # a layer's view: one page per block id
        label = f"group {group.get('id', g)}: {kind}\n{len(owners)} x {_bytes(width)}"
        label += f", {len(names) - len(owners)} sharing" if len(names) > len(owners) else ""
        rows.append((f"{label}\npage {_bytes(page)}", width, owners))
    # Layer-outermost layouts give each layer a region at its binding's offset; block-outermost
    # ones interleave the layers inside every block, so those are drawn as logical slots instead.
    logical = any(by_layer[b]["offset_bytes"] < by_layer[a]["offset_bytes"] + w
                  for _, w, owners in rows for a, b in zip(owners, owners[1:]))

    fig, ax = plt.subplots(figsize=(12, 1.9 + 0.75 * (len(rows) + 1)), layout="constrained")
    unit, scale = ("GiB", 1 << 30) if budget >= 1 << 30 else ("MiB", 1 << 20)
    height = 0.7
    # Row 0: the budget, the backing carved from it, and the rest that holds no whole block.
    ax.barh(0, total / scale, height, color="#4c566a")
    ax.text(total / scale / 2, 0, f"backing {_bytes(total)}: {blocks:,.0f} blocks of "
            f"{_bytes(total / blocks)}", color="white", ha="center", va="center", fontsize=9)
    if budget > total:
        ax.barh(0, (budget - total) / scale, height, left=total / scale, color="0.75")
        ax.annotate(f"unused {_bytes(budget - total)}", (budget / scale, height / 2),
                    xytext=(0, -2), textcoords="offset points", ha="right", va="top",
                    fontsize=8, color="0.3")
    colors = plt.get_cmap("tab10").colors
    for g, (_, width, owners) in enumerate(rows, start=1):
        base = colors[(g - 1) % len(colors)]
        for s, name in enumerate(owners):
            start = (s * width if logical else by_layer[name]["offset_bytes"]) / scale
            # Adjacent layers alternate between two shades so that their boundary shows.
            shade = base if s % 2 == 0 else tuple(0.35 + 0.65 * c for c in base)
            ax.barh(g, width / scale, height, left=start, color=shade, edgecolor="white", lw=0.6)
            shared, wide = sharers.get(name), width / budget > 0.022
            if shared:  # sharing layers alias the owner's bytes: hatch it, add nothing
                ax.barh(g, width / scale, height, left=start, color="none", edgecolor="black",
                        hatch="///", lw=0)
            if wide or s % 4 == 0:  # narrow segments: name every fourth
                text = _short(name) + (f"\nread by {_ranges(shared)}" if shared and wide else "")
                box = dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85)
                ax.text(start + width / scale / 2, g, text, ha="center", va="center",
                        fontsize=7.5 if shared else 8, bbox=box if shared else None)
    ax.set_yticks(range(len(rows) + 1), [f"budget\n{_bytes(budget)}"] + [row[0] for row in rows],
                  fontsize=8)
    ax.set_ylim(len(rows) + 0.6, -1.0)
    ax.set_xlim(0, budget / scale)
    ax.set_xlabel(f"{'logical slot' if logical else 'byte offset'} in the KV backing ({unit}); "
                  "the groups overlay the same bytes: a block id belongs to one group at a time")
    model = report["model"] if isinstance(report.get("model"), dict) else {}
    tp, capacity = model.get("tensor_parallel_size", 1), kv.get("tokens_capacity")
    ax.set_title(f"{title or 'KV cache plan: ' + str(model.get('name', Path(path).stem))}\n"
                 f"{kv.get('layout', '?')}, {kv.get('dtype', '?')}, "
                 f"{kv.get('block_size', '?')}-token blocks"
                 + (f", {capacity:,} tokens of capacity" if isinstance(capacity, int) else "")
                 + (f", per rank of {tp}" if tp != 1 else ""), fontsize=11)
    handles = [Patch(color=colors[0], label="a layer's own K/V: one page per block id")]
    if sharers:
        handles.append(Patch(fc="white", ec="black", hatch="///",
                             label="also read by KV-sharing layers (no bytes of their own)"))
    if budget > total:
        handles.append(Patch(color="0.75", label="budget left over (less than a block)"))
    ax.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8, frameon=False)
    fig.savefig(output, dpi=130)
    plt.close(fig)


def main(argv: Optional[list[str]] = None) -> int:
    """The command line: `roofline BENCH.json -o PNG` or `plan PLAN.json -o PNG`."""
    parser = argparse.ArgumentParser(prog="python3 -m attnrt.plot",
                                     description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("roofline", "the roofline of `attnrt bench attention --json`"),
                            ("plan", "the KV budget split of `attnrt plan CONFIG --json`")):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("input", help="the JSON report")
        sub.add_argument("-o", "--output", required=True, help="image to write (.png, .svg, .pdf)")
        sub.add_argument("--title", help="replaces the first line of the title")
    args = parser.parse_args(argv)
    if Path(args.output).suffix[1:].lower() not in FigureCanvasAgg.get_supported_filetypes():
        parser.exit(2, f"attnrt.plot: error: {args.output}: not an image name (.png, .svg, .pdf)\n")
    try:
        (plot_roofline if args.command == "roofline" else plot_plan)(args.input, args.output,
                                                                     args.title)
    except PlotInputError as error:
        parser.exit(2, f"attnrt.plot: error: {error}\n")
    except OSError as error:  # the output cannot be written
        parser.exit(2, f"attnrt.plot: error: {args.output}: {error.strerror or error}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
