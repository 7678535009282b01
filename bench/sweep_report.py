#!/usr/bin/env python3
"""The dense sweep's table: nxv_bench --sweep rows joined by shape name and dtype with a
reference's (bench/jax_bench.py --sweep: XLA's pipelined time per call; or
bench/sweep_binary.exs: Nx.BinaryBackend's time per call), the reference's time over nxv's
device time (> 1: nxv faster), nxv's TFLOP/s, and per dtype the geomean of that ratio and the
count of shapes below 0.8x. With --plot, a PNG of the ratio per shape (needs matplotlib;
without it the plot is skipped with a note).

    usage: sweep_report.py NXV.json REF.json [--plot FILE.png] [--title TEXT]"""
import argparse
import json
import math
import sys

SLOW = 0.8  # the ratio under which a shape counts as well behind the reference


def reference_ms(row):
    """JAX rows carry XLA's pipelined time, sweep_binary.exs rows Nx.BinaryBackend's."""
    return row["pipelined_ms"] if "pipelined_ms" in row else row["binary_ms"]


def reference_label(doc):
    return "XLA pipelined ms" if "jax" in doc else "Nx.BinaryBackend ms"


def join(nxv_rows, ref_rows):
    """[(name, dtype, nxv row, reference ms, ratio)] in nxv's order, and the keys only one side has."""
    ref = {(r["workload"], r["dtype"]): reference_ms(r) for r in ref_rows}
    joined, missing = [], []
    for r in nxv_rows:
        k = (r["workload"], r["dtype"])
        if k in ref and r["device_ms"] > 0:
            joined.append((k[0], k[1], r, ref[k], ref[k] / r["device_ms"]))
        else:
            missing.append(f"{k[0]} {k[1]} (no reference row)" if k not in ref else f"{k[0]} {k[1]} (no device time)")
    ours = {(r["workload"], r["dtype"]) for r in nxv_rows}
    missing += [f"{k[0]} {k[1]} (reference only)" for k in ref if k not in ours]
    return joined, missing


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def ms(x):
    return f"{x:.4f}" if x < 10 else f"{x:.1f}"


def table(joined, label):
    lines = [f"| shape | dtype | nxv device ms | {label} | ratio (ref / nxv) | nxv TFLOP/s |", "|---|---|---|---|---|---|"]
    for name, dtype, r, ref, ratio in joined:
        tflops = f"{r['tflops']:.3g}" if r.get("tflops") else ""
        flag = " *" if ratio < SLOW else ""
        lines.append(f"| {name} | {dtype} | {ms(r['device_ms'])} | {ms(ref)} | {ratio:.2f}{flag} | {tflops} |")
    return lines


def summary(joined):
    lines = ["| dtype | shapes | geomean ratio | min | max | below 0.8x |", "|---|---|---|---|---|---|"]
    dtypes = list(dict.fromkeys(d for _, d, *_ in joined))
    for dtype in dtypes + (["all"] if len(dtypes) > 1 else []):
        ratios = [x[4] for x in joined if dtype in ("all", x[1])]
        lines.append(f"| {dtype} | {len(ratios)} | {geomean(ratios):.2f} | {min(ratios):.2f} | {max(ratios):.2f} | "
                     f"{sum(r < SLOW for r in ratios)} |")
    return lines


def plot(joined, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
    except ImportError:
        print(f"\n(no matplotlib: {path} not written)")
        return
    names = list(dict.fromkeys(x[0] for x in joined))
    dtypes = list(dict.fromkeys(x[1] for x in joined))
    fig, ax = plt.subplots(figsize=(max(10, 0.22 * len(names)), 6))
    for i, dtype in enumerate(dtypes):
        pts = [(names.index(n), ratio) for n, d, _, _, ratio in joined if d == dtype]
        ax.scatter([p[0] + (i - (len(dtypes) - 1) / 2) * 0.2 for p in pts], [p[1] for p in pts], s=18,
                   label=f"{dtype} (geomean {geomean([p[1] for p in pts]):.2f})")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(SLOW, color="red", linewidth=0.8, linestyle="--", label=f"{SLOW}x")
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=90, fontsize=7)
    ax.set_ylabel("reference time / nxv device time (> 1: nxv faster)")
    ax.set_title(title)
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nplot: {path}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nxv")
    ap.add_argument("reference")
    ap.add_argument("--plot", help="write the ratio per shape to this PNG")
    ap.add_argument("--title", help="the plot's title (default: the two files' devices)")
    a = ap.parse_args(argv)
    nxv, ref = json.load(open(a.nxv)), json.load(open(a.reference))
    joined, missing = join(nxv["results"], ref["results"])
    if not joined:
        sys.exit("sweep_report.py: no shape is in both files")
    print(f"nxv on {nxv.get('device', '?')}; reference on {ref.get('device', '?')}"
          + (f" (JAX {ref['jax']})" if "jax" in ref else "") + "\n")
    print("\n".join(summary(joined)) + "\n")
    print("\n".join(table(joined, reference_label(ref))))
    print(f"\n`*`: below {SLOW}x.")
    if missing:
        print("\nNot compared: " + ", ".join(missing))
    if a.plot:
        title = a.title or f"nxv on {nxv.get('device', '?')} against {reference_label(ref).removesuffix(' ms')} on {ref.get('device', '?')}"
        plot(joined, a.plot, title)


if __name__ == "__main__":
    main(sys.argv[1:])
