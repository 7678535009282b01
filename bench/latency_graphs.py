#!/usr/bin/env python3
"""Graphs whose time is one dependent chain of f64 operations, at several lengths, and the
fit of their device times: what each emulated operation costs a kernel too small to fill
the device (issue 31's leapfrog), apart from the kernel's fixed cost.

  latency_graphs.py make DIR       leapfrog_s{8,32,128}.json (bench/workloads.cpp's leapfrog
                                   at d = 8), add_s{32,512}.json and multiply_s{32,512}.json
                                   (x = x op y), and their inputs
  latency_graphs.py report FILE    FILE's lines "graph form ms" as a table: per form, each
                                   chain's time per step (the slope between its lengths) and
                                   fixed part (the intercept)
"""
import collections
import json
import random
import sys

D = 8


def node(nodes, op, args, shape=(D,)):
    nodes.append({"id": len(nodes), "op": op, "args": args, "type": "f64", "shape": list(shape)})
    return len(nodes) - 1


def parameter(index, shape):
    return {"id": index, "op": "parameter", "type": "f64", "shape": list(shape), "attrs": {"index": index}}


def leapfrog(steps):
    nodes = [parameter(0, (D,)), parameter(1, (D,)), parameter(2, ()),
             {"id": 3, "op": "constant", "type": "f64", "shape": [], "attrs": {"value": 0.5}}]
    half = node(nodes, "multiply", [2, 3], ())

    def kick(p, q):
        return node(nodes, "add", [p, node(nodes, "multiply", [half, node(nodes, "negate", [q])])])

    q, p = 0, 1
    for _ in range(steps):
        p = kick(p, q)
        q = node(nodes, "add", [q, node(nodes, "multiply", [2, p])])
        p = kick(p, q)
    return {"version": 1, "name": f"leapfrog_s{steps}", "nodes": nodes, "outputs": [q, p]}


def chain(op, steps):
    nodes = [parameter(0, (D,)), parameter(1, (D,))]
    x = 0
    for _ in range(steps):
        x = node(nodes, op, [x, 1])
    return {"version": 1, "name": f"{op}_s{steps}", "nodes": nodes, "outputs": [x]}


def tensor(values, shape):
    return {"type": "f64", "shape": list(shape), "data": values}


def make(out):
    rng = random.Random(1)
    uniform = lambda lo, hi: [rng.uniform(lo, hi) for _ in range(D)]
    graphs = {f"leapfrog_s{s}": leapfrog(s) for s in (8, 32, 128)}
    graphs.update({f"{op}_s{s}": chain(op, s) for op in ("add", "multiply") for s in (32, 512)})
    for name, g in graphs.items():
        json.dump(g, open(f"{out}/{name}.json", "w"))
    # The bench's: positions and momenta in [-1, 1], a step of 0.005; y near 1 keeps a chain's
    # sums and products normal.
    json.dump([tensor(uniform(-1, 1), (D,)), tensor(uniform(-1, 1), (D,)), tensor([0.005], ())],
              open(f"{out}/leapfrog_inputs.json", "w"))
    json.dump([tensor(uniform(-1, 1), (D,)), tensor([1 + x for x in uniform(-1e-3, 1e-3)], (D,))],
              open(f"{out}/chain_inputs.json", "w"))


def report(path):
    times = collections.defaultdict(dict)  # (chain, form) -> {steps: ms}
    for line in open(path):
        graph, form, ms = line.split()
        name, steps = graph.rsplit("_s", 1)
        times[(name, form)][int(steps)] = float(ms)
    print("| chain | form | ms by steps | per step (us) | fixed (us) |")
    print("|---|---|---|---|---|")
    for (name, form), t in sorted(times.items()):
        lo, hi = min(t), max(t)
        slope = (t[hi] - t[lo]) / (hi - lo) * 1e3
        by = ", ".join(f"{s}: {t[s]:.4f}" for s in sorted(t))
        print(f"| {name} | {form} | {by} | {slope:.4f} | {t[lo] * 1e3 - slope * lo:.2f} |")


if __name__ == "__main__":
    {"make": make, "report": report}[sys.argv[1]](sys.argv[2])
