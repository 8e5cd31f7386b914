"""Notebook 02: attention weights, and why the scores are divided by sqrt(d_k)."""

from __future__ import annotations

import math

from .style import COLOURS, describe_range, finish, label_axes, new_figure, to_numpy, token_ticks

#: What the notebooks reach as ``plots.<name>``.
__all__ = [
    "attention_row_bars", "attention_weights_heatmap", "qk_variance_by_dk", "query_gradient_spread",
    "softmax_saturation",
]


def qk_variance_by_dk(d_ks, raw_variances, scaled_variances):
    """Log-log plot of the variance of ``q . k`` against d_k, raw and divided by sqrt(d_k).

    Args:
        d_ks: the key widths measured.
        raw_variances: variance of ``q . k`` for each d_k.
        scaled_variances: variance of ``q . k / sqrt(d_k)`` for each d_k.
    """
    d_ks = list(d_ks)
    fig, ax = new_figure((7, 3.5))
    ax.loglog(d_ks, raw_variances, "o-", color=COLOURS["without_scale"], label="q · k (measured)")
    ax.loglog(d_ks, d_ks, "--", color="black", lw=0.8, label="d_k (prediction)")
    ax.loglog(d_ks, scaled_variances, "s-", color=COLOURS["with_scale"], label="q · k / √d_k (measured)")
    ax.set_xscale("log", base=2)
    label_axes(ax, "Dot products of random unit-variance vectors: variance grows like d_k",
               "d_k (features per query and key)", "variance of the score", legend=True, title_size=12)
    return finish(fig, alt=(
        f"Log-log plot against d_k from {d_ks[0]} to {d_ks[-1]}: the variance of q · k (circles) follows the "
        f"dashed line variance = d_k, {describe_range(raw_variances)}, while q · k / √d_k (squares) stays "
        f"near 1, {describe_range(scaled_variances)}."))


def softmax_saturation(d_ks, unscaled: dict, scaled: dict):
    """Three panels against d_k: largest weight, entropy, and softmax gradient norm, with and without the scale.

    Args:
        d_ks: the key widths measured.
        unscaled: ``{"max weight": [...], "entropy": [...], "gradient norm": [...]}`` for raw scores.
        scaled: the same keys for scores divided by sqrt(d_k).
    """
    d_ks = list(d_ks)
    keys = ("max weight", "entropy", "gradient norm")
    titles = ("largest weight", "entropy", "softmax's gradient w.r.t. scores")
    units = ("largest weight in a row", "entropy (nats)", "‖∂softmax/∂scores‖ (Frobenius)")
    fig, axes = new_figure((9, 3.3), ncols=3)
    for ax, key, panel, unit in zip(axes, keys, titles, units):
        ax.plot(d_ks, unscaled[key], "o-", color=COLOURS["without_scale"], label="q·k (no scale)")
        ax.plot(d_ks, scaled[key], "s--", color=COLOURS["with_scale"], label="q·k / √d_k")
        ax.set_xscale("log", base=2)
        label_axes(ax, panel, "d_k", unit)
    axes[0].legend(fontsize=8)
    parts = "; ".join(f"{panel}: {describe_range(unscaled[key])} without the scale, {describe_range(scaled[key])} "
                      "with it" for key, panel in zip(keys, titles))
    return finish(fig, title="Without the 1/√d_k scale, softmax saturates as d_k grows", alt=(
        f"Three line plots against d_k from {d_ks[0]} to {d_ks[-1]}, each with a curve for raw scores q·k "
        f"(circles) and for q·k / √d_k (squares). {parts}. Without the scale the rows become one-hot as d_k "
        "grows; with it they do not."))


def attention_row_bars(weights, labels, title: str = "One attention row"):
    """Bar chart of one query's attention weights over the keys, with the row's entropy.

    Args:
        weights: 1-D tensor or array of weights (summing to 1).
        labels: one label per key.
        title: first line of the title (the entropy is added on a second line).
    """
    values = to_numpy(weights)
    entropy = -sum(float(p) * math.log(float(p)) for p in values if p > 0)
    fig, ax = new_figure((6, 3.2))
    ax.bar(range(len(values)), values, color=COLOURS["weights"])
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 1.05)
    uniform = math.log(len(values))
    label_axes(ax, f"{title}\nentropy {entropy:.2f} nats (uniform: {uniform:.2f}, one-hot: 0)", "key",
               "attention weight")
    top = int(values.argmax())
    return finish(fig, alt=(
        f"Bar chart of one query's attention weights over {len(values)} keys ({title}). The largest weight is "
        f"{values[top]:.2f} on key {labels[top]}; the row's entropy is {entropy:.2f} nats, where uniform weights "
        f"would give {uniform:.2f} and a one-hot row 0."))


def attention_weights_heatmap(weights, labels, title: str = "Attention weights"):
    """Heatmap of an ``(L_q, L_k)`` attention matrix with the tokens as tick labels and values written in.

    Args:
        weights: 2-D tensor or array, rows = queries, columns = keys.
        labels: one label per token (used for both axes).
        title: figure title.
    """
    values = to_numpy(weights)
    fig, ax = new_figure((4.8, 3.8))
    image = ax.imshow(values, cmap="Oranges", vmin=0, vmax=1)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if values[i, j] > 0.6 else "black")
    token_ticks(ax, labels, max_labels=None, rotation=0)
    label_axes(ax, None, "key (attended to)", "query (attending)")
    fig.colorbar(image, ax=ax, label="weight")
    i, j = divmod(int(values.argmax()), values.shape[1])
    # The title over the whole figure: over the axes alone a long one runs into the colour bar.
    return finish(fig, title=title, title_size=12, alt=(
        f"Heatmap of attention weights: {values.shape[0]} queries (rows) by {values.shape[1]} keys (columns), "
        f"tokens {', '.join(map(str, labels))}; darker orange is a larger weight and each row sums to 1. The "
        f"largest weight, {values[i, j]:.2f}, goes from query {labels[i]} to key {labels[j]}."))


def query_gradient_spread(unscaled, scaled, d_k: int):
    """Histograms of the per-query gradient norms ``‖∂L/∂q‖``, with and without the 1/sqrt(d_k) scale.

    Args:
        unscaled: 1-D gradient norms, one per query, for raw scores ``q . k``.
        scaled: the same for scores ``q . k / sqrt(d_k)``.
        d_k: the key width measured (for the title and alt text).
    """
    import numpy as np

    raw, fixed = to_numpy(unscaled).ravel(), to_numpy(scaled).ravel()
    floor = 1e-12  # log axis: an exactly-zero gradient is drawn at this value
    raw_log, fixed_log = np.log10(np.maximum(raw, floor)), np.log10(np.maximum(fixed, floor))
    low, high = min(raw_log.min(), fixed_log.min()), max(raw_log.max(), fixed_log.max())
    bins = np.linspace(np.floor(low), np.ceil(high), 41)
    fig, ax = new_figure((7, 3.5))
    for values, norms, key, label, hatch in ((raw_log, raw, "without_scale", "q·k (no scale)", "//"),
                                             (fixed_log, fixed, "with_scale", "q·k / √d_k", None)):
        ax.hist(values, bins=bins, color=COLOURS[key], alpha=0.55, hatch=hatch, edgecolor=COLOURS[key],
                label=f"{label}: median {np.median(norms):.2g}, mean {norms.mean():.2g}")
        ax.axvline(np.log10(max(np.median(norms), floor)), color=COLOURS[key], lw=1.5,
                   ls="--" if hatch else "-")
    if (raw < floor).any() or (fixed < floor).any():
        ax.annotate(f"≤ {floor:g}\n(incl. exactly 0)", (bins[0], 0), xytext=(0, 28), textcoords="offset points",
                    fontsize=8, ha="left", va="bottom")
    label_axes(ax, f"The gradient reaching each query, d_k = {d_k}",
               "log10 ‖∂L/∂q‖ (one query per count; dashed/solid line: median)", "queries",
               legend={"fontsize": 8, "loc": "upper left"}, title_size=12)

    def share(norms, cut):
        return float((norms < cut).mean())

    return finish(fig, alt=(
        f"Two overlaid histograms of the gradient norm reaching each of {len(raw)} queries at d_k = {d_k}, on a log "
        f"scale. With the 1/√d_k scale the norms sit in one narrow bump, {describe_range(fixed)}, median "
        f"{np.median(fixed):.2g}. Without it they spread over many orders of magnitude, {describe_range(raw)}, "
        f"median {np.median(raw):.2g}: {share(raw, 0.01 * np.median(fixed)):.0%} of the queries get less than a "
        f"hundredth of the scaled median, while a few get far more than any scaled query."))
