#!/usr/bin/env python3
"""The slowest kernels of a cold-start log (NXV_COMPILE_LOG, runtime/compile_log.h).

Run a suite with an empty pipeline cache and Mesa's shader cache off, then list the kernels
whose compilation took the most CPU time (which, unlike wall time, a loaded machine does not
inflate), slowest first:

  NXV_CACHE_DIR=$(mktemp -d) MESA_SHADER_CACHE_DISABLE=true NXV_COMPILE_LOG=/tmp/c.tsv mix test
  python3 scripts/compile_times.py /tmp/c.tsv [--top 20]
"""
import argparse
import csv


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    rows = []
    with open(args.log, newline="") as f:
        for graph, kernel, wall_c, wall_p, cpu_c, cpu_p in csv.reader(f, delimiter="\t"):
            cpu_c, cpu_p = float(cpu_c), float(cpu_p)
            rows.append((cpu_c + cpu_p, cpu_c, cpu_p, float(wall_c) + float(wall_p), graph, kernel))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"{len(rows)} kernels compiled, {total / 1000:.1f} CPU s in all")
    print("| CPU ms | codegen | pipeline | wall ms | graph | kernel |")
    print("|---:|---:|---:|---:|---|---|")
    for cpu, c, p, wall, graph, kernel in rows[: args.top]:
        print(f"| {cpu:.0f} | {c:.0f} | {p:.0f} | {wall:.0f} | `{graph}` | `{kernel}` |")


if __name__ == "__main__":
    main()
