#!/usr/bin/env python3
"""Two builds' nxv_bench rows side by side: the best device time of each row over the rounds
of bench/run_device.sh compare (base_N.json, new_N.json), and new over base (< 1: faster).
    usage: compare.py DIR"""
import glob
import json
import sys


def best(pattern):
    rows = {}
    for path in sorted(glob.glob(pattern)):
        for r in json.load(open(path))["results"]:
            k = (r["workload"], r["dtype"], r.get("precision", "highest"))
            if k not in rows or r["device_ms"] < rows[k]["device_ms"]:
                rows[k] = r
    return rows


base, new = best(f"{sys.argv[1]}/base_*.json"), best(f"{sys.argv[1]}/new_*.json")
print("| workload | dtype | base dispatches | new dispatches | base device ms | new device ms | new / base |")
print("|---|---|---|---|---|---|---|")
for k, n in new.items():
    b = base.get(k)
    name = k[0] + ("" if k[2] == "highest" else f" ({k[2]})")
    cells = [name, k[1], str(b["dispatches"]) if b else "", str(n["dispatches"]), f"{b['device_ms']:.3f}" if b else "",
             f"{n['device_ms']:.3f}", f"{n['device_ms'] / b['device_ms']:.2f}" if b and b["device_ms"] else ""]
    print("| " + " | ".join(cells) + " |")
