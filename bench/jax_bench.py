#!/usr/bin/env python3
"""The issue-3 workloads in JAX/XLA, timed the same way as nxv_bench (median of N after warm-up).

    python3 bench/jax_bench.py [--size small|full] [--runs 30] [--filter SUBSTR,...] [--dtypes f32,f64,f16,bf16]
                               [--precision highest,high,default,BF16_BF16_F32_X3,...] [--error] [--json FILE]
                               [--sweep] [--warmup-s 1.5]

Run on the same machine right after nxv_bench (one lease of it) so the ratios are comparable.

--precision times the dense rows once per listed precision of their dots and convolutions: a
jax.lax.Precision level (on NVIDIA GPUs XLA computes `high` and `default` as TF32) or a
jax.lax.DotAlgorithmPreset name such as BF16_BF16_F32_X3 (bf16 x3, nxv's `high`) or
BF16_BF16_F32 (nxv's `default`). --sweep times nxv_bench --sweep's shapes instead, by the same
names (bench/sweep.cpp; f32, bf16 and f16 unless --dtypes says otherwise; f32 dots at the
first --precision, the others at XLA's default). --error adds, for the square dots, the largest error against
a float64 product of the same inputs relative to its largest element.
"""
import argparse
import json
import os
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
    # Reductions over many rows (nxv_bench's layernorm_* and softmax_* rows).
    rows = 65536 if side > 1024 else 16384
    for name, cols in (("layernorm", 768 if side > 1024 else 256), ("softmax", 2048 if side > 1024 else 256)):
        r = jax.random.uniform(k2, (rows, cols), f, -1, 1)
        if name == "layernorm":
            fn = lambda a: (a - a.mean(-1, keepdims=True)) * jax.lax.rsqrt(  # noqa: E731
                jnp.mean(jnp.square(a - a.mean(-1, keepdims=True)), -1, keepdims=True) + 1e-5)
        else:
            fn = lambda a: jax.nn.softmax(a, axis=-1)  # noqa: E731
        w.append((f"{name}_{rows}x{cols}", fn, (r,), 2 * r.nbytes))
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


# --- the dense sweep (nxv_bench --sweep; shapes and names as bench/sweep.cpp) ---

def _sweep_dense(x, w, b, hi):
    return jnp.matmul(x, w, precision=hi) + b


def _sweep_linear(rows, d_in, d_out):
    shapes = [(rows, d_in), (d_in, d_out), (d_out,)]
    return lambda hi: (lambda x, w, b: _sweep_dense(x, w, b, hi)), shapes


def _sweep_ffn(rows, width, hidden, tanh_gelu):
    shapes = [(rows, width), (width, hidden), (hidden,), (hidden, width), (width,)]

    def make(hi):
        def ffn(x, w1, b1, w2, b2):
            h = jax.nn.gelu(_sweep_dense(x, w1, b1, hi), approximate=tanh_gelu)
            return _sweep_dense(h, w2, b2, hi)
        return ffn
    return make, shapes


def _attention(s, d, causal, hi, scale):
    def attn(q, k, v):
        scores = scale(jnp.einsum("bhqd,bhkd->bhqk", q, k, precision=hi))
        if causal:
            keep = jnp.arange(s)[:, None] >= jnp.arange(s)[None, :]
            scores = jnp.where(keep, scores, -jnp.inf)
        e = jnp.exp(scores - jnp.max(scores, axis=-1, keepdims=True))
        return jnp.einsum("bhqk,bhkd->bhqd", e / jnp.sum(e, axis=-1, keepdims=True), v, precision=hi)
    return attn


def _sweep_attention(b, heads, s, d, causal):
    shapes = [(b, heads, s, d)] * 3
    return lambda hi: _attention(s, d, causal, hi, lambda x: x * (1 / d**0.5)), shapes


def _sweep_attention_grad(b, heads, s, d, causal):
    """The gradients of sum(attention(q, k, v) * g) with respect to q, k and v (scores / √d)."""
    shapes = [(b, heads, s, d)] * 4

    def make(hi):
        attn = _attention(s, d, causal, hi, lambda x: x / d**0.5)

        def attn_grad(q, k, v, g):
            return jax.vjp(attn, q, k, v)[1](g)
        return attn_grad
    return make, shapes


