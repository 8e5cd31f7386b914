"""Notebook 10: training a small encoder, with and without the padding mask, post-LN and pre-LN."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from .style import COLOURS, finish, label_axes, new_figure, new_or_given_axes, series_colour, to_numpy, token_ticks

#: What the notebooks reach as ``plots.<name>``.
__all__ = [
    "accuracy_vs_padding", "norm_placement_training", "predictions_by_padding", "trained_attention_maps",
    "training_accuracy_curves", "training_loss_curves",
]


def _moving_average(values, window: int):
    """Trailing mean over ``window`` points (NaN-safe enough for plotting: NaN stays NaN)."""
    values = [float(v) for v in values]
    if window <= 1:
        return values
    out, total, queue = [], 0.0, []
    for v in values:
        queue.append(v)
        total += v
        if len(queue) > window:
            total -= queue.pop(0)
        out.append(total / len(queue))
    return out


def _loss_summary(curves: dict) -> str:
    return "; ".join(f"{label}: {float(losses[0]):.3g} at the first step, {float(losses[-1]):.3g} at step {len(losses)}"
                     for label, losses in curves.items() if len(losses))


def training_loss_curves(curves: dict, title: str = "Training loss", smooth: int = 10, ax=None,
                         styles: dict | None = None):
    """Training loss against step, one curve per run (a trailing mean over ``smooth`` steps).

    Args:
        curves: ``{label: [loss at each step]}``.
        title: the axes title.
        smooth: width of the trailing mean (1 for the raw curve).
        ax: an Axes to draw into (a new figure when None).
        styles: optional ``{label: dict of plot keyword arguments}`` (colour, linestyle).
    """
    fig, ax = new_or_given_axes(ax, (7, 3.6))
    for i, (label, losses) in enumerate(curves.items()):
        style = {"color": series_colour(label, i), **(styles or {}).get(label, {})}
        ax.plot(range(1, len(losses) + 1), _moving_average(losses, smooth), label=label, **style)
    label_axes(ax, title, "optimiser step", "cross-entropy (nats per token)", legend={"fontsize": 8}, grid=True)
    return finish(ax, alt=(f"Line plot of the training loss (cross-entropy, trailing mean of {smooth} steps) against "
                           f"the optimiser step, one curve per run ({title}). " + _loss_summary(curves) + "."))


def _accuracy_axes(ax, xs_and_curves, baseline, xlabel: str, title: str, where: str) -> list[str]:
    """Draw accuracy curves (in %) with an optional dashed majority-class baseline; return a summary per curve.

    ``where`` formats an x value for the summary, e.g. ``"at step {}"``.
    """
    summary = []
    for i, (label, (xs, accs)) in enumerate(xs_and_curves):
        xs, accs = list(xs), [100 * float(a) for a in accs]
        ax.plot(xs, accs, marker="os^d"[i % 4], markersize=4, color=series_colour(label, i), label=label)
        summary.append(f"{label}: {accs[0]:.0f}% {where.format(xs[0])}, {accs[-1]:.0f}% {where.format(xs[-1])}")
    if baseline is not None:
        ax.axhline(100 * baseline, color=COLOURS["reference"], linestyle="--", label="majority-class baseline")
        summary.append(f"the majority-class baseline is {100 * baseline:.0f}%")
    ax.set_ylim(0, 100)
    label_axes(ax, title, xlabel, "accuracy (% of real tokens)", legend=True, grid=True)
    return summary


def training_accuracy_curves(curves: dict, baseline: float | None = None,
                             title: str = "Validation accuracy on real tokens"):
    """Accuracy against step, one curve per run, with the majority-class baseline as a line.

    Args:
        curves: ``{label: (steps, accuracies)}``.
        baseline: accuracy of always predicting the most common class (drawn dashed).
        title: the figure title.
    """
    fig, ax = new_figure((7, 3.6))
    summary = _accuracy_axes(ax, curves.items(), baseline, "optimiser step", title, "at step {}")
    return finish(fig, alt=(f"Line plot of the accuracy on real tokens against the optimiser step, one curve per run "
                            f"({title}). " + "; ".join(summary) + "."))


def accuracy_vs_padding(pad_counts, curves: dict, baseline: float | None = None,
                        title: str = "The same sentences, padded more and more"):
    """Accuracy on real tokens against the number of padding positions added to every sequence.

    Args:
        pad_counts: padding positions added after each sequence's longest member.
        curves: ``{label: [accuracy at each pad count]}``.
        baseline: majority-class accuracy (drawn dashed).
        title: the figure title.
    """
    fig, ax = new_figure((7, 3.6))
    summary = _accuracy_axes(ax, ((label, (pad_counts, accs)) for label, accs in curves.items()), baseline,
                             "extra padding positions per sequence", title, "with {} extra pads")
    return finish(fig, alt=(f"Line plot of the accuracy on real tokens against the padding positions added to every "
                            f"sequence ({title}). " + "; ".join(summary) + "."))


def predictions_by_padding(tokens, labels, rows: dict, title: str = "One sentence, judged at several padding lengths"):
    """A grid of predicted classes: one row per run/padding length, one column per real token.

    Each cell shows the predicted count (class + 1); wrong cells are marked with a red frame.

    Args:
        tokens: the sentence's symbols (column labels).
        labels: the true classes (0-based) of the sentence's tokens.
        rows: ``{row label: [predicted class of each real token]}``.
        title: the figure title.
    """
    names = list(rows)
    grid = np.array([[int(c) for c in rows[name]] for name in names])
    labels = [int(c) for c in labels]
    n_classes = max(int(grid.max()), max(labels)) + 1
    fig, ax = new_figure((7, 0.9 + 0.42 * (len(names) + 1)))
    full = np.vstack([np.array(labels)[None, :], grid])
    ax.imshow(full, cmap="Blues", vmin=-1, vmax=n_classes, aspect="auto")
    wrong = []
    for r in range(full.shape[0]):
        for c in range(full.shape[1]):
            ax.text(c, r, str(full[r, c] + 1), ha="center", va="center", fontsize=9,
                    color="white" if full[r, c] + 1 > 0.6 * (n_classes + 1) else "black")
            if r > 0 and full[r, c] != labels[c]:
                ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor=COLOURS["highlight"],
                                       linewidth=2.5))
        if r > 0:
            wrong.append(f"{names[r - 1]}: {int((full[r] != np.array(labels)).sum())} wrong")
    ax.set_xticks(range(len(tokens)))
    ax.set_xticklabels([str(t) for t in tokens], fontsize=9)
    ax.set_yticks(range(len(names) + 1))
    ax.set_yticklabels(["true count"] + names, fontsize=9)
    label_axes(ax, title, xlabel="token (symbol id) of the sentence")
    return finish(fig, alt=(
        f"Grid of predicted counts for the sentence {', '.join(map(str, tokens))} (columns): the first row holds "
        f"the true counts {', '.join(str(c + 1) for c in labels)}, each further row one run and padding length, "
        f"wrong cells framed. " + "; ".join(wrong) + "."))


def norm_placement_training(panels: dict, title: str = "Post-LN vs pre-LN, with and without warmup",
                            smooth: int = 10):
    """Side-by-side loss curves, one panel per depth, one curve per (placement, warmup) run.

    Args:
        panels: ``{panel title: {run label: [loss at each step]}}``; labels containing "pre-LN"
            are drawn in pre-LN's colour, others (post-LN) in post-LN's; labels containing "no warmup"
            dashed, others solid.
        title: the figure title.
        smooth: width of the trailing mean.
    """
    fig, axes = new_figure((9 if len(panels) < 3 else 10.5, 3.6), ncols=len(panels), sharey=True, squeeze=False)
    summary = []
    for ax, (name, curves) in zip(axes[0], panels.items()):
        styles = {label: {"color": COLOURS["pre_ln" if "pre-LN" in label else "post_ln"],
                          "linestyle": "-" if "no warmup" not in label else "--"}
                  for label in curves}
        training_loss_curves(curves, title=name, smooth=smooth, ax=ax, styles=styles)
        summary.append(f"{name}: {_loss_summary(curves)}")
    for ax in axes[0][1:]:
        ax.set_ylabel("")
        if ax.get_legend() is not None:  # the same four styles in every panel: one legend is enough
            ax.get_legend().remove()
    return finish(fig, title=title, alt=(
        f"{len(panels)} line plots side by side of the training loss against the optimiser step (trailing mean of "
        f"{smooth} steps), one panel per depth and one curve per run; pre-LN and post-LN in two colours, runs "
        f"without warmup dashed. " + " ".join(s + "." for s in summary)))


def trained_attention_maps(maps, tokens, title: str = "What the trained model attends to"):
    """Every head of every layer for one sequence: one heatmap each, layers in rows, heads in columns.

    All maps share one colour scale, from 0 to the largest weight shown, so that the small weights of a
    spread-out head stay visible (a scale to 1 would draw them all dark).

    Args:
        maps: one ``(H, L, L)`` tensor of attention weights per layer (rows = queries, columns = keys).
        tokens: the sequence's symbols, for both axes.
        title: the figure title.
    """
    weights = np.stack([to_numpy(m) for m in maps])  # (n_layers, H, L, L)
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] != len(tokens):
        raise ValueError(f"maps must be one (H, L, L) per layer with L = {len(tokens)} tokens, "
                         f"got {[tuple(to_numpy(m).shape) for m in maps]}")
    n_layers, n_heads, length, _ = weights.shape
    top = max(float(weights.max()), 1e-6)
    fig, axes = new_figure((2.2 * n_heads + 0.8, 2.2 * n_layers + 0.6), nrows=n_layers, ncols=n_heads,
                           squeeze=False, layout="constrained")
    labels = [str(t) for t in tokens]
    for layer in range(n_layers):
        for head in range(n_heads):
            ax = axes[layer][head]
            image = ax.imshow(weights[layer, head], cmap="viridis", vmin=0, vmax=top)
            ax.set_title(f"layer {layer + 1}, head {head}", fontsize=9)
            token_ticks(ax, labels, rotation=0, fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight")
    fig.supxlabel("key (the symbol attended to)", fontsize=9)
    fig.supylabel("query (the symbol attending)", fontsize=9)
    largest = weights.max(axis=-1).mean(axis=-1)  # (n_layers, H): mean largest weight per row
    return finish(fig, title=f"{title} (colour: weight, 0 to {top:.2f})", title_size=10, alt=(
        f"{n_layers} rows of {n_heads} heatmaps, one per head of each layer, each {length} queries by {length} keys "
        f"over the symbols {', '.join(labels)} ({title}). Rows sum to 1; the largest weight is {top:.2f}, and the "
        f"largest weight of a row averages from {largest.min():.2f} to {largest.max():.2f} across the heads, "
        f"against {1 / length:.2f} for uniform attention."))
