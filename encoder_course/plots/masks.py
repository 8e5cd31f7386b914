"""Notebook 03 (and 11): masks, and how padding moves the real tokens' outputs without one."""

from __future__ import annotations

from .style import COLOURS, describe_range, finish, label_axes, new_figure, to_numpy, token_ticks

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["drift_vs_padding", "mask_grid", "padding_drift_figure"]


def mask_grid(masks, titles, tokens=None):
    """Show bool masks side by side (dark = may attend).

    Args:
        masks: a list of bool tensors or arrays, each ``(L_q, L_k)``.
        titles: one title per mask.
        tokens: optional token strings for the axes.
    """
    fig, axes = new_figure((3.0 * len(masks) + 0.5, 3.4), ncols=len(masks), squeeze=False)
    described = []
    for ax, mask, title in zip(axes[0], masks, titles):
        m = to_numpy(mask)
        ax.imshow(m, cmap="Greys", vmin=0, vmax=1)
        label_axes(ax, title, "key position (attended to)", "query position (attending)")
        token_ticks(ax, tokens)
        described.append(f"{title}: {m.shape[0]} × {m.shape[1]}, {int(m.sum())} of {m.size} pairs may attend")
    return finish(fig, title="Attention masks: dark = may attend, white = blocked", alt=(
        f"{len(masks)} attention mask{'s' if len(masks) > 1 else ''} drawn as grids, queries as rows and keys as "
        f"columns, dark where the query may attend to the key and white where it is blocked. "
        + "; ".join(described) + "."))


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
    w, d = to_numpy(weights), to_numpy(drift)
    length = w.shape[-1]
    fig, (ax1, ax2) = new_figure((9, 3.8), ncols=2, gridspec_kw={"width_ratios": [1.15, 1]}, layout="constrained")
    im = ax1.imshow(w, cmap="viridis", vmin=0, vmax=max(float(w.max()), 1e-6), aspect="auto",
                    interpolation="nearest")
    if length > n_real:
        ax1.axvline(n_real - 0.5, color="white", lw=1, ls="--")
        ax1.axhline(n_real - 0.5, color="white", lw=1, ls="--")
    label_axes(ax1, f"Attention, last layer ({'mask ON' if use_mask else 'NO mask'}, L = {length})",
               f"key position (>= {n_real}: padding)", "query position")
    fig.colorbar(im, ax=ax1, fraction=0.046, pad=0.04, label="weight")
    ax2.bar(range(len(d)), d, color=COLOURS["with_mask" if use_mask else "without_mask"])
    ax2.set_xticks(range(len(d)))
    ax2.set_xticklabels(tokens)
    ax2.set_ylim(0, drift_max)
    if float(d.max()) < 0.01 * drift_max:
        ax2.text(0.5, 0.5, f"all bars ~ 0\n(largest {float(d.max()):.1e})", transform=ax2.transAxes,
                 ha="center", va="center", fontsize=11, color=COLOURS["with_mask"])
    label_axes(ax2, f"Drift of the real tokens: max {float(d.max()):.1e}", "real token",
               "max |output change| vs unpadded")
    on_pads = float(w[:, n_real:].sum(axis=-1).mean()) if length > n_real else 0.0
    return finish(fig, alt=(
        f"Left: heatmap of the last layer's attention weights over {length} positions, {n_real} real tokens "
        f"({', '.join(map(str, tokens))}) then {length - n_real} padding positions, "
        f"{'with' if use_mask else 'without'} the padding mask; on average {on_pads:.0%} of each row's weight "
        f"is on padding. Right: bar chart of how far each real token's output moved compared with the sentence "
        f"alone, largest {float(d.max()):.1e}."))


def drift_vs_padding(pad_lengths, drift_without_mask, drift_with_mask, floor=1e-9, identical_pads=None):
    """Max change of the real tokens' outputs against the amount of padding, with and without mask.

    Values are clipped at ``floor`` so the log axis can show exact zeros.

    Args:
        pad_lengths: padding positions appended (x axis).
        drift_without_mask: the largest change of the real tokens' outputs without the padding mask.
        drift_with_mask: the same with the mask.
        floor: the smallest value drawn (exact zeros are shown there).
        identical_pads: optional ``(without_mask, with_mask)``: the same measurement when every pad enters
            the layers as one identical vector (no position), drawn with open markers and dotted lines.
    """
    import numpy as np

    def clip(values):
        return np.maximum(np.asarray(values, dtype=float), floor)

    pad_lengths = list(pad_lengths)
    without, with_mask = clip(drift_without_mask), clip(drift_with_mask)
    fig, ax = new_figure((7, 3.5))
    ax.semilogy(pad_lengths, without, "o-", color=COLOURS["without_mask"], label="without padding mask")
    ax.semilogy(pad_lengths, with_mask, "s--", color=COLOURS["with_mask"], label="with padding mask")
    extra = ""
    if identical_pads is not None:
        same_without, same_with = clip(identical_pads[0]), clip(identical_pads[1])
        ax.semilogy(pad_lengths, same_without, "^:", color=COLOURS["without_mask"], markerfacecolor="white",
                    label="without padding mask, identical pad vectors")
        ax.semilogy(pad_lengths, same_with, "v:", color=COLOURS["with_mask"], markerfacecolor="white",
                    label="with padding mask, identical pad vectors")
        extra = (f" With every pad entering as one identical vector (open triangles, dotted) the change is "
                 f"{describe_range(same_without)} without the mask and {describe_range(same_with)} with it.")
    label_axes(ax, "Same sentence, more padding: do its real tokens' outputs move?",
               "padding positions appended to the sentence", "max |output change| (log scale)",
               legend={"fontsize": 10 if identical_pads is None else 8}, grid=True, title_size=12)
    return finish(fig, alt=(
        f"Log-scale line plot of the largest change of the real tokens' outputs against the padding appended, "
        f"{describe_range(pad_lengths)} positions. Without the padding mask (circles) the change is "
        f"{describe_range(without)}; with the mask (squares) it is {describe_range(with_mask)}, shown at "
        f"{floor:g} when exactly zero.{extra}"))
