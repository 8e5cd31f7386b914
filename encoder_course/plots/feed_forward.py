"""Notebook 06: activation functions, the FFN working on each position alone, the FFN as a key-value memory."""

from __future__ import annotations

from .style import COLOURS, finish, label_axes, new_figure, series_colour, to_numpy

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["activation_curves", "key_value_memory", "position_mixing_maps"]


def activation_curves(x, curves: dict, title: str = "Activation functions and their derivatives"):
    """Two panels: each activation ``s(x)`` and its derivative ``s'(x)``.

    Args:
        x: 1-D tensor of inputs.
        curves: ``{name: (values, derivatives)}``, tensors shaped like ``x``.
        title: the figure title.
    """
    xs = to_numpy(x)
    fig, (ax_val, ax_der) = new_figure((8.5, 3.6), ncols=2)
    styles = ["-", "-", "--", "-", ":"]
    for i, (name, (values, derivatives)) in enumerate(curves.items()):
        style = {"ls": styles[i % len(styles)], "color": series_colour(name, i), "label": name}
        ax_val.plot(xs, to_numpy(values), **style)
        ax_der.plot(xs, to_numpy(derivatives), **style)
    for ax, what in ((ax_val, "s(x)"), (ax_der, "s'(x)")):
        ax.axhline(0, color=COLOURS["reference"], lw=0.6)
        ax.axvline(0, color=COLOURS["reference"], lw=0.6)
        label_axes(ax, xlabel="input x (pre-activation, no unit)", ylabel=what, grid=True)
    label_axes(ax_val, "value", legend=True)
    label_axes(ax_der, "derivative")
    return finish(fig, title=title, alt=(
        f"Two line plots over inputs x from {xs.min():.3g} to {xs.max():.3g}: left, each activation function "
        f"s(x); right, its derivative s'(x). Curves: {', '.join(map(str, curves))}."))


def position_mixing_maps(maps: dict, title: str = "Which input position reaches which output position"):
    """Heatmaps of ``|d out_i / d in_j|`` (Frobenius norm of each ``d_model x d_model`` block), one per layer.

    Args:
        maps: ``{name: (L, L) tensor}``, row = output position i, column = input position j.
        title: the figure title.
    """
    fig, axes = new_figure((3.6 * len(maps) + 0.6, 3.6), ncols=len(maps), squeeze=False)
    described = []
    for ax, (name, grid) in zip(axes[0], maps.items()):
        values = to_numpy(grid)
        image = ax.imshow(values, cmap="viridis", vmin=0)  # 0 = no dependence at all
        n = values.shape[0]
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        label_axes(ax, name, "input position j", "output position i")
        fig.colorbar(image, ax=ax, fraction=0.046, label="block norm (no unit)")
        share = (values.sum() - values.trace()) / max(float(values.sum()), 1e-30)
        described.append(f"{name}: {share:.0%} of the dependence is off the diagonal (between positions)")
    return finish(fig, title=title, alt=(
        f"{len(maps)} heatmaps of how strongly each output position i (rows) depends on each input position j "
        f"(columns), the norm of the Jacobian block d out_i / d in_j, {values.shape[0]} positions. "
        + "; ".join(described) + "."))


def key_value_memory(key_match, value_match, queries, threshold: float | None = None,
                     title: str = "An FFN as a key-value memory"):
    """Two heatmaps, one row per query token: how well it matches each key, and what the output resembles.

    Args:
        key_match: ``(Q, M)`` cosine similarity of each query with each key (row i of ``W_1``).
        value_match: ``(Q, M)`` cosine similarity of each output with each value (column i of ``W_2``).
        queries: Q labels for the rows.
        threshold: the cosine above which a memory fires (drawn in the key panel's title), if any.
        title: the figure's overall title.
    """
    keys, values = to_numpy(key_match), to_numpy(value_match)
    n_queries, n_memories = keys.shape
    fig, axes = new_figure((9.5, 0.45 * n_queries + 1.9), ncols=2)
    panels = (
        (axes[0], keys, "key i (row i of W_1)", "query vs key: cosine"
         + (f" (fires above {threshold:g})" if threshold is not None else "")),
        (axes[1], values, "value i (column i of W_2)", "output vs value: cosine"),
    )
    for ax, grid, xlabel, name in panels:
        image = ax.imshow(grid, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
        for r in range(n_queries):
            for c in range(n_memories):
                ax.text(c, r, f"{grid[r, c]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(grid[r, c]) > 0.6 else "black")
        ax.set_xticks(range(n_memories))
        ax.set_yticks(range(n_queries))
        ax.set_yticklabels([str(q) for q in queries])
        label_axes(ax, name, xlabel, "query token" if ax is axes[0] else None)
        fig.colorbar(image, ax=ax, fraction=0.046, label="cosine similarity")
    best = [f"{q}: value {int(values[r].argmax())} ({values[r].max():.2f})" if abs(values[r]).max() > 0 else
            f"{q}: nothing written" for r, q in enumerate(queries)]
    return finish(fig, title=title, alt=(
        f"Two heatmaps with one row per query token ({n_queries}) and one column per memory ({n_memories}). Left: "
        f"the cosine similarity of the query with each key, from {keys.min():.2f} to {keys.max():.2f}. Right: the "
        f"cosine similarity of the FFN's output with each value; the closest value per query: "
        + "; ".join(best) + "."))