def _sweep_conv(batch, cin, side, cout, taps, stride, pad):
    shapes = [(batch, cin, side, side), (cout, cin, taps, taps)]

    def make(hi):
        return lambda x, k: jax.lax.conv_general_dilated(
            x, k, (stride, stride), [(pad, pad), (pad, pad)], dimension_numbers=("NCHW", "OIHW", "NCHW"), precision=hi)
    return make, shapes


_MLP_WIDTHS = (784, 1024, 1024, 10)


def _mlp_forward(x, ps, hi):
    for i in range(3):
        x = jnp.matmul(x, ps[2 * i], precision=hi) + ps[2 * i + 1]
        if i < 2:
            x = jnp.maximum(x, 0)
    return x


def _sweep_mlp_infer(batch):
    shapes = [(batch, 784)] + [s for i in range(3) for s in ((_MLP_WIDTHS[i], _MLP_WIDTHS[i + 1]), (_MLP_WIDTHS[i + 1],))]

    def make(hi):
        def infer(x, *ps):
            h = _mlp_forward(x, ps, hi)
            e = jnp.exp(h - jnp.max(h, axis=-1, keepdims=True))
            return e / jnp.sum(e, axis=-1, keepdims=True)
        return infer
    return make, shapes


def _sweep_mlp_train(batch):
    _, params = _sweep_mlp_infer(batch)
    shapes = [params[0], (batch, 10)] + params[1:]

    def make(hi):
        def loss(ps, x, y):
            h = _mlp_forward(x, ps, hi)
            return jnp.mean(jax.nn.logsumexp(h, axis=-1) - jnp.sum(h * y, axis=-1))

        def train_step(x, y, *ps):
            value, grads = jax.value_and_grad(loss)(ps, x, y)
            return value, [p - 0.01 * g for p, g in zip(ps, grads)]
        return train_step
    return make, shapes


