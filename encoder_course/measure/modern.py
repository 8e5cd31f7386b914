"""What the changes since BERT buy (notebook 13), measured on the docstring corpus and on the CPU.

* :func:`extrapolation`: masked-LM encoders that differ only in their positions (learned, sinusoidal, rotary),
  trained on text cut to one length and evaluated on held-out text cut to longer ones;
* :func:`same_size_configs` and :func:`same_budget`: a BERT-style and a modern encoder with the same number of
  parameters, pretrained for the same processor time over several seeds;
* :func:`unpadding_times`: one batch of real passages through the padded path, the unpadded one and PyTorch's
  ``nn.TransformerEncoder`` fast path (nested tensors), the same weights;
* :func:`local_attention_times`: attention over the whole sequence against attention within a window, over lengths.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .._validate import require_positive_int, require_positive_number
from ..blockwise import sliding_window_attention
from ..encoder import Encoder, EncoderConfig
from ..masks import sliding_window_mask
from .counting import parameter_count
from .masked_lm import Vocabulary, make_model, masked_accuracy, pad_batch, pretrain
from .timing import cpu_threads, time_side_by_side

POSITION_KINDS = ("learned", "sinusoidal", "rotary")


def text_chunks(sequences: list[list[int]], length: int, limit: int | None = None) -> list[list[int]]:
    """The passages one after another (each ``[CLS] ... [SEP]``), cut into pieces of ``length`` tokens, as
    BERT's pretraining packs its text; the last incomplete piece is dropped; at most ``limit`` pieces."""
    stream = [token for sequence in sequences for token in sequence]
    chunks = [stream[i:i + length] for i in range(0, len(stream) - length + 1, length)]
    return chunks if limit is None else chunks[:limit]


def positions_config(vocab_size: int, positions: str, max_len: int = 256, **changes) -> EncoderConfig:
    """The extrapolation runs' encoder: 2 pre-LN layers, 64 wide, 4 heads, a LayerNorm on the embeddings, no
    dropout; only ``positions`` varies. ``max_len`` covers the longest evaluation (learned positions: the rows past
    the training length stay as initialised)."""
    base = EncoderConfig(vocab_size=vocab_size, max_len=max_len, d_model=64, n_heads=4, d_ff=256, n_layers=2,
                         dropout=0.0, norm_first=True, activation="gelu", positions=positions, embedding_norm=True,
                         pad_id=0)
    return base.replace(**changes)


