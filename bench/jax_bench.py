#!/usr/bin/env python3
"""The issue-3 workloads in JAX/XLA, timed the same way as nxv_bench (median of N after warm-up).

    python3 bench/jax_bench.py [--size small|full] [--runs 30] [--filter SUBSTR,...] [--dtypes f32,f64,f16,bf16]
                               [--precision highest,high,default,BF16_BF16_F32_X3,...] [--error] [--json FILE]

Run on the same machine right after nxv_bench (one lease of it) so the ratios are comparable.

--precision times the dense rows once per listed precision of their dots and convolutions: a
jax.lax.Precision level (on NVIDIA GPUs XLA computes `high` and `default` as TF32) or a
jax.lax.DotAlgorithmPreset name such as BF16_BF16_F32_X3 (bf16 x3, nxv's `high`) or
BF16_BF16_F32 (nxv's `default`). --error adds, for the square dots, the largest error against
a float64 product of the same inputs relative to its largest element.
"""
import argparse
import json
import statistics
import time

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402  (x64 must be enabled before arrays are made)


def precision_of(name):
    """A jax.lax.Precision level by its name, else the name (a DotAlgorithmPreset's)."""
    return jax.lax.Precision[name.upper()] if name in ("highest", "high", "default") else name


def workloads(dtype, flat, side, precision="highest"):
    f = {"f64": jnp.float64, "f32": jnp.float32, "f16": jnp.float16, "bf16": jnp.bfloat16}[dtype]
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    x = jax.random.uniform(k1, (flat,), f, -1, 1)
    y = jax.random.uniform(k2, (flat,), f, -1, 1)
    m = jax.random.uniform(k1, (side, side), f, -1, 1)
    w = [
        ("copy", lambda a: a.reshape(flat // 2, 2) + 0, (x,), 2 * x.nbytes),
        ("add", lambda a, b: a + b, (x, y), 3 * x.nbytes),
        ("chain", lambda a, b: jnp.tanh(a * b + 1) * jax.nn.sigmoid(a) - jnp.exp(-b * b), (x, y), 3 * x.nbytes),
        ("sum", lambda a: jnp.sum(a), (x,), x.nbytes),
        ("rowsum", lambda a: jnp.sum(a, axis=1), (m,), m.nbytes + m.nbytes // side),
        ("softmax", lambda a: jax.nn.softmax(a, axis=-1), (m,), 2 * m.nbytes),
        ("transpose", lambda a: a.T + 0, (m,), 2 * m.nbytes),
    ]
    # Scans at fixed sizes (nxv_bench's cumsum rows): a 1024² matrix along each axis, 10^7 in one line.
    c = jax.random.uniform(k1, (1024, 1024), f, -1, 1)
    line = jax.random.uniform(k2, (10**7,), f, -1, 1)
    w.append(("cumsum_1024x1024", lambda a: jnp.cumsum(a, axis=1), (c,), 2 * c.nbytes))
    w.append(("cumsum_1024x1024_axis0", lambda a: jnp.cumsum(a, axis=0), (c,), 2 * c.nbytes))
    w.append(("cumsum_1e7", lambda a: jnp.cumsum(a), (line,), 2 * line.nbytes))
    w.append(("copy_1e7", lambda a: a.reshape(10**7 // 2, 2) + 0, (line,), 2 * line.nbytes))
    # Stable argsorts at fixed sizes (nxv_bench's argsort rows): one line of 10^6, 4096 of 256.
    sl = jax.random.uniform(k1, (10**6,), f, -1, 1)
    sr = jax.random.uniform(k2, (4096, 256), f, -1, 1)
    order = lambda a: jnp.argsort(a, axis=-1, stable=True).astype(jnp.int32)  # noqa: E731
    w.append(("argsort_1e6", order, (sl,), sl.nbytes + sl.size * 4))
    w.append(("argsort_4096x256", order, (sr,), sr.nbytes + sr.size * 4))
    # Dense work at the precision asked (`highest`, exact f32, is what nxv computes by default).
    hi = precision_of(precision)
    mm = lambda a, b: jnp.matmul(a, b, precision=hi)  # noqa: E731
    for n in (1024, 4096) if side > 1024 else (1024,):
        a = jax.random.uniform(k1, (n, n), f, -1, 1)
        b = jax.random.uniform(k2, (n, n), f, -1, 1)
        w.append((f"dot{n}", mm, (a, b), 3 * a.nbytes, 2.0 * n**3))
    # A long contraction into few outputs (nxv splits it: split-reduction's split-K).
    a = jax.random.uniform(k1, (64, 65536), f, -1, 1)
    b = jax.random.uniform(k2, (65536, 64), f, -1, 1)
    w.append(("dot_splitk", mm, (a, b), 2 * a.nbytes + 64 * 64 * a.dtype.itemsize, 2.0 * 64 * 64 * 65536))
    q = jax.random.uniform(k1, (16, 512, 64), f, -1, 1)
    kk = jax.random.uniform(k2, (16, 512, 64), f, -1, 1)
    w.append(("attention", lambda a, b: jnp.einsum("hid,hjd->hij", a, b, precision=hi), (q, kk),
              2 * q.nbytes + q.nbytes * 8, 2.0 * 16 * 512 * 512 * 64))
    widths = (784, 1024, 1024, 10)
    params = []
    for i in range(3):
        params.append(jax.random.uniform(jax.random.fold_in(k1, i), (widths[i], widths[i + 1]), f, -1, 1))
        params.append(jax.random.uniform(jax.random.fold_in(k2, i), (widths[i + 1],), f, -1, 1))
    xb = jax.random.uniform(k1, (256, 784), f, -1, 1)

    def mlp(x, *ps):
        for i in range(3):
            x = mm(x, ps[2 * i]) + ps[2 * i + 1]
            if i < 2:
                x = jnp.maximum(x, 0)
        return jax.nn.softmax(x, axis=-1)

    w.append(("mlp_infer", mlp, (xb, *params), xb.nbytes, 2.0 * 256 * sum(widths[i] * widths[i + 1] for i in range(3))))
    yb = jax.nn.one_hot(jax.random.randint(k2, (256,), 0, 10), 10, dtype=f)

    def loss(ps, x, y):
        for i in range(3):
            x = mm(x, ps[2 * i]) + ps[2 * i + 1]
            if i < 2:
                x = jnp.maximum(x, 0)
        return jnp.mean(jax.nn.logsumexp(x, axis=-1) - jnp.sum(x * y, axis=-1))

    def train_step(x, y, *ps):
        value, grads = jax.value_and_grad(loss)(ps, x, y)
        return value, [p - 0.01 * g for p, g in zip(ps, grads)]

    macs = [256 * widths[i] * widths[i + 1] for i in range(3)]
    w.append(("mlp_train", train_step, (xb, yb, *params), 0, 2.0 * (2 * macs[0] + 3 * macs[1] + 3 * macs[2])))
    w.extend(conv_workloads(f, k1, k2, hi))
    if dtype == "f64":
        for d in (8, 1000):
            q = jax.random.normal(k1, (d,), f)
            p = jax.random.normal(k2, (d,), f)
            eps = jnp.asarray(0.01, f)
            w.append((f"leapfrog_d{d}", leapfrog_unrolled, (q, p, eps), 4 * q.nbytes))
            w.append((f"leapfrog_d{d}_fori", leapfrog_fori, (q, p, eps), 4 * q.nbytes))
    return w


def conv_workloads(f, k1, k2, hi):
    """The conv rows: issue 16's 3x3 conv, and one SGD step of a small CNN (bench/graphs/)."""
    nchw = ("NCHW", "OIHW", "NCHW")

    def conv(x, k):
        return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=nchw, precision=hi)

    x = jax.random.uniform(k1, (32, 64, 56, 56), f, -1, 1)
    k = jax.random.uniform(k2, (64, 64, 3, 3), f, -1, 1)
    w = [("conv3x3", conv, (x, k), x.nbytes * 2 + k.nbytes, 2.0 * 32 * 56 * 56 * 64 * 64 * 9)]

    # conv3x3(3->32)-relu-conv3x3(32->64)-relu-maxpool2-dense(10), mean softmax cross-entropy
    shapes = [(32, 3, 3, 3), (32,), (64, 32, 3, 3), (64,), (64 * 16 * 16, 10), (10,)]
    params = [jax.random.uniform(jax.random.fold_in(k1, i), s, f, -1, 1) * 0.1 for i, s in enumerate(shapes)]
    xb = jax.random.uniform(k1, (32, 3, 32, 32), f, -1, 1)
    yb = jax.nn.one_hot(jax.random.randint(k2, (32,), 0, 10), 10, dtype=f)

    def loss(ps, x, y):
        k1_, b1, k2_, b2, wd, bd = ps
        h = jax.nn.relu(conv(x, k1_) + b1.reshape(1, -1, 1, 1))
        h = jax.nn.relu(conv(h, k2_) + b2.reshape(1, -1, 1, 1))
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        logits = jnp.matmul(h.reshape(h.shape[0], -1), wd, precision=hi) + bd
        return jnp.mean(jnp.sum((jax.nn.logsumexp(logits, axis=-1, keepdims=True) - logits) * y, axis=-1))

    def train_step(x, y, *ps):
        value, grads = jax.value_and_grad(loss)(ps, x, y)
        return value, [p - 0.01 * g for p, g in zip(ps, grads)]

    w.append(("cnn_train", train_step, (xb, yb, *params), 0))
    return w


def _step(q, p, eps):
    p = p + eps / 2 * (-q)
    q = q + eps * p
    p = p + eps / 2 * (-q)
    return q, p


def leapfrog_unrolled(q, p, eps):
    for _ in range(32):
        q, p = _step(q, p, eps)
    return q, p


def leapfrog_fori(q, p, eps):
    return jax.lax.fori_loop(0, 32, lambda _, s: _step(s[0], s[1], eps), (q, p))


def time_call(fn, args, runs, warmup=3, warmup_s=1.5):
    # As nxv_bench: warm up for a duration too, so the GPU is at its boost clock when timing starts.
    t_end = time.perf_counter() + warmup_s
    i = 0
    while i < warmup or time.perf_counter() < t_end:
        jax.block_until_ready(fn(*args))
        i += 1
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def time_pipelined(fn, args, runs):
    """Time per call of `runs` calls dispatched back to back and waited for once: XLA's
    launches overlap the host's dispatch, so this approaches its device time."""
    t0 = time.perf_counter()
    out = [fn(*args) for _ in range(runs)]
    jax.block_until_ready(out)
    return (time.perf_counter() - t0) * 1e3 / runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=["small", "full"], default="small")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json")
    ap.add_argument("--filter", default="", help="only workloads whose name contains one of these (comma-separated)")
    ap.add_argument("--dtypes", default="f32,f64", help="comma-separated: f64, f32, f16, bf16 (as nxv_bench)")
    ap.add_argument("--precision", default="highest", help="comma-separated precisions of dots and convolutions")
    ap.add_argument("--error", action="store_true", help="the square dots' error against a float64 product")
    a = ap.parse_args()
    rows = []
    print("jax", jax.__version__, "device:", jax.devices()[0].device_kind)
    for dtype in a.dtypes.split(","):
        flat = (16 << 20 if dtype == "f64" else 64 << 20) if a.size == "full" else 1 << 20
        side = 8192 if a.size == "full" else 1024
        for precision in a.precision.split(","):
            for name, fn, args, nbytes, *flops in workloads(dtype, flat, side, precision):
                if not any(f in name for f in a.filter.split(",")):
                    continue
                ms = time_call(jax.jit(fn), args, a.runs)
                piped = time_pipelined(jax.jit(fn), args, a.runs)
                gbps = nbytes / (ms / 1e3) / 1e9
                tflops = flops[0] / (ms / 1e3) / 1e12 if flops else 0
                row = {"workload": name, "dtype": dtype, "precision": precision, "wall_ms": ms, "pipelined_ms": piped, "gbps": gbps, "tflops": tflops}
                line = f"{name:18s} {dtype:4s} wall {ms:9.3f} ms  pipelined {piped:9.3f} ms  {gbps:8.1f} GB/s" + (f"  {tflops:8.3f} TFLOP/s" if flops else "")
                if a.error and name.startswith("dot"):
                    got = np.asarray(jax.jit(fn)(*args), np.float64)
                    want = np.asarray(args[0], np.float64) @ np.asarray(args[1], np.float64)
                    row["max_rel_error"] = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
                    line += f"  error {row['max_rel_error']:.3g}"
                rows.append(row)
                print(line + f"  precision {precision}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": jax.devices()[0].device_kind, "jax": jax.__version__, "results": rows}, f, indent=2)


if __name__ == "__main__":
    main()
