"""Notebook 13: rotary scores by position, length extrapolation, windows per layer, the cost of local attention,
unpadding's time and the same-budget comparison."""

from __future__ import annotations

import numpy as np
import torch

from .style import COLOURS, CYCLE, PALETTE, describe_range, finish, label_axes, new_figure, new_or_given_axes, to_numpy

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["budget_points", "extrapolation_lines", "layer_windows", "local_cost", "rotary_scores", "unpadding_bars"]

KIND_COLOURS = {"learned": PALETTE["vermillion"], "sinusoidal": PALETTE["orange"], "rotary": PALETTE["blue"]}


def rotary_scores(q, k, positions: int = 32, rotate=None, ax=None):
    """The score of ``q`` turned to position m (rows) against ``k`` turned to position n (columns).

    Args:
        q, k: 1-D vectors of one even length.
        positions: how many positions (0 .. positions - 1) on each axis.
        rotate: the rotation, ``rotate(x, positions)`` (the package's ``apply_rotary`` when None).
    """
    if rotate is None:
        from ..positions import apply_rotary as rotate
    q, k = (torch.as_tensor(v, dtype=torch.float32) for v in (q, k))  # (d,) each
    pos = torch.arange(positions)
    with torch.no_grad():
        scores = rotate(q.expand(positions, -1), pos) @ rotate(k.expand(positions, -1), pos).T  # (P, P): [m, n]
    fig, ax = new_or_given_axes(ax, (4.8, 4.2))
    image = ax.imshow(to_numpy(scores), cmap="viridis")
    fig.colorbar(image, ax=ax, shrink=0.8, label="q · k")
    label_axes(ax, "Rotated q · k: each diagonal (one offset n - m) holds one value", "key position n",
               "query position m", title_size=9)
    return finish(ax, alt=(f"Heatmap of the score between a query turned to position m and a key turned to position n, "
                           f"for m and n from 0 to {positions - 1}, scores {describe_range(scores.flatten())}: "
                           f"every diagonal, one offset n - m, has one colour."))


def extrapolation_lines(result: dict, key: str = "loss", train_length: int = 32, ax=None):
    """Masked-token loss against the evaluation length, one line per kind of positions, and the unigram baseline.

    Args:
        result: :func:`encoder_course.measure.modern.extrapolation`'s dict.
        key: ``"loss"`` (held-out modules) or ``"seen_loss"`` (the training modules' text).
        train_length: the length the models were trained at (a dotted line).
    """
    fig, ax = new_or_given_axes(ax, (6.4, 3.6))
    rows = result[key]
    lengths = sorted(next(iter(rows.values())))
    markers = {"learned": "s", "sinusoidal": "^", "rotary": "o"}
    for i, (kind, row) in enumerate(rows.items()):
        ax.plot(lengths, [row[n] for n in lengths], marker=markers.get(kind, "o"), label=kind,
                color=KIND_COLOURS.get(kind, CYCLE[i % len(CYCLE)]))
    unigram = result["unigram" if key == "loss" else "seen_unigram"]
    ax.plot(lengths, [unigram[n] for n in lengths], linestyle="--", color=COLOURS["reference"], label="unigram")
    ax.axvline(train_length, linestyle=":", color="#333333", label=f"trained at {train_length}")
    ax.set_xscale("log", base=2)
    ax.set_xlim(min(lengths + [train_length]) / 1.2, max(lengths + [train_length]) * 1.2)  # the line off the spine
    ax.set_xticks(lengths)
    ax.set_xticklabels([str(n) for n in lengths])
    where = "held-out modules" if key == "loss" else "training modules' text"
    label_axes(ax, f"Masked-token loss by length ({where})", "tokens per piece (log scale)",
               "loss, nats (lower is better)", legend=True, grid=True)
    summary = "; ".join(f"{kind} " + ", ".join(f"{row[n]:.2f}" for n in lengths) for kind, row in rows.items())
    return finish(ax, alt=(f"Loss against piece length {', '.join(map(str, lengths))} on the {where}, trained at "
                           f"{train_length}: {summary}; unigram " + ", ".join(f"{unigram[n]:.2f}" for n in lengths)
                           + "."))


