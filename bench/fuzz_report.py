#!/usr/bin/env python3
"""Sorts the findings of `nxv_fuzz_diff` logs into classes, so that the ones no known cause
explains are read first.

    fuzz_report.py LOG... [--list CLASS,...]

Classes, in the order a finding is tested against them (docs/reliability.md says why the
first two are not bugs of the compiler):
  accumulation  a float sum (dot, sum, product, the float scans, attention, float
                indexed_add): the device sums in f32, the interpreter in double
  threshold     an inexact float op (a transcendental, a division, pow) whose result
                reaches a comparison, a rounding, a conversion to an integer, a sort or an
                argmax, or is f16 or bf16 (computed in f32 and rounded to the type): one ulp
                either way crosses the threshold
  device-error  the device refused or failed a graph that verifies
  interpreter   the interpreter refused a graph that verifies
  generator     the generator made a graph the verifier rejects
  other         none of the above: read each by hand
Prints a table of counts (and of those whose sides differ in kind: NaN, an infinity or a
finite value), then each finding of the classes in --list (default: device-error,
interpreter, generator, other) with its seed, the output's op and type, and the message.
"""
import argparse
import collections
import json
import re

SUMS = {"dot", "sum", "product", "cumulative_sum", "cumulative_product", "attention"}
INEXACT = {"exp", "expm1", "log", "log1p", "sigmoid", "tanh", "sin", "cos", "tan", "asin",
           "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "erf_inv",
           "rsqrt", "cbrt", "divide", "pow", "atan2"}
THRESHOLDS = {"greater", "less", "greater_equal", "less_equal", "equal", "not_equal", "floor",
              "ceil", "round", "sign", "argsort", "argmax", "argmin", "max", "min",
              "is_nan", "is_infinity", "logical_and", "logical_or", "logical_xor", "logical_not",
              "select", "clip", "quotient", "remainder"}
FLOATS = {"f16", "bf16", "f32", "f64"}


def findings(paths):
    """(seed, message, graph or None) for each finding in the logs."""
    for path in paths:
        seed = msg = None
        for line in open(path, errors="replace"):
            m = re.match(r"seed (\d+): (.*)", line)
            if m:
                if seed is not None:
                    yield seed, msg, None
                seed, msg = int(m.group(1)), m.group(2)
            elif line.startswith("  graph: ") and seed is not None:
                yield seed, msg, json.loads(line[len("  graph: "):])
                seed = None
        if seed is not None:
            yield seed, msg, None


def nodes_of(graph):
    """Every node of the graph, those of while/cond regions included."""
    for n in graph["nodes"]:
        yield n
        for region in (n.get("regions") or {}).values():
            yield from nodes_of(region)


def classify(msg, graph):
    if msg.startswith("device:"):
        return "device-error"
    if msg.startswith("the interpreter"):
        return "interpreter"
    if msg.startswith("the generator") or graph is None:
        return "generator"
    nodes = list(nodes_of(graph))
    ops = {n["op"] for n in nodes}
    by_id = {n["id"]: n for n in graph["nodes"]}
    float_scatter = any(n["op"] == "indexed_add" and n["type"] in FLOATS for n in nodes)
    if ops & SUMS or float_scatter:
        return "accumulation"
    float_to_int = any(n["op"] == "as_type" and n["type"] not in FLOATS and
                       by_id.get((n.get("args") or [None])[0], {}).get("type") in FLOATS for n in nodes)
    narrow_inexact = any(n["op"] in INEXACT and n["type"] in ("f16", "bf16") for n in nodes)
    if ops & INEXACT and (ops & THRESHOLDS or float_to_int) or narrow_inexact:
        return "threshold"
    return "other"


def special_mismatch(msg):
    """Whether the two sides differ in kind (NaN, an infinity, a finite value), not in digits:
    an accumulation or threshold finding of that kind is the one to read first there."""
    m = re.search(r"is (\S+), the interpreter gives (\S+)", msg)
    if not m:
        return False
    kind = lambda v: "nan" if "nan" in v else v.lstrip("-") if "inf" in v else "finite"
    return kind(m.group(1)) != kind(m.group(2))


def output_of(msg, graph):
    m = re.search(r"output (\d+)", msg)
    if not m or graph is None:
        return ""
    nid = graph["outputs"][int(m.group(1))]
    n = next((n for n in graph["nodes"] if n["id"] == nid), None)
    return f"{n['op']} {n['type']}{n['shape']}" if n else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--list", default="device-error,interpreter,generator,other")
    a = ap.parse_args()
    classes = collections.defaultdict(list)
    for seed, msg, graph in findings(a.logs):
        classes[classify(msg, graph)].append((seed, msg, graph))
    print("| class | findings | of which NaN, inf or finite differ |\n|---|---|---|")
    for c in ("accumulation", "threshold", "device-error", "interpreter", "generator", "other"):
        print(f"| {c} | {len(classes[c])} | {sum(special_mismatch(msg) for _, msg, _ in classes[c])} |")
    for c in a.list.split(","):
        for seed, msg, graph in sorted(classes[c]):
            ops = sorted({n["op"] for n in nodes_of(graph)}) if graph else []
            print(f"\n{c} seed {seed}: {output_of(msg, graph)}: {msg}\n  ops: {' '.join(ops)}")


if __name__ == "__main__":
    main()
