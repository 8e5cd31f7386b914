"""Figures for the notebooks (matplotlib only). Every figure is titled and its axes labelled."""

from __future__ import annotations

import matplotlib.pyplot as plt

plt.rcParams["figure.dpi"] = 80


# --- notebooks 00-02: the encoder map, positions, attention scale ------------------------------

_MAP_COLOURS = {
    "ids": "#eeeeee",
    "embed": "#d8f0d2",
    "attn": "#fde2c4",
    "ffn": "#cfe3f7",
    "norm": "#fbf3b5",
    "out": "#eeeeee",
}


def draw_encoder_block(norm_first: bool = False, n_layers: int | None = None, ax=None):
    """Draw the map of an encoder: embeddings and positions in, one layer repeated N times, out.

    The layer is drawn post-LN (``norm_first=False``: add, then LayerNorm, as in the 2017 paper
    and BERT) or pre-LN (``norm_first=True``: LayerNorm inside each residual branch, plus one final
    LayerNorm after the stack). Every arrow on the main path carries an ``L x d_model`` matrix.

    Args:
        norm_first: False for post-LN, True for pre-LN.
        n_layers: number of layers written on the repeat bracket (``N`` when None).
        ax: a matplotlib Axes to draw into (a new figure when None).

    Returns:
        the matplotlib Figure holding the drawing.
    """
    from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

    if ax is None:
        fig, ax = plt.subplots(figsize=(4.8, 6.6), dpi=80)
    else:
        fig = ax.figure
    ax.set_xlim(0, 60)
    ax.set_ylim(0, 100)
    ax.set_axis_off()

    # The main path, bottom to top: (kind, label, height).
    layer = (
        [("norm", "LayerNorm", 4.2), ("attn", "multi-head\nself-attention", 6.5), ("add", "", 4.0),
         ("norm", "LayerNorm", 4.2), ("ffn", "feed-forward\n(each position)", 6.5), ("add", "", 4.0)]
        if norm_first
        else [("attn", "multi-head\nself-attention", 6.5), ("add", "", 4.0), ("norm", "LayerNorm", 4.2),
              ("ffn", "feed-forward\n(each position)", 6.5), ("add", "", 4.0), ("norm", "LayerNorm", 4.2)]
    )
    items = [("ids", "token ids (length L)", 4.2), ("embed", "token embedding\n+ position", 6.5)]
    first_in_layer = len(items)
    items += layer
    last_in_layer = len(items) - 1
    if norm_first:
        items.append(("norm", "final LayerNorm", 4.2))
    items.append(("out", "output H", 4.2))

    gap = 4.0 if norm_first else 4.6
    # The arrows entering and leaving the repeated layer get twice the room (the frame crosses them).
    gaps = [2 * gap if i in (first_in_layer - 1, last_in_layer) else gap for i in range(len(items) - 1)]
    total = sum(h for _, _, h in items) + sum(gaps)
    x0, width = 25.0, 22.0
    y = (100 - total) / 2 - 2
    boxes = []  # (bottom, top) of each item
    for i, (kind, label, height) in enumerate(items):
        if i:
            y += gaps[i - 1]
        boxes.append((y, y + height))
        if kind == "add":
            ax.add_patch(Circle((x0, y + height / 2), height / 2, fc="white", ec="black", lw=1.2))
            ax.text(x0, y + height / 2, "+", ha="center", va="center", fontsize=12)
        else:
            ax.add_patch(FancyBboxPatch((x0 - width / 2, y), width, height,
                                        boxstyle="round,pad=0.3,rounding_size=1.2",
                                        fc=_MAP_COLOURS[kind], ec="black", lw=1.0))
            ax.text(x0, y + height / 2, label, ha="center", va="center", fontsize=8.5)
        y += height

    def arrow(x1, y1, x2, y2):
        ax.add_patch(FancyArrowPatch((x1, y1), (x2, y2), arrowstyle="-|>", mutation_scale=9,
                                     lw=1.0, color="black", shrinkA=0, shrinkB=0))

    # Arrows between consecutive items, each labelled with the shape it carries.
    for i in range(len(items) - 1):
        y1, y2 = boxes[i][1], boxes[i + 1][0]
        arrow(x0, y1, x0, y2)
        shape = "L ids" if i == 0 else "L × d_model"
        y_text = (y1 + y2) / 2
        if i == first_in_layer - 1:  # below the frame
            y_text = y2 - 1.5 * gap
        elif i == last_in_layer:  # above the frame
            y_text = y1 + 1.4 * gap
        ax.text(x0 + 1.2, y_text, shape, ha="left", va="center", fontsize=7.5, color="#444444")

    # Residual paths: they leave the main path below each sublayer and rejoin at the "+".
    adds = [i for i, (kind, _, _) in enumerate(items) if kind == "add"]
    starts = [first_in_layer, adds[0] + 1] if norm_first else [first_in_layer, adds[0] + 2]
    xr = x0 - width / 2 - 3.5
    for start, add in zip(starts, adds):
        yb = boxes[start][0] - gap / 2  # branch point, on the arrow entering the sublayer
        ya = (boxes[add][0] + boxes[add][1]) / 2
        ax.plot([x0, xr, xr], [yb, yb, ya], color="#555555", lw=1.0)
        ax.plot([x0], [yb], marker="o", ms=3, color="#555555")
        r = (boxes[add][1] - boxes[add][0]) / 2
        arrow(xr, ya, x0 - r, ya)
    ax.text(xr - 0.8, (boxes[first_in_layer][0] + boxes[adds[0]][1]) / 2, "residual", rotation=90,
            ha="right", va="center", fontsize=7.5, color="#555555")

    # The repeated layer, framed, with its repeat count.
    bottom = boxes[first_in_layer][0] - gap
    top = boxes[last_in_layer][1] + gap * 0.6
    ax.add_patch(FancyBboxPatch((xr - 4.5, bottom), (x0 + width / 2 + 12) - (xr - 4.5), top - bottom,
                                boxstyle="round,pad=0.2,rounding_size=2", fc="none", ec="#777777",
                                lw=1.0, ls="--"))
    count = "N" if n_layers is None else str(n_layers)
    ax.text(x0 + width / 2 + 11, top - 1.5, f"× {count}", ha="right", va="top", fontsize=11,
            fontweight="bold")
    ax.text(x0 + width / 2 + 11, bottom + 1.0, "encoder\nlayer", ha="right", va="bottom",
            fontsize=7.5, color="#555555")
    if norm_first:
        ax.text(x0 + width / 2 + 1.5, (boxes[last_in_layer + 1][0] + boxes[last_in_layer + 1][1]) / 2,
                "once, after\nthe stack", ha="left", va="center", fontsize=7, color="#555555")
    name = "pre-LN: LayerNorm before each sublayer" if norm_first else "post-LN: LayerNorm after each add"
    note = "(GPT-2 and most recent models)" if norm_first else "(the 2017 paper, BERT)"
    ax.set_title(f"Encoder, {name}\n{note}", fontsize=10)
    return fig


