#!/usr/bin/env python3
"""The machine code NVIDIA's Vulkan driver made of each kernel, from its shader disk cache.

    sass.py CACHE_DIR STATS_LOG OUT_DIR [--nvdisasm PATH] [--zstd PATH] [--arch SM90]

CACHE_DIR is the driver's cache (__GL_SHADER_DISK_CACHE_PATH) after one `nxv_bench
--pipeline-stats` run with nothing else in it; STATS_LOG that run's output, whose
"kNN_name:  Register Count R  Binary Size B" lines under each workload's line give each
kernel's code size. The cache files hold zstd frames; a kernel's frame opens with a header
(its size at byte 32) and holds its code last, 16-byte instructions ending in EXIT, a branch
to itself and NOPs. For each kernel the code is the B bytes ending after the last NOP of
the frame whose size fits; OUT_DIR/WORKLOAD.kNN_name.sass is nvdisasm's listing of it, with
a count of its instructions by opcode on standard output. bench/run_device.sh's `sass` mode
runs it. The layout is what the 580 driver writes (H200, 2026-12-03), not a documented one.
"""
import argparse
import collections
import pathlib
import re
import subprocess

ZSTD_MAGIC = bytes.fromhex("28b52ffd")
NOP_LOW = bytes.fromhex("1879000000000000")  # NOP's low 8 bytes on sm_90


def frames(cache_dir, zstd):
    """Every zstd frame in the cache's files that decompresses, as bytes."""
    for f in sorted(pathlib.Path(cache_dir).rglob("*.bin")):
        data = f.read_bytes()
        at = data.find(ZSTD_MAGIC)
        while at >= 0:
            # zstd decodes the frame, then stops at the bytes after it with an error.
            r = subprocess.run([zstd, "-d", "-c", "-q"], input=data[at:], capture_output=True)
            if r.stdout:
                yield r.stdout
            at = data.find(ZSTD_MAGIC, at + 1)


def kernel_sizes(stats_log):
    """WORKLOAD.kNN_name -> code size, from the workload lines and the kernel lines under them."""
    sizes, workload = {}, ""
    for line in pathlib.Path(stats_log).read_text().splitlines():
        m = re.match(r"\s+(k\d+_\w+):.*Binary Size (\d+)", line)
        if m:
            sizes[f"{workload}.{m.group(1)}"] = int(m.group(2))
        elif line and not line[0].isspace():
            workload = line.split()[0].rstrip(":")
    return sizes


def code_of(frame, size):
    """The last `size` bytes of code in a frame (up to and including its final NOP), where the
    frame is this kernel's: its header's word at byte 32 (the code and what follows it in the
    container, 512-528 bytes more than the code in the kernels seen) is within 1 KiB above."""
    declared = int.from_bytes(frame[32:36], "little") if len(frame) >= 36 else 0
    last = frame.rfind(NOP_LOW)
    if last < 0 or (last + 16) < size or not 0 <= declared - size < 1024:
        return None
    return frame[last + 16 - size:last + 16]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cache_dir")
    ap.add_argument("stats_log")
    ap.add_argument("out_dir")
    ap.add_argument("--nvdisasm", default="/usr/local/cuda/bin/nvdisasm")
    ap.add_argument("--arch", default="SM90")
    ap.add_argument("--zstd", default="zstd")
    a = ap.parse_args()
    out = pathlib.Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    candidates = list(frames(a.cache_dir, a.zstd))
    for name, size in kernel_sizes(a.stats_log).items():
        listing = None
        for frame in candidates:
            code = code_of(frame, size)
            if code is None:
                continue
            raw = out / (name + ".raw")
            raw.write_bytes(code)
            r = subprocess.run([a.nvdisasm, "-b", a.arch, str(raw)], capture_output=True, text=True)
            raw.unlink()
            if r.returncode == 0 and "EXIT" in r.stdout:
                listing = r.stdout
                break
        if listing is None:
            print(f"{name}: {size} bytes of code not found in the cache")
            continue
        (out / (name + ".sass")).write_text(listing)
        ops = collections.Counter(m.group(1).split(".")[0]
                                  for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", listing))
        top = ", ".join(f"{op} {n}" for op, n in ops.most_common(12))
        print(f"{name}: {sum(ops.values())} instructions ({top})")


if __name__ == "__main__":
    main()