def layer_windows(config, length: int = 48, axes=None):
    """Which (query, key) pairs each layer of ``config`` scores: the full square, or the window's band.

    Args:
        config: an ``EncoderConfig`` (its ``n_layers``, ``window`` and ``global_every``).
        length: the sequence length drawn.
        axes: ``config.n_layers`` axes to draw into (a new figure when None).
    """
    from ..masks import sliding_window_mask

    n = config.n_layers
    if axes is None:
        fig, axes = new_figure((1.6 * n + 0.4, 2.2), ncols=n, squeeze=False)
        axes = axes[0]
    fig = axes[0].figure
    kinds = []
    for i, ax in enumerate(axes):
        local = config.is_local(i)
        allowed = sliding_window_mask(length, config.window) if local else torch.ones(length, length, dtype=torch.bool)
        ax.imshow(to_numpy(allowed.float()), cmap="Blues", vmin=0, vmax=1.2)
        ax.set_xticks([])
        ax.set_yticks([])
        kinds.append(f"local (window {config.window})" if local else "global")
        label_axes(ax, f"layer {i}: {kinds[-1]}", title_size=9)
    label_axes(axes[0], xlabel="key", ylabel="query")
    return finish(fig, title="Pairs each layer scores (dark = scored)",
                  alt=(f"{n} small squares, one per layer, of {length} queries by {length} keys: "
                       + ", ".join(f"layer {i} {kind}" for i, kind in enumerate(kinds))
                       + "; a global layer's square is full, a local one's is a band along the diagonal."))


def local_cost(rows: list[dict], axes=None):
    """Measured attention time against length (left) and the scored pairs from the formulas (right), log-log.

    Args:
        rows: :func:`encoder_course.measure.modern.local_attention_times`'s rows.
        axes: two axes to draw into (a new figure when None).
    """
    if axes is None:
        fig, axes = new_figure((10, 3.8), ncols=2)
    fig = axes[0].figure
    lengths = sorted({r["length"] for r in rows})
    windows = sorted({r["window"] for r in rows})
    first = {n: next(r for r in rows if r["length"] == n) for n in lengths}
    left, right = axes
    left.plot(lengths, [first[n]["global_ms"] for n in lengths], marker="o", color=COLOURS["scores"],
              label="global (all keys)")
    right.plot(lengths, [first[n]["global_pairs"] for n in lengths], marker="o", color=COLOURS["scores"],
               label="global: L²")
    for i, w in enumerate(windows):
        mine = [next(r for r in rows if r["length"] == n and r["window"] == w) for n in lengths]
        colour = (PALETTE["blue"], PALETTE["green"], PALETTE["purple"])[i % 3]
        left.plot(lengths, [r["masked_ms"] for r in mine], linestyle="--", marker="s", color=colour,
                  label=f"window {w}, as a mask")
        left.plot(lengths, [r["banded_ms"] for r in mine], marker="^", color=colour, label=f"window {w}, banded")
        right.plot(lengths, [r["window_pairs"] for r in mine], marker="^", color=colour,
                   label=f"window {w}: L·(w+1)")
        right.plot(lengths, [r["banded_pairs"] for r in mine], linestyle=":", color=colour,
                   label=f"window {w}: banded code, L·1.5w")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(lengths)
        ax.set_xticklabels([str(n) for n in lengths])
    label_axes(left, "Measured on this machine", "sequence length L", "milliseconds (median)", legend=True,
               grid=True)
    label_axes(right, "The formulas", "sequence length L", "(query, key) pairs scored", legend=True, grid=True)
    last = [r for r in rows if r["length"] == lengths[-1]]
    global_growth = _growth(lengths, [first[n]["global_ms"] for n in lengths])
    return finish(fig, alt=(f"Two log-log panels over L = {', '.join(map(str, lengths))}. Left, measured milliseconds "
                            f"(times per doubling of L: global {global_growth}"
                            + "".join(f"; window {w} masked {_growth(lengths, _series(rows, w, 'masked_ms'))}, banded "
                                      f"{_growth(lengths, _series(rows, w, 'banded_ms'))}" for w in windows)
                            + f"); at L = {lengths[-1]}: global {last[0]['global_ms']:.1f} ms, "
                            + ", ".join(f"window {r['window']} masked {r['masked_ms']:.1f} ms and banded "
                                        f"{r['banded_ms']:.1f} ms" for r in last)
                            + ". Right, the (query, key) pairs scored: L² for global attention, L·(w+1) inside the "
                              "window and about L·1.5w for the banded code."))