def sweep_shapes():
    """(name, make(precision) -> fn, input shapes) for every shape of nxv_bench --sweep."""
    rows = []
    bert_base, bert_large = ("bert_base", 768, 12, False), ("bert_large", 1024, 16, False)
    gpt2_small, gpt2_medium = ("gpt2_small", 768, 12, True), ("gpt2_medium", 1024, 16, True)
    vit_b16, d128, d64 = ("vit_b16", 768, 12, False), ("h16d128", 2048, 16, False), ("h12d64", 768, 12, True)

    def transformer(model, b, s, causal, projections, grad):
        name, width, heads, tanh_gelu = model
        tag = f"_b{b}s{s}"
        if projections:
            rows.append((f"{name}_qkv{tag}", *_sweep_linear(b * s, width, 3 * width)))
            rows.append((f"{name}_out{tag}", *_sweep_linear(b * s, width, width)))
            rows.append((f"{name}_ffn{tag}", *_sweep_ffn(b * s, width, 4 * width, tanh_gelu)))
        attn = f"{name}_attn_causal" if causal else f"{name}_attn"
        rows.append((attn + tag, *_sweep_attention(b, heads, s, width // heads, causal)))
        if grad:
            rows.append((attn + "_grad" + tag, *_sweep_attention_grad(b, heads, s, width // heads, causal)))

    for model, b, s, causal, projections, grad in (
            (bert_base, 1, 128, False, False, False), (bert_base, 8, 128, False, True, True),
            (bert_base, 8, 512, False, True, True), (bert_large, 4, 512, False, False, False),
            (bert_large, 16, 512, False, True, True), (gpt2_small, 1, 128, True, True, False),
            (gpt2_small, 4, 1024, True, False, True), (gpt2_medium, 2, 1024, True, True, False),
            (gpt2_medium, 8, 1024, True, False, False), (d128, 2, 2048, False, False, True),
            (d128, 1, 4096, True, False, False), (d64, 1, 4096, True, False, False)):
        transformer(model, b, s, causal, projections, grad)
    rows.append(("vit_b16_patch_b32", *_sweep_conv(32, 3, 224, 768, 16, 16, 0)))
    transformer(vit_b16, 32, 197, False, True, True)
    rows.append(("resnet50_conv1_7x7s2_b32", *_sweep_conv(32, 3, 224, 64, 7, 2, 3)))
    for stage in range(1, 5):
        side, c, sn = 56 >> (stage - 1), 64 << (stage - 1), f"resnet50_s{stage}_"
        rows.append((f"{sn}1x1reduce_b32", *_sweep_conv(32, 4 * c, side, c, 1, 1, 0)))
        rows.append((f"{sn}3x3_b32", *_sweep_conv(32, c, side, c, 3, 1, 1)))
        rows.append((f"{sn}1x1expand_b32", *_sweep_conv(32, c, side, 4 * c, 1, 1, 0)))
        if stage > 1:
            rows.append((f"{sn}3x3s2_b32", *_sweep_conv(32, c, 2 * side, c, 3, 2, 1)))
            rows.append((f"{sn}proj1x1s2_b32", *_sweep_conv(32, 2 * c, 2 * side, 4 * c, 1, 2, 0)))
    for b in (1, 16, 128, 1024):
        rows.append((f"mlp_infer_b{b}", *_sweep_mlp_infer(b)))
    for b in (1, 16, 128, 1024):
        rows.append((f"mlp_train_b{b}", *_sweep_mlp_train(b)))
    return rows


def sweep_main(a):
    """Each sweep shape: pipelined time per call (and wall time) after a warm-up."""
    rows = []
    print("jax", jax.__version__, "device:", jax.devices()[0].device_kind)
    dtypes = {"f64": jnp.float64, "f32": jnp.float32, "f16": jnp.float16, "bf16": jnp.bfloat16}
    for dtype in (a.dtypes or "f32,bf16,f16").split(","):
        f = dtypes[dtype]
        hi = precision_of(a.precision.split(",")[0]) if dtype in ("f32", "f64") else None
        for name, make, shapes in sweep_shapes():
            if not any(part in name for part in a.filter.split(",")):
                continue
            key = jax.random.PRNGKey(0)
            args = [jax.random.uniform(jax.random.fold_in(key, i), s, f, -1, 1) for i, s in enumerate(shapes)]
            fn = jax.jit(make(hi))
            ms = time_call(fn, args, a.runs, warmup_s=a.warmup_s)
            piped = time_pipelined(fn, args, a.runs)
            rows.append({"workload": name, "dtype": dtype, "precision": "highest" if hi is not None else "default",
                         "wall_ms": ms, "pipelined_ms": piped})
            print(f"{name:32s} {dtype:4s} wall {ms:9.3f} ms  pipelined {piped:9.3f} ms", flush=True)
            del args
            if a.json:  # after every row, through a rename: a sweep cut short by `timeout` keeps what it measured
                with open(a.json + ".part", "w") as out:
                    json.dump({"device": jax.devices()[0].device_kind, "jax": jax.__version__, "results": rows}, out, indent=2)
                os.replace(a.json + ".part", a.json)


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
    ap.add_argument("--dtypes", help="comma-separated: f64, f32, f16, bf16 (as nxv_bench; default f32,f64, with --sweep f32,bf16,f16)")
    ap.add_argument("--precision", default="highest", help="comma-separated precisions of dots and convolutions")
    ap.add_argument("--error", action="store_true", help="the square dots' error against a float64 product")
    ap.add_argument("--sweep", action="store_true", help="nxv_bench --sweep's shapes (bench/sweep.cpp)")
    ap.add_argument("--warmup-s", type=float, default=1.5, help="seconds of warm-up calls before each row's timing")
    a = ap.parse_args()
    if a.sweep:
        return sweep_main(a)
    a.dtypes = a.dtypes or "f32,f64"
    rows = []
    print("jax", jax.__version__, "device:", jax.devices()[0].device_kind)
    for dtype in a.dtypes.split(","):
        flat = (16 << 20 if dtype == "f64" else 64 << 20) if a.size == "full" else 1 << 20
        side = 8192 if a.size == "full" else 1024
        for precision in a.precision.split(","):
            for name, fn, args, nbytes, *flops in workloads(dtype, flat, side, precision):
                if not any(f in name for f in a.filter.split(",")):
                    continue
                ms = time_call(jax.jit(fn), args, a.runs, warmup_s=a.warmup_s)
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
