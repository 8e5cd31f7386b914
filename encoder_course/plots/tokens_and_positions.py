"""Notebook 01: position tables and how similar two positions are."""

from __future__ import annotations

from .style import COLOURS, PALETTE, describe_range, finish, label_axes, new_figure, series_colour, to_numpy

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["position_offset_similarity", "position_table_heatmap", "position_wavelengths", "positions_panel"]

# One colour per width, so a width keeps its colour in the static figure and in the explorer (notebook 01).
D_MODEL_COLOURS = {8: PALETTE["sky_blue"], 16: PALETTE["blue"], 32: PALETTE["purple"], 64: PALETTE["orange"],
                   128: PALETTE["black"], 256: PALETTE["green"]}


def _width_colour(label, index: int) -> str:
    """The colour of a curve labelled ``"d_model N"``: N's colour in :data:`D_MODEL_COLOURS`, else the cycle's."""
    words = str(label).split()
    if len(words) == 2 and words[0] == "d_model" and words[1].isdigit() and int(words[1]) in D_MODEL_COLOURS:
        return D_MODEL_COLOURS[int(words[1])]
    return series_colour(label, index)


def position_table_heatmap(table, title: str = "Sinusoidal position table"):
    """Heatmap of a position table, one row per position and one column per feature.

    Args:
        table: tensor or array ``(seq_len, d_model)``.
        title: figure title.
    """
    values = to_numpy(table)
    fig, ax = new_figure((7, 3.5))
    image = ax.imshow(values, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    fig.colorbar(image, ax=ax, label="value")
    label_axes(ax, title, "feature index (even = sin, odd = cos)", "position", title_size=12)
    length, width = values.shape
    return finish(fig, alt=f"Heatmap of a position table: {length} positions (rows, top to bottom) by {width} "
                           f"features (columns), values {describe_range(values.ravel())} in a blue (-1) to red "
                           "(+1) scale. Columns on the left change fastest down the rows, columns on the right "
                           "slowest.")


def position_offset_similarity(offsets, curves: dict, title: str = "Similarity of two positions by offset"):
    """Line plot of a similarity between position vectors as a function of their offset.

    Args:
        offsets: the offsets k (x axis).
        curves: ``{label: values}``, one curve per label (e.g. per d_model).
        title: figure title.
    """
    offsets = to_numpy(offsets)
    fig, ax = new_figure((7, 3.5))
    summary = []
    for i, (label, values) in enumerate(curves.items()):
        values = to_numpy(values)
        ax.plot(offsets, values, label=str(label), color=_width_colour(label, i))
        summary.append(f"{label}: {describe_range(values)}")
    ax.axhline(0, color=COLOURS["reference"], lw=0.6)
    label_axes(ax, title, "offset k between the two positions (tokens)", "cosine similarity",
               legend=True, title_size=12)
    return finish(fig, alt=f"Line plot of the cosine similarity of two position vectors against their offset k, "
                           f"{describe_range(offsets)} tokens, one curve per setting ({'; '.join(summary)}). "
                           "Every curve starts at 1 for offset 0 and falls as the offset grows.")


def positions_panel(table, position: int, similarity):
    """The positions explorer's picture: the table with one row outlined, and that row's similarity to all.

    Args:
        table: ``(seq_len, d_model)`` position table.
        position: the outlined row.
        similarity: ``(seq_len,)`` cosine similarity of row ``position`` to every row.
    """
    values, similarity = to_numpy(table), to_numpy(similarity)
    seq_len, d_model = values.shape
    fig, (left, right) = new_figure((9, 3.6), ncols=2, gridspec_kw={"width_ratios": [1, 1.25]})
    left.imshow(values, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    left.axhline(position - 0.5, color="black", lw=1.2)
    left.axhline(position + 0.5, color="black", lw=1.2)
    label_axes(left, f"table {seq_len} × {d_model}, row {position} outlined", "feature index", "position")
    right.plot(range(seq_len), similarity, "-", color=D_MODEL_COLOURS.get(d_model, PALETTE["blue"]))
    right.axvline(position, color="black", lw=0.8, ls="--")
    right.axhline(0, color=COLOURS["reference"], lw=0.6)
    right.set_ylim(-0.6, 1.05)
    neighbours = [similarity[j] for j in (position - 1, position + 1) if 0 <= j < seq_len]
    near = sum(neighbours) / len(neighbours)
    label_axes(right, f"similarity to position {position}; at offset ±1: {near:.2f}",
               "other position j (offset j − position)", "cosine similarity")
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.15, top=0.9, wspace=0.25)  # faster than tight_layout
    return finish(fig, layout=None, alt=(
        f"Left: heatmap of a sinusoidal position table, {seq_len} positions by {d_model} features, with row "
        f"{position} outlined. Right: the cosine similarity of position {position} to every position j, 1 at j = "
        f"{position} and {near:.2f} at its neighbours; moving the position slides the same curve along."))


def position_wavelengths(wavelengths, d_model: int, title: str = "Wavelengths of the sinusoidal position table"):
    """The wavelength of each (sin, cos) column pair of a position table, on a log scale.

    Args:
        wavelengths: ``(d_model/2,)`` wavelengths in positions (tokens), pair 0 first, measured from a table.
        d_model: the table's width (for the reference lines and labels).
        title: figure title.
    """
    import math

    values = to_numpy(wavelengths)
    pairs = range(len(values))
    fig, ax = new_figure((7, 3.5))
    ax.semilogy(pairs, [2 * math.pi * 10000 ** (2 * i / d_model) for i in pairs], "-", color=COLOURS["reference"],
                lw=2.5, label="2π · 10000^(2i/d_model) (formula)")
    ax.semilogy(pairs, values, ".", color=PALETTE["black"], markersize=3, label="measured from the table")
    for level, text, where in ((2 * math.pi, "2π ≈ 6.28", 0.8), (2 * math.pi * 10000, "10000 · 2π ≈ 62,832", 0.02)):
        ax.axhline(level, color=COLOURS["reference"], lw=0.8, ls="--")
        ax.text(len(values) * where, level * 1.3, text, fontsize=9, color=PALETTE["black"])
    ax.set_ylim(2, 2 * math.pi * 10000 * 4)
    label_axes(ax, title, f"column pair i (columns 2i and 2i + 1), d_model = {d_model}",
               "wavelength (positions, log scale)",
               legend={"loc": "upper left", "bbox_to_anchor": (0.0, 0.88), "fontsize": 8}, grid=True,
               title_size=12)
    return finish(fig, alt=(
        f"Log-scale plot of the wavelength of each of the {len(values)} column pairs of a sinusoidal position table "
        f"of width {d_model}, measured from the table: the points lie on a straight line, a geometric progression "
        f"{describe_range(values)} positions, between the dashed lines at 2π and 10000 · 2π, and on the formula's "
        "line."))