def _series(rows: list[dict], window: int, key: str) -> list[float]:
    """``key`` of the rows of ``window``, by increasing length."""
    return [r[key] for r in sorted((r for r in rows if r["window"] == window), key=lambda r: r["length"])]


def _growth(lengths, values) -> str:
    """How many times ``values`` grow per doubling of ``lengths`` (first to last), as ``"x3.9"``."""
    if len(lengths) < 2 or values[0] <= 0:
        return "n/a"
    return f"x{(values[-1] / values[0]) ** (1 / np.log2(lengths[-1] / lengths[0])):.1f}"


def unpadding_bars(rows: list[dict], ax=None):
    """Milliseconds per batch: our padded path, our unpadded path, PyTorch's nested-tensor fast path.

    Args:
        rows: :func:`encoder_course.measure.modern.unpadding_times`'s rows.
    """
    fig, ax = new_or_given_axes(ax, (7, 3.4))
    series = (("padded_ms", "padded", PALETTE["vermillion"]), ("unpadded_ms", "unpadded", PALETTE["blue"]),
              ("torch_ms", "torch nested tensors", PALETTE["grey"]))
    xs = np.arange(len(rows))
    for i, (key, label, colour) in enumerate(series):
        ax.bar(xs + (i - 1) * 0.27, [r[key] for r in rows], 0.27, label=label, color=colour)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{r['shape'][0]} x {r['shape'][1]}\n{r['padding']:.0%} padding" for r in rows])
    ax.set_yscale("log")
    label_axes(ax, "One batch of real passages through the layers", None, "milliseconds (log scale)", legend=True,
               grid=True)
    return finish(ax, alt="Grouped bars per batch: " + "; ".join(
        f"{r['shape'][0]} x {r['shape'][1]} with {r['padding']:.0%} padding: padded {r['padded_ms']:.0f} ms, unpadded "
        f"{r['unpadded_ms']:.0f} ms, torch {r['torch_ms']:.0f} ms" for r in rows) + ".")


def budget_points(runs, unigram_loss: float, ax=None):
    """Held-out loss of every run per design (points), their mean (a bar), and the unigram baseline.

    Args:
        runs: :func:`encoder_course.measure.modern.same_budget`'s runs.
        unigram_loss: the unigram baseline's held-out loss (a dashed line).
    """
    fig, ax = new_or_given_axes(ax, (5.6, 3.6))
    designs = list(dict.fromkeys(r.design for r in runs))
    colours = (PALETTE["vermillion"], PALETTE["blue"], PALETTE["green"])
    summary = []
    for i, design in enumerate(designs):
        mine = [r for r in runs if r.design == design]
        losses = [r.loss for r in mine]
        mean, steps = float(np.mean(losses)), float(np.mean([r.steps for r in mine]))
        ax.scatter([i] * len(mine), losses, color=colours[i % 3], zorder=3, label=None)
        ax.hlines(mean, i - 0.2, i + 0.2, color=colours[i % 3], linewidth=3)
        ax.annotate(f"mean {mean:.2f}\n{steps:.0f} steps", (i + 0.22, mean), fontsize=8, va="center")
        summary.append(f"{design}: mean {mean:.3f} over {len(mine)} seeds, {steps:.0f} steps")
    ax.axhline(unigram_loss, linestyle="--", color=COLOURS["reference"], label="unigram baseline")
    ax.set_xticks(range(len(designs)))
    ax.set_xticklabels(designs)
    ax.set_xlim(-0.5, len(designs) - 0.3)
    label_axes(ax, "Same size, same seconds of training", None, "held-out loss, nats (lower is better)",
               legend=True, grid=True)
    return finish(ax, alt="Held-out masked-token loss per seed and its mean: " + "; ".join(summary)
                  + f"; the unigram baseline is {unigram_loss:.3f}.")