def position_table_heatmap(table, title: str = "Sinusoidal position table"):
    """Heatmap of a position table, one row per position and one column per feature.

    Args:
        table: tensor or array ``(seq_len, d_model)``.
        title: figure title.
    """
    values = table.detach().cpu().numpy() if hasattr(table, "detach") else table
    fig, ax = plt.subplots(figsize=(7, 3.5), dpi=80)
    image = ax.imshow(values, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    fig.colorbar(image, ax=ax, label="value")
    ax.set_xlabel("feature index (even = sin, odd = cos)")
    ax.set_ylabel("position")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def position_offset_similarity(offsets, curves: dict, title: str = "Similarity of two positions by offset"):
    """Line plot of a similarity between position vectors as a function of their offset.

    Args:
        offsets: the offsets k (x axis).
        curves: ``{label: values}``, one curve per label (e.g. per d_model).
        title: figure title.
    """
    fig, ax = plt.subplots(figsize=(7, 3.5), dpi=80)
    for label, values in curves.items():
        values = values.detach().cpu().numpy() if hasattr(values, "detach") else values
        ax.plot(offsets, values, label=str(label))
    ax.axhline(0, color="grey", lw=0.6)
    ax.set_xlabel("offset k between the two positions (tokens)")
    ax.set_ylabel("cosine similarity")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def qk_variance_by_dk(d_ks, raw_variances, scaled_variances):
    """Log-log plot of the variance of ``q . k`` against d_k, raw and divided by sqrt(d_k).

    Args:
        d_ks: the key widths measured.
        raw_variances: variance of ``q . k`` for each d_k.
        scaled_variances: variance of ``q . k / sqrt(d_k)`` for each d_k.
    """
    fig, ax = plt.subplots(figsize=(7, 3.5), dpi=80)
    ax.loglog(d_ks, raw_variances, "o-", label="q · k (measured)")
    ax.loglog(d_ks, d_ks, "k--", lw=0.8, label="d_k (prediction)")
    ax.loglog(d_ks, scaled_variances, "s-", label="q · k / √d_k (measured)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("d_k (features per query and key)")
    ax.set_ylabel("variance of the score")
    ax.set_title("Dot products of random unit-variance vectors: variance grows like d_k")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def softmax_saturation(d_ks, unscaled: dict, scaled: dict):
    """Three panels against d_k: largest weight, entropy, and softmax gradient norm, with and without the scale.

    Args:
        d_ks: the key widths measured.
        unscaled: ``{"max weight": [...], "entropy": [...], "gradient norm": [...]}`` for raw scores.
        scaled: the same keys for scores divided by sqrt(d_k).
    """
    keys = ("max weight", "entropy", "gradient norm")
    units = ("largest weight in a row", "entropy (nats)", "‖∂softmax/∂scores‖ (Frobenius)")
    fig, axes = plt.subplots(1, 3, figsize=(9, 3.3), dpi=80)
    for ax, key, unit in zip(axes, keys, units):
        ax.plot(d_ks, unscaled[key], "o-", label="q·k (no scale)")
        ax.plot(d_ks, scaled[key], "s-", label="q·k / √d_k")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.set_ylabel(unit)
        ax.set_title(key)
    axes[0].legend(fontsize=7)
    fig.suptitle("Without the 1/√d_k scale, softmax saturates as d_k grows", fontsize=10)
    fig.tight_layout()
    return fig


def attention_row_bars(weights, labels, title: str = "One attention row"):
    """Bar chart of one query's attention weights over the keys, with the row's entropy.

    Args:
        weights: 1-D tensor or array of weights (summing to 1).
        labels: one label per key.
        title: first line of the title (the entropy is added on a second line).
    """
    import math

    values = weights.detach().cpu().numpy() if hasattr(weights, "detach") else weights
    entropy = -sum(float(p) * math.log(float(p)) for p in values if p > 0)
    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=80)
    ax.bar(range(len(values)), values, color="#e08a3c")
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("key")
    ax.set_ylabel("attention weight")
    ax.set_title(f"{title}\nentropy {entropy:.2f} nats (uniform: {math.log(len(values)):.2f}, one-hot: 0)",
                 fontsize=10)
    fig.tight_layout()
    return fig


def attention_weights_heatmap(weights, labels, title: str = "Attention weights"):
    """Heatmap of an ``(L_q, L_k)`` attention matrix with the tokens as tick labels and values written in.

    Args:
        weights: 2-D tensor or array, rows = queries, columns = keys.
        labels: one label per token (used for both axes).
        title: figure title.
    """
    values = weights.detach().cpu().numpy() if hasattr(weights, "detach") else weights
    fig, ax = plt.subplots(figsize=(4.8, 3.8), dpi=80)
    image = ax.imshow(values, cmap="Oranges", vmin=0, vmax=1)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label="weight")
    fig.tight_layout()
    return fig