def extrapolation(vocab: Vocabulary, train_ids: list[list[int]], held_ids: list[list[int]], *,
                  train_length: int = 32, lengths=(32, 64, 128), kinds=POSITION_KINDS, steps: int = 600,
                  batch_size: int = 32, lr: float = 3e-3, tokens: int = 4096, seed: int = 0) -> dict:
    """Train one masked-LM encoder per kind of positions on ``train_length``-token pieces, then measure each on
    held-out pieces of every length in ``lengths`` (``tokens`` held-out tokens per length).

    The same models are measured on the training modules' text too (``"seen_*"``), cut at other places than in
    training: there the words are known, so what changes with the length is the positions alone.

    Returns:
        ``{"loss": {kind: {length: nats}}, "accuracy": {kind: {length: share}}, "unigram": {length: nats},
        "seen_loss", "seen_accuracy", "seen_unigram"`` (the same on the training modules), ``"train_loss": {kind:
        mean of the last 50 steps}, "seconds": {kind: s}, "models": {kind: MaskedLM}}``.
    """
    train = text_chunks(train_ids, train_length)
    seen = train_ids[7:]  # the training text, cut at other places than the training pieces
    out = {key: {} for key in ("loss", "accuracy", "unigram", "seen_loss", "seen_accuracy", "seen_unigram",
                               "train_loss", "seconds", "models")}
    for kind in kinds:
        model = make_model(positions_config(len(vocab), kind, max_len=max(lengths)), seed=seed)
        run = pretrain(model, train, vocab, steps=steps, batch_size=batch_size, lr=lr, seed=seed)
        out["train_loss"][kind], out["seconds"][kind], out["models"][kind] = run.final_loss(), run.seconds, model
        for prefix, text in (("", held_ids), ("seen_", seen)):
            out[prefix + "loss"][kind], out[prefix + "accuracy"][kind] = {}, {}
            for length in lengths:
                scores = masked_accuracy(model, text_chunks(text, length, limit=max(tokens // length, 1)), vocab)
                out[prefix + "loss"][kind][length] = scores["loss"]
                out[prefix + "accuracy"][kind][length] = scores["accuracy"]
                out[prefix + "unigram"][length] = scores["unigram_loss"]
    return out


# ----------------------------------------------------------------------------------------------
# Same size, same time: BERT's design against a modern one


def same_size_configs(vocab_size: int, d_model: int = 64, n_heads: int = 4, n_layers: int = 2, d_ff: int = 256,
                      max_len: int = 64, window: int = 16) -> tuple[EncoderConfig, EncoderConfig]:
    """A BERT-style encoder (post-LN, learned positions, GELU, biases, padded batches) and a modern one (pre-LN,
    rotary positions, GeGLU, no biases, local layers with global ones between, unpadded) of about the same size:
    the modern one's ``d_ff`` is the width that brings its parameter count closest to BERT's (GeGLU has three
    matrices, and the modern encoder has no position table)."""
    bert = EncoderConfig(vocab_size=vocab_size, max_len=max_len, d_model=d_model, n_heads=n_heads, d_ff=d_ff,
                         n_layers=n_layers, dropout=0.0, norm_first=False, activation="gelu", positions="learned",
                         embedding_norm=True, pad_id=0)
    modern = bert.replace(norm_first=True, activation="geglu", positions="rotary", bias=False, window=window,
                          global_every=2, unpad=True)
    target = parameter_count(bert)
    best = min(range(1, 4 * d_ff), key=lambda width: abs(parameter_count(modern.replace(d_ff=width)) - target))
    return bert, modern.replace(d_ff=best)


@dataclass
class BudgetRun:
    """One pretraining run of :func:`same_budget`."""

    design: str
    seed: int
    steps: int
    seconds: float
    loss: float
    accuracy: float
    unigram_loss: float


def step_time_ratio(vocab: Vocabulary, train_ids: list[list[int]], configs: tuple[EncoderConfig, EncoderConfig], *,
                    batch_size: int = 64, lr: float = 2e-3, rounds: int = 5, steps: int = 12) -> float:
    """Processor time of the second design's pretraining steps over the first's, on the same batches, taking turns.

    In each round both designs train a throwaway model ``steps`` steps on the same batches, one after the other,
    on one thread; a round's ratio is of the two totals (a run's set-up before its first step is not counted),
    and the result is the median over ``rounds`` rounds. Totals, because a step's time depends on its batch's
    lengths and a run's time is the sum of its steps'; taking turns, because both designs then meet the same
    load, so the ratio holds on a busy machine where the time of a step does not.
    """
    require_positive_int("rounds", rounds)
    require_positive_int("steps", steps)
    models = [make_model(config, seed=0) for config in configs]
    ratios = []
    for round_ in range(rounds + 1):  # the first round warms up and is not counted
        totals = []
        for model in models:
            ends: list[float] = []
            pretrain(model, train_ids, vocab, steps=steps + 1, batch_size=batch_size, lr=lr, seed=round_, threads=1,
                     callback=lambda *_, ends=ends: ends.append(time.process_time()))
            totals.append(ends[-1] - ends[0])
        if round_:
            ratios.append(totals[1] / totals[0])
    return statistics.median(ratios)


def same_budget(vocab: Vocabulary, train_ids: list[list[int]], held_ids: list[list[int]], *, steps: int = 240,
                seeds=(0, 1, 2), batch_size: int = 64, lr: float = 2e-3, max_steps: int = 5000,
                configs: tuple[EncoderConfig, EncoderConfig] | None = None, ratio: float | None = None
                ) -> list[BudgetRun]:
    """Pretrain each design for the same processor time per seed, then measure each on the held-out passages.

    The BERT-style design trains ``steps`` steps; the modern one as many steps as take the same processor time,
    ``steps / ratio``, where ``ratio`` is its step's processor time over the BERT-style step's
    (:func:`step_time_ratio`, measured here when None). Counting steps rather than stopping each run on a clock
    keeps the comparison the same on a busy machine: there every step takes longer, and runs stopped on a clock
    took fewer steps, so fewer on a busier machine, and one design's runs fewer than the other's when the load
    changed between them.

    The learning-rate schedule runs over ``max_steps``: both designs see the same rate at the same step, however
    many steps their time allows.
    """
    require_positive_int("steps", steps)
    bert, modern = configs if configs is not None else same_size_configs(len(vocab))
    if ratio is None:
        ratio = step_time_ratio(vocab, train_ids, (bert, modern), batch_size=batch_size, lr=lr)
    require_positive_number("ratio", ratio)
    budget = {"BERT-style": steps, "modern": max(1, round(steps / ratio))}
    runs = []
    for seed in seeds:
        for design, config in (("BERT-style", bert), ("modern", modern)):
            model = make_model(config, seed=seed)
            start = time.process_time()  # processor time, one thread: what the budget is of
            # A clock that counts steps (it reads 0 at the start and k after step k): the run stops after its
            # budget of steps, and the schedule still runs over max_steps.
            run = pretrain(model, train_ids, vocab, steps=max_steps, seconds=budget[design] - 0.5,
                           batch_size=batch_size, lr=lr, seed=seed, threads=1, clock=itertools.count().__next__)
            seconds = time.process_time() - start
            scores = masked_accuracy(model, held_ids, vocab)
            runs.append(BudgetRun(design, seed, run.steps, seconds, scores["loss"], scores["accuracy"],
                                  scores["unigram_loss"]))
    return runs


def budget_table(runs: list[BudgetRun]) -> dict[str, dict[str, float]]:
    """Per design: the mean and the range over seeds of the held-out loss and accuracy, the mean steps and
    the mean processor seconds of training."""
    table = {}
    for design in dict.fromkeys(run.design for run in runs):
        mine = [run for run in runs if run.design == design]
        table[design] = {
            "loss": statistics.mean(r.loss for r in mine), "loss_min": min(r.loss for r in mine),
            "loss_max": max(r.loss for r in mine), "accuracy": statistics.mean(r.accuracy for r in mine),
            "accuracy_min": min(r.accuracy for r in mine), "accuracy_max": max(r.accuracy for r in mine),
            "steps": statistics.mean(r.steps for r in mine), "seconds": statistics.mean(r.seconds for r in mine),
            "runs": len(mine)}
    return table


# ----------------------------------------------------------------------------------------------
# Speed: unpadding and local attention


def corpus_batches(token_ids: list[list[int]], batch_size: int, count: int, pad_id: int = 0) -> list[torch.Tensor]:
    """The first ``count`` batches of ``batch_size`` passages in corpus order (no sorting by length), padded."""
    return [pad_batch(token_ids[i:i + batch_size], pad_id)
            for i in range(0, min(len(token_ids), batch_size * count), batch_size)]


@torch.inference_mode()
def unpadding_times(batches: list[torch.Tensor], config: EncoderConfig, *, repeats: int = 3, threads: int = 1,
                    seed: int = 0, device: str | torch.device = "cpu") -> list[dict]:
    """Each batch through the padded path, the unpadded path and ``nn.TransformerEncoder``'s fast path.

    The three share one set of weights (checked: the outputs agree at the real tokens). torch's encoder layers
    take the padding mask (True = padding) and, in eval and inference mode, run on nested tensors: its own way
    of skipping padding. The padded path and torch's are timed from the embeddings' output, the unpadded one from
    the token ids: its embeddings, packing and unpacking count against it. The three take turns, round after round
    (:func:`~encoder_course.measure.timing.time_side_by_side`), so a slow spell of a shared machine falls on all
    three alike.

    Returns:
        one dict per batch: ``shape``, ``padding`` (share of the positions), ``padded_ms``, ``unpadded_ms``,
        ``torch_ms`` (medians), ``speedup`` (padded / unpadded) and ``vs_torch`` (torch / unpadded).
        On a GPU (``device="cuda"``, the GPU script ``python -m encoder_course.measure.gpu``) each run is
        timed with the device synchronised.
    """
    from ..interop import to_torch_encoder

    device = torch.device(device)
    torch.manual_seed(seed)
    padded = Encoder(config.replace(unpad=False, dropout=0.0)).eval().to(device)
    unpadded = Encoder(config.replace(unpad=True, dropout=0.0)).eval().to(device)
    unpadded.load_state_dict(padded.state_dict())
    theirs = to_torch_encoder(padded.layers).eval().to(device)
    tolerance = 1e-4 if device.type == "cpu" else 1e-3  # GPU matmuls may use TF32 and other kernels per path

    rows = []
    with cpu_threads(threads):
        for ids in batches:
            ids = ids.to(device)
            real = ids != config.pad_id  # (B, L)
            x = padded.embeddings(ids)  # (B, L, d_model)
            mask = real[:, None, None, :]
            ours = padded(ids, real)
            if not torch.allclose(unpadded(ids, real)[real], ours[real], atol=tolerance) or not torch.allclose(
                    theirs(x, src_key_padding_mask=~real)[real], ours[real], atol=tolerance):
                raise AssertionError("the three paths disagree: they do not compute the same encoder")

            def run_padded(x=x, mask=mask):
                h = x
                for layer in padded.layers:
                    h = layer(h, mask)
                return h

            runs = time_side_by_side({  # in turn, round after round: a slow spell falls on all three alike
                "padded_ms": run_padded,
                "unpadded_ms": lambda ids=ids, real=real: unpadded(ids, real),
                "torch_ms": lambda x=x, real=real: theirs(x, src_key_padding_mask=~real),
            }, rounds=repeats, device=device)
            times = {name: 1000 * statistics.median(seconds) for name, seconds in runs.items()}
            rows.append({"shape": tuple(ids.shape), "padding": 1 - real.float().mean().item(), **times,
                         "speedup": times["padded_ms"] / times["unpadded_ms"],
                         "vs_torch": times["torch_ms"] / times["unpadded_ms"]})
    return rows


@torch.inference_mode()
def local_attention_times(lengths, windows, *, n_heads: int = 4, d_head: int = 32, repeats: int = 3,
                          threads: int = 1, seed: int = 0) -> list[dict]:
    """Attention of one sequence over all its keys, and within windows, timed over lengths.

    ``global`` is PyTorch's fused attention over every key. For each window, ``masked`` is the same kernel with
    the window as a mask (the same numbers as local attention, the whole score matrix computed) and ``banded``
    is :func:`~encoder_course.sliding_window_attention` (scores within the band only). At each length they take
    turns for ``repeats`` rounds, and each time is the fastest of its rounds.

    Returns:
        one dict per (length, window): ``length``, ``window``, ``global_ms``, ``masked_ms``, ``banded_ms``, and the
        scored (query, key) pairs: ``global_pairs`` ``L^2``, ``window_pairs`` (inside the window, exact) and
        ``banded_pairs`` (what the banded code computes: ``L`` queries times ``3 * (window // 2)`` keys).
    """
    generator = torch.Generator().manual_seed(seed)
    rows = []
    with cpu_threads(threads):
        for length in lengths:
            qkv = [torch.randn(1, n_heads, length, d_head, generator=generator) for _ in range(3)]
            calls = {"global": lambda qkv=qkv: F.scaled_dot_product_attention(*qkv)}
            for window in windows:
                mask = sliding_window_mask(length, window)
                calls[f"masked {window}"] = lambda qkv=qkv, mask=mask: F.scaled_dot_product_attention(
                    *qkv, attn_mask=mask)
                calls[f"banded {window}"] = lambda qkv=qkv, window=window: sliding_window_attention(*qkv, window)
            # In turn, round after round, and the fastest round of each: a slow spell of a busy machine falls on
            # all of them alike, and the minimum is the figure it inflates least.
            fastest = {name: 1000 * min(seconds) for name, seconds in time_side_by_side(calls, rounds=repeats).items()}
            for window in windows:
                half = max(window // 2, 1)
                rows.append({
                    "length": length, "window": window, "global_ms": fastest["global"],
                    "masked_ms": fastest[f"masked {window}"], "banded_ms": fastest[f"banded {window}"],
                    "global_pairs": length * length, "window_pairs": int(sliding_window_mask(length, window).sum()),
                    "banded_pairs": math.ceil(length / half) * half * 3 * half})
    return rows
