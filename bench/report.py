#!/usr/bin/env python3
"""The results table of bench/results/DATE_h100_COMMIT.md from one run's nxv_bench and jax_bench.py
JSON files: % copy against the copy workload of the same dtype in that run, and JAX's wall
time over ours (> 1: nxv faster), and JAX's pipelined time per call over our device time
where jax_bench.py measured it, rows paired by workload, dtype and precision (a row at
another precision than `highest` is named "workload (precision)").  usage: report.py NXV.json JAX.json"""
import json
import sys

nxv = json.load(open(sys.argv[1]))["results"]


def key(r):
    return r["workload"], r["dtype"], r.get("precision", "highest")


jax = {key(r): r for r in json.load(open(sys.argv[2]))["results"]}
copy = {r["dtype"]: r["gbps"] for r in nxv if r["workload"] == "copy"}
print("| workload | dtype | dispatches | nxv device ms | nxv wall ms | GB/s or TFLOP/s | % copy | JAX wall ms | JAX / nxv wall "
      "| JAX pipelined ms | JAX pipelined / nxv device |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in nxv:
    moves = not r["workload"].startswith("leapfrog") and not r.get("tflops")
    j = jax.get(key(r))
    precision = r.get("precision", "highest")
    cells = [r["workload"] + ("" if precision == "highest" else f" ({precision})"), r["dtype"], str(r["dispatches"]), f"{r['device_ms']:.3f}", f"{r['wall_ms']:.3f}",
             f"{r['gbps']:.0f}" if moves else f"{r['tflops']:.2f} TFLOP/s" if r.get("tflops") else "",
             f"{100 * r['gbps'] / copy[r['dtype']]:.0f}%" if moves else "",
             f"{j['wall_ms']:.3f}" if j else "", f"{j['wall_ms'] / r['wall_ms']:.2f}" if j else "",
             f"{j['pipelined_ms']:.3f}" if j and "pipelined_ms" in j else "",
             f"{j['pipelined_ms'] / r['device_ms']:.2f}" if j and "pipelined_ms" in j and r["device_ms"] else ""]
    print("| " + " | ".join(cells) + " |")
# Scans against a copy of their own size, where a launch's fixed cost weighs the same.
for r in nxv:
    same = next((c for c in nxv if c["workload"] == "copy_1e7" and c["dtype"] == r["dtype"]), None)
    if r["workload"] == "cumsum_1e7" and same:
        print(f"\ncumsum_1e7 {r['dtype']}: {100 * r['gbps'] / same['gbps']:.0f}% of copy_1e7's bandwidth "
              f"({r['device_ms']:.4f} ms against {same['device_ms']:.4f} ms)")
for name in ("leapfrog_d8", "leapfrog_d1000"):
    fori, ours = jax.get((name + "_fori", "f64", "highest")), next((r for r in nxv if r["workload"] == name), None)
    if fori and ours:
        print(f"\n{name}: JAX fori_loop {fori['wall_ms']:.3f} ms, nxv {ours['wall_ms']:.3f} ms: "
              f"{fori['wall_ms'] / ours['wall_ms']:.1f}x")