# --- notebooks 07-08: norm placement, parameter breakdowns ---------------------------------------

_NORM_COLOURS = {False: "#d62728", True: "#1f77b4"}  # post-LN red, pre-LN blue


def norm_placement_curves(profiles: dict, title: str = "A fresh stack at initialisation"):
    """Gradient norm and residual-stream scale per layer, one line per stack.

    Args:
        profiles: ``{label: (norm_first, grad_norm, stream_std)}`` where ``grad_norm`` has one
            value per layer (norm of the gradient of that layer's parameters) and ``stream_std``
            one value for the input and one after each layer.
        title: the figure's title.

    Returns:
        the matplotlib Figure (left: gradient norms, right: residual-stream std).
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), dpi=80)
    for label, (norm_first, grads, stds) in profiles.items():
        colour = _NORM_COLOURS[bool(norm_first)]
        left.plot(range(1, len(grads) + 1), grads, "o-", ms=3, color=colour, label=label)
        right.plot(range(len(stds)), stds, "o-", ms=3, color=colour, label=label)
    left.set_xlabel("layer (1 = nearest the input)")
    left.set_ylabel("‖gradient‖ of the layer's parameters")
    left.set_ylim(bottom=0)
    left.set_title("gradient norm per layer", fontsize=10)
    right.set_xlabel("after layer (0 = the input)")
    right.set_ylabel("std of the residual stream")
    right.set_ylim(bottom=0)
    right.set_title("activation scale per layer", fontsize=10)
    left.legend(fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def norm_placement_panel(norm_first: bool, grad_norm, stream_std, grad_max: float = 0.7,
                         std_max: float = 6.0):
    """The encoder diagram for one norm placement next to its gradient norms and activation scale.

    Args:
        norm_first: False for post-LN, True for pre-LN.
        grad_norm: one gradient norm per layer.
        stream_std: residual-stream std for the input and after each layer.
        grad_max, std_max: upper y limits (fixed, so that switching placement compares like with like;
            raised when a value is larger).

    Returns:
        the matplotlib Figure.
    """
    depth = len(grad_norm)
    fig = plt.figure(figsize=(9, 4.5), dpi=80)
    grid = fig.add_gridspec(2, 2, width_ratios=[1.0, 1.25], hspace=0.6, wspace=0.2,
                            left=0.0, right=0.97, top=0.92, bottom=0.11)
    diagram = fig.add_subplot(grid[:, 0])
    draw_encoder_block(norm_first=norm_first, n_layers=depth, ax=diagram)
    for text in diagram.texts:  # the diagram is drawn smaller here than on its own
        text.set_fontsize(text.get_fontsize() * 0.85)
    diagram.title.set_fontsize(9)
    colour = _NORM_COLOURS[bool(norm_first)]
    top = fig.add_subplot(grid[0, 1])
    top.bar(range(1, depth + 1), grad_norm, color=colour)
    top.set_xlim(0.4, max(depth, 2) + 0.6)
    top.set_ylim(0, max(grad_max, 1.1 * max(grad_norm)))
    top.set_xlabel("layer (1 = nearest the input)")
    top.set_ylabel("‖gradient‖")
    top.set_title(f"gradient norm of each layer's parameters (last/first = "
                  f"{grad_norm[-1] / grad_norm[0]:.2f})", fontsize=9)
    bottom = fig.add_subplot(grid[1, 1])
    bottom.plot(range(depth + 1), stream_std, "o-", ms=3, color=colour)
    bottom.axhline(1.0, color="grey", lw=0.6, ls="--")
    bottom.set_xlim(-0.4, depth + 0.4)
    bottom.set_ylim(0, max(std_max, 1.1 * max(stream_std)))
    bottom.set_xlabel("after layer (0 = the input)")
    bottom.set_ylabel("std")
    bottom.set_title(f"residual-stream std (after the last layer: {stream_std[-1]:.2f})", fontsize=9)
    return fig


def parameter_breakdown(counts: dict, title: str = "Where the parameters are"):
    """Horizontal bars of a parameter count by component, in millions, with each share in percent.

    Args:
        counts: a dict as returned by :func:`encoder_course.count_parameters` (keys ``embeddings,
            attention, feed_forward, norms, other, total``); ``other`` is drawn only when non-zero
            (a pooler or task head, for instance).
        title: the figure's title.

    Returns:
        the matplotlib Figure.
    """
    names = [("embeddings", "embeddings"), ("attention", "attention"),
             ("feed_forward", "feed-forward"), ("norms", "LayerNorms")]
    if counts.get("other", 0):
        names.append(("other", "other (pooler, heads)"))
    total = counts["total"]
    values = [counts[key] / 1e6 for key, _ in names]
    colours = ["#9ecf8f", "#f5b971", "#7fb2e5", "#e8d85a", "#bbbbbb"][:len(names)]
    fig, ax = plt.subplots(figsize=(7.5, 3.2), dpi=80)
    bars = ax.barh([label for _, label in names], values, color=colours)
    ax.invert_yaxis()
    right = max(values) if max(values) > 0 else 1.0
    for bar, (key, _) in zip(bars, names):
        share = 100 * counts[key] / total if total else 0.0
        ax.text(bar.get_width() + 0.01 * right, bar.get_y() + bar.get_height() / 2,
                f"{counts[key]:,}  ({share:.1f}%)" if share >= 1 else f"{counts[key]:,}  ({share:.2f}%)",
                va="center", fontsize=8)
    ax.set_xlim(0, right * 1.45)
    ax.set_xlabel("parameters (millions)")
    ax.set_title(f"{title}: {total:,} in all", fontsize=10)
    # Fixed margins rather than tight_layout: the configuration explorer redraws this often.
    fig.subplots_adjust(left=0.25, right=0.97, top=0.83, bottom=0.15)
    return fig


# --- masks and multi-head attention (notebooks 03, 04) ---------------------------------------


def _label_axes_with_tokens(ax, tokens, max_labels=16):
    """Token names on both axes when there are few enough to read."""
    if tokens is not None and len(tokens) <= max_labels:
        ax.set_xticks(range(len(tokens)))
        ax.set_xticklabels(tokens, rotation=45, ha="right")
        ax.set_yticks(range(len(tokens)))
        ax.set_yticklabels(tokens)


def mask_grid(masks, titles, tokens=None):
    """Show bool masks side by side (dark = may attend).

    Args:
        masks: a list of bool tensors or arrays, each ``(L_q, L_k)``.
        titles: one title per mask.
        tokens: optional token strings for the axes.
    """
    fig, axes = plt.subplots(1, len(masks), figsize=(3.0 * len(masks) + 0.5, 3.4), squeeze=False)
    for ax, mask, title in zip(axes[0], masks, titles):
        m = mask.detach().cpu().float().numpy() if hasattr(mask, "detach") else mask
        ax.imshow(m, cmap="Greys", vmin=0, vmax=1)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("key position (attended to)")
        ax.set_ylabel("query position (attending)")
        _label_axes_with_tokens(ax, tokens)
    fig.suptitle("Attention masks: dark = may attend, white = blocked", fontsize=11)
    fig.tight_layout()
    return fig


def padding_drift_figure(weights, drift, tokens, n_real, use_mask, drift_max):
    """The padding explorer's picture: attention weights and how far the real tokens moved.

    Args:
        weights: ``(L, L)`` attention weights of the padded sequence (e.g. averaged over heads).
        drift: ``(n_real,)`` max absolute change of each real token's output vs the unpadded sentence.
        tokens: the real tokens' strings.
        n_real: number of real tokens (the rest of the ``L`` positions are padding).
        use_mask: whether the padding mask was used (for the titles).
        drift_max: upper limit of the drift axis, fixed so toggling the mask is easy to compare.
    """
    w = weights.detach().cpu().float().numpy() if hasattr(weights, "detach") else weights
    d = drift.detach().cpu().float().numpy() if hasattr(drift, "detach") else drift
    length = w.shape[-1]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.8), gridspec_kw={"width_ratios": [1.15, 1]},
                                   layout="constrained")
    im = ax1.imshow(w, cmap="viridis", vmin=0, vmax=max(float(w.max()), 1e-6), aspect="auto",
                    interpolation="nearest")
    if length > n_real:
        ax1.axvline(n_real - 0.5, color="white", lw=1, ls="--")
        ax1.axhline(n_real - 0.5, color="white", lw=1, ls="--")
    ax1.set_title(f"Attention, last layer ({'mask ON' if use_mask else 'NO mask'}, L = {length})",
                  fontsize=10)
    ax1.set_xlabel(f"key position (>= {n_real}: padding)")
    ax1.set_ylabel("query position")
    fig.colorbar(im, ax=ax1, fraction=0.046, pad=0.04, label="weight")
    colors = "tab:green" if use_mask else "tab:red"
    ax2.bar(range(len(d)), d, color=colors)
    ax2.set_xticks(range(len(d)))
    ax2.set_xticklabels(tokens)
    ax2.set_ylim(0, drift_max)
    if float(d.max()) < 0.01 * drift_max:
        ax2.text(0.5, 0.5, f"all bars ~ 0\n(largest {float(d.max()):.1e})", transform=ax2.transAxes,
                 ha="center", va="center", fontsize=11, color="tab:green")
    ax2.set_xlabel("real token")
    ax2.set_ylabel("max |output change| vs unpadded")
    ax2.set_title(f"Drift of the real tokens: max {float(d.max()):.1e}", fontsize=10)
    return fig


def drift_vs_padding(pad_lengths, drift_without_mask, drift_with_mask, floor=1e-9):
    """Max change of the real tokens' outputs against the amount of padding, with and without mask.

    Values are clipped at ``floor`` so the log axis can show exact zeros.
    """
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.semilogy(pad_lengths, np.maximum(np.asarray(drift_without_mask, dtype=float), floor), "o-",
                color="tab:red", label="without padding mask")
    ax.semilogy(pad_lengths, np.maximum(np.asarray(drift_with_mask, dtype=float), floor), "s-",
                color="tab:green", label="with padding mask")
    ax.set_xlabel("padding positions appended to the sentence")
    ax.set_ylabel("max |output change| (log scale)")
    ax.set_title("Same sentence, more padding: do its real tokens' outputs move?")
    ax.legend()
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    return fig


def head_maps(weights, tokens=None, highlight=None, title="Attention weights of every head"):
    """One small heatmap per head.

    Args:
        weights: ``(H, L, L)`` attention weights of one sequence.
        tokens: optional token strings for the axes.
        highlight: index of a head to frame in red.
    """
    w = weights.detach().cpu().float().numpy() if hasattr(weights, "detach") else weights
    n_heads = w.shape[0]
    cols = min(n_heads, 4)
    rows = (n_heads + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(2.1 * cols + 0.6, 2.1 * rows + 0.6), squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h >= n_heads:
            ax.axis("off")
            continue
        ax.imshow(w[h], cmap="viridis", vmin=0, vmax=1)
        ax.set_title(f"head {h}", fontsize=9, color="red" if h == highlight else "black")
        if h == highlight:
            for spine in ax.spines.values():
                spine.set_edgecolor("red")
                spine.set_linewidth(2)
        if tokens is not None and len(tokens) <= 10:
            ax.set_xticks(range(len(tokens)))
            ax.set_xticklabels(tokens, rotation=60, fontsize=7)
            ax.set_yticks(range(len(tokens)))
            ax.set_yticklabels(tokens, fontsize=7)
        else:
            ax.set_xlabel("key", fontsize=8)
            ax.set_ylabel("query", fontsize=8)
    fig.suptitle(f"{title} (colour: weight 0 to 1; rows = queries, columns = keys)", fontsize=10)
    fig.tight_layout()
    return fig


def head_view_figure(weights, head, tokens, layer=None, note=""):
    """The heads explorer's picture: one head's attention map, and every head's row entropy.

    Args:
        weights: ``(H, L, L)`` attention weights of one sequence.
        head: the head to show large.
        tokens: token strings.
        layer: layer index, for the title.
        note: text appended to the map's title (e.g. " (random weights)").
    """
    import math

    w = weights.detach().cpu().float() if hasattr(weights, "detach") else weights
    n_heads, length, _ = w.shape
    entropy = -(w * w.clamp_min(1e-12).log2()).sum(-1).mean(-1)  # (H,), bits, averaged over queries
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.9), gridspec_kw={"width_ratios": [1.2, 1]},
                                   layout="constrained")
    top = max(float(w.max()), 1e-6)  # one colour scale for every head, so heads compare fairly
    im = ax1.imshow(w[head].numpy(), cmap="viridis", vmin=0, vmax=top)
    for i in range(length):
        for j in range(length):
            value = float(w[head, i, j])
            ax1.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7,
                     color="black" if value > 0.6 * top else "white")
    _label_axes_with_tokens(ax1, tokens)
    ax1.set_xlabel("key (attended to)")
    ax1.set_ylabel("query (attending)")
    where = f"layer {layer}, " if layer is not None else ""
    ax1.set_title(f"{where}head {head}: attention weights{note}", fontsize=10)
    fig.colorbar(im, ax=ax1, fraction=0.046, pad=0.04, label="weight")
    colors = ["tab:red" if h == head else "tab:blue" for h in range(n_heads)]
    ax2.bar(range(n_heads), entropy.numpy(), color=colors)
    ax2.axhline(math.log2(length), color="grey", ls="--", label=f"uniform: log2({length})")
    ax2.set_ylim(0, math.log2(length) * 1.15)
    ax2.set_xticks(range(n_heads))
    ax2.set_xlabel("head")
    ax2.set_ylabel("mean row entropy (bits)")
    ax2.set_title("How spread out each head's attention is", fontsize=10)
    ax2.legend(loc="lower right", fontsize=8)
    return fig


def score_rank_plot(d_heads, ranks, seq_len):
    """Rank of one head's score matrix against its width d_head (the rank can never exceed d_head)."""
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(d_heads, ranks, "o-", label="measured rank of Q_h K_h^T")
    ax.plot(d_heads, [min(d, seq_len) for d in d_heads], "k--", lw=1, label="min(d_head, L)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(d_heads)
    ax.set_xticklabels([str(d) for d in d_heads])
    ax.set_xlabel("d_head (= d_model / n_heads), log scale")
    ax.set_ylabel("rank of one head's L x L scores")
    ax.set_title(f"Narrow heads have low-rank scores (L = {seq_len})")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


# --- notebook 11: the real pretrained encoder ------------------------------------------------


def similarity_heatmap(similarity, labels, title: str = "Cosine similarity of sentence embeddings"):
    """Heatmap of an ``(N, N)`` cosine-similarity matrix with the values written in.

    Args:
        similarity: 2-D tensor or array, entries in [-1, 1].
        labels: one short label per sentence (both axes).
        title: figure title.
    """
    values = similarity.detach().cpu().float().numpy() if hasattr(similarity, "detach") else similarity
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    image = ax.imshow(values, cmap="RdBu_r", vmin=-1, vmax=1)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if abs(values[i, j]) > 0.6 else "black")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("sentence")
    ax.set_ylabel("sentence")
    ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, label="cosine similarity (no unit)")
    fig.tight_layout()
    return fig


