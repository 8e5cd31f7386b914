"""GPU sweep of attention's cost: naive vs fused attention over sequence length, saved as JSON.

Run on a machine with CUDA::

    python -m encoder_course.gpu_sweep --out notebooks/solutions/gpu_results.json

It times, in bf16 (fp16 where the card has no bf16), batch 1, 16 heads of width 64:
``F.scaled_dot_product_attention`` from L = 512 up to ``--max-len`` (default 32768), the naive
step-by-step attention (which materialises the ``(B, H, L, L)`` weights) as far as memory allows,
and chunked attention. Every row holds the median time, the peak memory
(``torch.cuda.max_memory_allocated``) and the achieved TFLOP/s (``4 B H L^2 d_head`` FLOPs over
the median). The file records the GPU's name, the date and the versions, and notebook 09 shows it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform

import torch

from .cost import attention_sweep, loglog_slope

DEFAULT_OUT = os.path.join("notebooks", "solutions", "gpu_results.json")
RESULT_CANDIDATES = (
    "gpu_results.json",
    os.path.join("solutions", "gpu_results.json"),
    os.path.join("notebooks", "solutions", "gpu_results.json"),
    os.path.join("notebooks", "gpu_results.json"),
)


def _lengths(start: int, stop: int) -> list[int]:
    out, length = [], start
    while length <= stop:
        out.append(length)
        length *= 2
    return out


def run_sweep(max_len: int = 32768, naive_max_len: int | None = None, dtype: torch.dtype | None = None,
              n_heads: int = 16, d_head: int = 64, batch: int = 1, warmup: int = 3, repeats: int = 10,
              chunk_size: int = 1024, device: str = "cuda", min_len: int = 512,
              peak_tflops: float | None = None) -> dict:
    """Run the sweep and return the JSON-ready record (see the module docstring)."""
    dev = torch.device(device)
    if dtype is None:
        if dev.type == "cuda":
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        else:
            dtype = torch.float32
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        gpu = {"name": props.name, "capability": f"{props.major}.{props.minor}",
               "total_memory_bytes": int(props.total_memory)}
    else:
        gpu = {"name": f"CPU ({platform.processor() or platform.machine()})", "capability": None,
               "total_memory_bytes": None}
    methods = ["sdpa", "naive", "chunked"]
    rows = []
    for length in _lengths(min_len, max_len):
        todo = [m for m in methods if not (m == "naive" and naive_max_len and length > naive_max_len)]
        new = attention_sweep([length], methods=todo, d_head=d_head, n_heads=n_heads, batch=batch,
                              dtype=dtype, device=dev, warmup=warmup, repeats=repeats, chunk_size=chunk_size)
        rows.extend(new)
        for row in new:
            if row["status"] == "oom" and row["method"] in methods:
                methods.remove(row["method"])  # longer inputs will not fit either
        if dev.type == "cuda":
            torch.cuda.empty_cache()

    def ok(method):
        return [r for r in rows if r["method"] == method and r["status"] == "ok"]

    summary = {}
    for method in ("sdpa", "naive", "chunked"):
        done = [r for r in ok(method) if r["seq_len"] >= 2048]
        if len(done) >= 2:
            summary[f"{method}_time_slope"] = loglog_slope([r["seq_len"] for r in done],
                                                           [r["median_s"] for r in done])
        if ok(method):
            summary[f"{method}_max_len"] = max(r["seq_len"] for r in ok(method))
    for length in (4096, 8192):
        hit = [r for r in ok("sdpa") if r["seq_len"] == length]
        if hit:
            summary[f"sdpa_tflops_per_s_at_{length}"] = hit[0]["tflops_per_s"]
            if peak_tflops:
                summary[f"sdpa_fraction_of_peak_at_{length}"] = hit[0]["tflops_per_s"] / peak_tflops
    return {
        "what": "attention alone (Q K^T, softmax, A V), forward, batch 1, inference mode",
        "gpu": gpu,
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "settings": {"dtype": str(dtype).replace("torch.", ""), "n_heads": n_heads, "d_head": d_head,
                     "batch": batch, "warmup": warmup, "repeats": repeats, "chunk_size": chunk_size,
                     "peak_tflops_given": peak_tflops},
        "summary": summary,
        "rows": rows,
    }


def find_results(candidates=RESULT_CANDIDATES):
    """Load the first stored sweep among ``candidates`` (paths relative to the working folder), or None."""
    for path in candidates:
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f)
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"JSON file to write (default {DEFAULT_OUT})")
    parser.add_argument("--max-len", type=int, default=32768, help="longest L for fused attention")
    parser.add_argument("--naive-max-len", type=int, default=None,
                        help="longest L for naive attention (default: until it runs out of memory)")
    parser.add_argument("--min-len", type=int, default=512)
    parser.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default=None,
                        help="default bf16, or fp16 on cards without bf16")
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--d-head", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the card's dense peak for this dtype, from its data sheet, to report a fraction")
    parser.add_argument("--allow-cpu", action="store_true", help="run on CPU (for testing the script only)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available() and not args.allow_cpu:
        parser.error("CUDA is not available; this sweep is meant for a GPU (use --allow-cpu to test it)")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, None: None}[args.dtype]
    record = run_sweep(max_len=args.max_len, naive_max_len=args.naive_max_len, dtype=dtype,
                       n_heads=args.heads, d_head=args.d_head, warmup=args.warmup, repeats=args.repeats,
                       device="cuda" if torch.cuda.is_available() else "cpu", min_len=args.min_len,
                       peak_tflops=args.peak_tflops)
    folder = os.path.dirname(args.out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    print(f"{record['gpu']['name']}, {record['settings']['dtype']}, {record['date']}")
    for row in record["rows"]:
        t = f"{row['median_s'] * 1e3:9.3f} ms" if row["status"] == "ok" else f"{row['status']:>12}"
        tf = f"{row['tflops_per_s']:7.1f} TFLOP/s" if row["tflops_per_s"] else ""
        print(f"{row['method']:>8} L={row['seq_len']:>6} {t} {tf}")
    for key, value in record["summary"].items():
        print(f"{key}: {value:.3f}" if isinstance(value, float) else f"{key}: {value}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