# --- notebooks 05-06: residual paths, activations, position-wise mixing -------------------------

def gradient_ratio_vs_depth(depths, curves: dict, title: str = "Gradient reaching layer 1, relative to the last layer"):
    """Log-scale curves of ``|grad W_1| / |grad W_depth|`` against depth, one per kind of stack.

    Args:
        depths: the depths measured (x axis).
        curves: ``{label: [ratio at each depth]}``.
        title: the figure title.
    """
    fig, ax = plt.subplots(figsize=(7, 3.6))
    markers = "osd^v<>"
    for i, (label, ratios) in enumerate(curves.items()):
        ax.plot(list(depths), [float(r) for r in ratios], marker=markers[i % len(markers)], ms=4, label=label)
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("depth (number of sublayers)")
    ax.set_ylabel("|grad layer 1| / |grad last layer|")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def gradient_norm_per_layer(norms, residual: bool, reference=None, reference_label: str = "",
                            title: str | None = None):
    """Gradient norm of each layer's weight, layer 1 on the left, on a log scale.

    Args:
        norms: one gradient norm per layer (layer 1 first).
        residual: whether the measured stack had residual connections (for the label).
        reference: optional second curve (the other setting), drawn dashed for comparison.
        reference_label: its legend label.
        title: the figure title (a default naming the depth and setting when None).
    """
    norms = [float(n) for n in norms]
    depth = len(norms)
    layers = list(range(1, depth + 1))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    label = "with residual: h + f(h)" if residual else "without residual: f(h)"
    ax.plot(layers, norms, marker="o", ms=4, color="#1f77b4" if residual else "#d62728", label=label)
    if reference is not None:
        ax.plot(layers, [float(n) for n in reference], ls="--", color="grey", label=reference_label)
    ax.set_yscale("log")
    ax.set_xlabel("layer (1 = closest to the input)")
    ax.set_ylabel("|dloss / dW| of the layer")
    ax.set_title(title or f"{depth} layers at initialisation: gradient norm per layer", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def activation_curves(x, curves: dict, title: str = "Activation functions and their derivatives"):
    """Two panels: each activation ``s(x)`` and its derivative ``s'(x)``.

    Args:
        x: 1-D tensor of inputs.
        curves: ``{name: (values, derivatives)}``, tensors shaped like ``x``.
        title: the figure title.
    """
    xs = [float(v) for v in x]
    fig, (ax_val, ax_der) = plt.subplots(1, 2, figsize=(8.5, 3.6))
    styles = ["-", "-", "--", "-", ":"]
    for i, (name, (values, derivatives)) in enumerate(curves.items()):
        ax_val.plot(xs, [float(v) for v in values], ls=styles[i % len(styles)], label=name)
        ax_der.plot(xs, [float(v) for v in derivatives], ls=styles[i % len(styles)], label=name)
    for ax, what in ((ax_val, "s(x)"), (ax_der, "s'(x)")):
        ax.axhline(0, color="grey", lw=0.6)
        ax.axvline(0, color="grey", lw=0.6)
        ax.set_xlabel("input x (pre-activation, no unit)")
        ax.set_ylabel(what)
        ax.grid(alpha=0.3)
    ax_val.set_title("value", fontsize=10)
    ax_der.set_title("derivative", fontsize=10)
    ax_val.legend(fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def position_mixing_maps(maps: dict, title: str = "Which input position reaches which output position"):
    """Heatmaps of ``|d out_i / d in_j|`` (Frobenius norm of each ``d_model x d_model`` block), one per layer.

    Args:
        maps: ``{name: (L, L) tensor}``, row = output position i, column = input position j.
        title: the figure title.
    """
    fig, axes = plt.subplots(1, len(maps), figsize=(3.6 * len(maps) + 0.6, 3.6), squeeze=False)
    for ax, (name, grid) in zip(axes[0], maps.items()):
        values = grid.detach().cpu().numpy() if hasattr(grid, "detach") else grid
        image = ax.imshow(values, cmap="viridis", vmin=0)  # 0 = no dependence at all
        n = values.shape[0]
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        ax.set_xlabel("input position j")
        ax.set_ylabel("output position i")
        ax.set_title(name, fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.046, label="block norm (no unit)")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def toy_loss_curves(curves: dict, title: str = "Training a deep toy stack"):
    """Training loss against step, one curve per run, on a log scale.

    Args:
        curves: ``{label: [loss at each step]}``.
        title: the figure title.
    """
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for label, losses in curves.items():
        ax.plot(range(len(losses)), [float(v) for v in losses], label=label)
    ax.set_yscale("log")
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("mean squared error (no unit)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


# --- notebook 09: cost ---------------------------------------------------------------------------

_COST_LABELS = {
    "projections": "Q, K, V, O projections (8Ld²)",
    "scores": "QKᵀ (2L²d)",
    "weighted_values": "AV (2L²d)",
    "ffn": "FFN (4L·d·d_ff)",
}
_COST_COLOURS = {"projections": "tab:orange", "scores": "tab:red", "weighted_values": "tab:purple",
                 "ffn": "tab:blue"}


def layer_flops_vs_length(lengths, formula: dict, measured: dict | None = None, crossover: int | None = None,
                          title: str = "FLOPs of one encoder layer, per component", ax=None):
    """FLOPs per component against L (log-log): formula as lines, measured counts as markers.

    Args:
        lengths: the sequence lengths.
        formula: component name -> list of FLOPs (keys as :func:`encoder_course.layer_flops`).
        measured: the same keys -> counted FLOPs at the same lengths (optional).
        crossover: an L to mark with a vertical line (where attention's quadratic part equals the rest).
    """
    lengths = list(lengths)
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 4))
    else:
        fig = ax.figure
    for key, label in _COST_LABELS.items():
        if key in formula:
            style = "--" if key == "weighted_values" else "-"  # AV has QK^T's count: dashed, to show both
            ax.plot(lengths, formula[key], style, color=_COST_COLOURS[key], label=label)
            if measured and key in measured:
                ax.plot(lengths, measured[key], "o", color=_COST_COLOURS[key], markersize=4)
    quad = [a + b for a, b in zip(formula["scores"], formula["weighted_values"])]
    rest = [a + b for a, b in zip(formula["projections"], formula["ffn"])]
    ax.plot(lengths, quad, "--", color="black", linewidth=1, label="attention's L² part (QKᵀ + AV)")
    ax.plot(lengths, rest, ":", color="black", linewidth=1, label="the rest (projections + FFN)")
    if crossover:
        ax.axvline(crossover, color="grey", linewidth=1)
        ax.annotate(f"crossover L = {crossover}", (crossover, min(min(v) for v in formula.values())),
                    xytext=(4, 4), textcoords="offset points", fontsize=8, color="grey")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length L (tokens)")
    ax.set_ylabel("FLOPs per sequence")
    ax.set_title(title + ("\n(lines: formula, dots: torch's FLOP counter)" if measured else ""), fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def attention_time_vs_length(rows, slopes: dict | None = None, title: str = "Attention time against L",
                             ax=None, stat: str = "median_s"):
    """Time of each attention method against L (log-log), from :func:`encoder_course.cost.attention_sweep` rows.

    Args:
        rows: dicts with ``method``, ``seq_len``, ``status`` and ``median_s`` (and ``min_s``).
        slopes: method -> fitted log-log slope, shown in the legend.
        stat: ``"median_s"`` (median run) or ``"min_s"`` (fastest run).
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 3.8))
    else:
        fig = ax.figure
    names = {"naive": "naive (weights materialised)", "sdpa": "F.scaled_dot_product_attention",
             "chunked": "chunked (query blocks)"}
    for method in dict.fromkeys(r["method"] for r in rows):
        done = [r for r in rows if r["method"] == method and r["status"] == "ok"]
        if not done:
            continue
        label = names.get(method, method)
        if slopes and method in slopes:
            label += f", slope {slopes[method]:.2f}"
        ax.plot([r["seq_len"] for r in done], [r[stat] * 1e3 for r in done], "o-", label=label,
                markersize=4)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length L (tokens)")
    ax.set_ylabel(("fastest" if stat == "min_s" else "median") + " time per call (ms)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def cost_overview(seq_len: int, lengths, formula: dict, measured_at: dict, memory: dict, memory_at: dict,
                  crossover: int, title: str):
    """Two panels for the cost explorer: FLOPs per component and score memory against L, one L marked.

    Args:
        seq_len: the chosen L (marked).
        lengths: the L grid of the lines.
        formula: component -> FLOPs over ``lengths``.
        measured_at: component -> counted FLOPs at ``seq_len``.
        memory: label -> bytes over ``lengths``.
        memory_at: label -> measured bytes at ``seq_len``.
        crossover: the crossover length (vertical line).
        title: the figure's title.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.8))
    lengths = list(lengths)
    for key, label in _COST_LABELS.items():
        style = "--" if key == "weighted_values" else "-"  # AV has QK^T's count: dashed, to show both
        left.plot(lengths, formula[key], style, color=_COST_COLOURS[key], label=label)
        left.plot([seq_len], [measured_at[key]], "o", color=_COST_COLOURS[key], markersize=6)
    left.axvline(crossover, color="grey", linewidth=1, linestyle=":")
    left.axvline(seq_len, color="black", linewidth=1)
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("sequence length L (tokens)")
    left.set_ylabel("FLOPs per layer, per sequence")
    left.set_title("compute (dots: counted at this L)", fontsize=9)
    left.legend(fontsize=6, loc="upper left")
    left.grid(alpha=0.3, which="both")
    for label, values in memory.items():
        line, = right.plot(lengths, [v / 2**20 for v in values], label=label)
        right.plot([seq_len], [memory_at[label] / 2**20], "o", color=line.get_color(), markersize=6)
    right.axvline(seq_len, color="black", linewidth=1)
    right.set_xscale("log", base=2)
    right.set_yscale("log")
    right.set_xlabel("sequence length L (tokens)")
    right.set_ylabel("score matrix size (MiB)")
    right.set_title("memory of the scores (dots: nbytes of a tensor)", fontsize=9)
    right.legend(fontsize=7, loc="upper left")
    right.grid(alpha=0.3, which="both")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


# --- notebook 10: training a small encoder -------------------------------------------------------

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
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 3.6))
    else:
        fig = ax.figure
    for label, losses in curves.items():
        style = (styles or {}).get(label, {})
        ax.plot(range(1, len(losses) + 1), _moving_average(losses, smooth), label=label, **style)
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("cross-entropy (nats per token)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _accuracy_axes(ax, xs_and_curves, baseline, xlabel: str, title: str) -> None:
    """Draw accuracy curves (in %) with an optional dashed majority-class baseline."""
    for label, (xs, accs) in xs_and_curves:
        ax.plot(list(xs), [100 * float(a) for a in accs], marker="o", markersize=3, label=label)
    if baseline is not None:
        ax.axhline(100 * baseline, color="grey", linestyle="--", label="majority-class baseline")
    ax.set_ylim(0, 100)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("accuracy (% of real tokens)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def training_accuracy_curves(curves: dict, baseline: float | None = None,
                             title: str = "Validation accuracy on real tokens"):
    """Accuracy against step, one curve per run, with the majority-class baseline as a line.

    Args:
        curves: ``{label: (steps, accuracies)}``.
        baseline: accuracy of always predicting the most common class (drawn dashed).
        title: the figure title.
    """
    fig, ax = plt.subplots(figsize=(7, 3.6))
    _accuracy_axes(ax, curves.items(), baseline, "optimiser step", title)
    fig.tight_layout()
    return fig


def accuracy_vs_padding(pad_counts, curves: dict, baseline: float | None = None,
                        title: str = "The same sentences, padded more and more"):
    """Accuracy on real tokens against the number of padding positions added to every sequence.

    Args:
        pad_counts: padding positions added after each sequence's longest member.
        curves: ``{label: [accuracy at each pad count]}``.
        baseline: majority-class accuracy (drawn dashed).
        title: the figure title.
    """
    fig, ax = plt.subplots(figsize=(7, 3.6))
    _accuracy_axes(ax, ((label, (pad_counts, accs)) for label, accs in curves.items()), baseline,
                   "extra padding positions per sequence", title)
    fig.tight_layout()
    return fig


def predictions_by_padding(tokens, labels, rows: dict, title: str = "One sentence, judged at several padding lengths"):
    """A grid of predicted classes: one row per run/padding length, one column per real token.

    Each cell shows the predicted count (class + 1); wrong cells are marked with a red frame.

    Args:
        tokens: the sentence's symbols (column labels).
        labels: the true classes (0-based) of the sentence's tokens.
        rows: ``{row label: [predicted class of each real token]}``.
        title: the figure title.
    """
    import numpy as np
    from matplotlib.patches import Rectangle

    names = list(rows)
    grid = np.array([[int(c) for c in rows[name]] for name in names])
    labels = [int(c) for c in labels]
    n_classes = max(int(grid.max()), max(labels)) + 1
    fig, ax = plt.subplots(figsize=(7, 0.9 + 0.42 * (len(names) + 1)))
    full = np.vstack([np.array(labels)[None, :], grid])
    ax.imshow(full, cmap="Blues", vmin=-1, vmax=n_classes, aspect="auto")
    for r in range(full.shape[0]):
        for c in range(full.shape[1]):
            ax.text(c, r, str(full[r, c] + 1), ha="center", va="center", fontsize=8)
            if r > 0 and full[r, c] != labels[c]:
                ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
    ax.set_xticks(range(len(tokens)))
    ax.set_xticklabels([str(t) for t in tokens], fontsize=8)
    ax.set_yticks(range(len(names) + 1))
    ax.set_yticklabels(["true count"] + names, fontsize=8)
    ax.set_xlabel("token (symbol id) of the sentence")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def norm_placement_training(panels: dict, title: str = "Post-LN vs pre-LN, with and without warmup",
                            smooth: int = 10):
    """Side-by-side loss curves, one panel per depth, one curve per (placement, warmup) run.

    Args:
        panels: ``{panel title: {run label: [loss at each step]}}``; labels containing "pre-LN"
            are drawn in orange, others in blue; labels containing "warmup" solid, others dashed.
        title: the figure title.
        smooth: width of the trailing mean.
    """
    fig, axes = plt.subplots(1, len(panels), figsize=(9, 3.6), sharey=True, squeeze=False)
    for ax, (name, curves) in zip(axes[0], panels.items()):
        styles = {label: {"color": "tab:orange" if "pre-LN" in label else "tab:blue",
                          "linestyle": "-" if "no warmup" not in label else "--"}
                  for label in curves}
        training_loss_curves(curves, title=name, smooth=smooth, ax=ax, styles=styles)
    for ax in axes[0][1:]:
        ax.set_ylabel("")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def attention_peak_memory_vs_length(rows, title: str = "Peak GPU memory of attention against L", ax=None):
    """Peak memory (``peak_bytes``, MiB) of each attention method against L (log-log), from sweep rows."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 3.8))
    else:
        fig = ax.figure
    for method in dict.fromkeys(r["method"] for r in rows):
        done = [r for r in rows if r["method"] == method and r["status"] == "ok" and r.get("peak_bytes")]
        if done:
            ax.plot([r["seq_len"] for r in done], [r["peak_bytes"] / 2**20 for r in done], "o-",
                    label=method, markersize=4)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length L (tokens)")
    ax.set_ylabel("peak memory allocated (MiB)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def real_attention_figure(weights, head, tokens, layer, annotate_up_to: int = 8):
    """One head of a real model on one sentence, beside every head's share of weight on [CLS]/[SEP].

    Args:
        weights: ``(H, L, L)`` attention weights of one layer for one sentence.
        head: the head to show large.
        tokens: the ``L`` word pieces, ``[CLS]`` first and ``[SEP]`` last.
        layer: the layer index, for the title.
        annotate_up_to: write the weights into the cells when ``L`` is at most this.
    """
    w = weights.detach().cpu().float() if hasattr(weights, "detach") else weights
    n_heads, length, _ = w.shape
    special = (w[:, :, 0] + w[:, :, -1]).mean(-1)  # (H,), averaged over queries
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 4.4), gridspec_kw={"width_ratios": [1.35, 1]})
    im = ax1.imshow(w[head].numpy(), cmap="viridis", vmin=0, vmax=1)
    if length <= annotate_up_to:
        for i in range(length):
            for j in range(length):
                value = float(w[head, i, j])
                ax1.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7,
                         color="black" if value > 0.6 else "white")
    ax1.set_xticks(range(length))
    ax1.set_xticklabels(tokens, rotation=60, ha="right", fontsize=8)
    ax1.set_yticks(range(length))
    ax1.set_yticklabels(tokens, fontsize=8)
    ax1.set_xlabel("key (attended to)")
    ax1.set_ylabel("query (attending)")
    ax1.set_title(f"layer {layer}, head {head}: attention weights", fontsize=10)
    fig.colorbar(im, ax=ax1, fraction=0.046, pad=0.04, label="weight (0 to 1)")
    colors = ["tab:red" if h == head else "tab:blue" for h in range(n_heads)]
    ax2.bar(range(n_heads), special.numpy(), color=colors)
    ax2.axhline(2 / length, color="grey", ls="--", label=f"uniform: 2/{length}")
    ax2.set_ylim(0, 1.05)
    ax2.set_xticks(range(n_heads))
    ax2.set_xlabel(f"head of layer {layer}")
    ax2.set_ylabel("share of weight on [CLS] + [SEP]")
    ax2.set_title("Weight parked on [CLS] + [SEP], per head", fontsize=10)
    ax2.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig
