"""Notebook 00 (and 05, 07): the map of an encoder, post-LN or pre-LN."""

from __future__ import annotations

from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from .style import COLOURS, finish, new_figure, tint

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["draw_encoder_block", "draw_post_and_pre_ln"]

# The map is laid out in points of a reference axes of MAP_SIZE inches; its text is MAP_FONT pt there
# (13 px at 80 dpi, 10 pt on a screen). Drawn into a smaller axes, the text shrinks with it.
MAP_SIZE = (4.7, 7.0)
MAP_FONT = 12.0
MAP_TITLE_ROOM = 0.55  # inches above the map for its two-line title

_FILLS = {"ids": "#eeeeee", "embed": tint(COLOURS["embeddings"]), "attn": tint(COLOURS["attention"]),
          "ffn": tint(COLOURS["feed_forward"]), "norm": tint(COLOURS["norms"]), "out": "#eeeeee"}
_ONE_LINE, _TWO_LINES, _ADD, _GAP, _BOX_WIDTH = 24.0, 40.0, 18.0, 19.0, 150.0  # points
_INK, _NOTE = "black", "#333333"  # text colours (both well above 4.5:1 contrast on white)


def _map_items(norm_first: bool):
    """The main path, bottom to top: (kind, label, height in points)."""
    attn = ("attn", "multi-head\nself-attention", _TWO_LINES)
    ffn = ("ffn", "feed-forward\n(each position)", _TWO_LINES)
    norm, add = ("norm", "LayerNorm", _ONE_LINE), ("add", "", _ADD)
    layer = [norm, attn, add, norm, ffn, add] if norm_first else [attn, add, norm, ffn, add, norm]
    items = [("ids", "token ids (length L)", _ONE_LINE), ("embed", "token embedding\n+ position", _TWO_LINES)]
    first, items = len(items), items + layer
    last = len(items) - 1
    if norm_first:
        items.append(("norm", "final LayerNorm", _ONE_LINE))
    items.append(("out", "output H", _ONE_LINE))
    return items, first, last


def _map_alt(norm_first: bool, n_layers: int | None) -> str:
    items, first, last = _map_items(norm_first)
    name = lambda item: "add the residual" if item[0] == "add" else item[1].replace("\n", " ")  # noqa: E731
    layer = ", ".join(name(item) for item in items[first:last + 1])
    after = ", ".join(name(item) for item in items[last + 1:])
    count = "N times" if n_layers is None else f"{n_layers} times"
    placement = ("pre-LN: LayerNorm at the start of each residual branch, and once after the stack" if norm_first
                 else "post-LN: LayerNorm after each residual add")
    return (f"Diagram of a Transformer encoder, {placement}. Bottom to top: token ids, token embedding plus "
            f"position, then one encoder layer repeated {count} ({layer}), then {after}. Every arrow after "
            "the embedding carries an L × d_model matrix; two residual paths skip the sublayers.")


def draw_encoder_block(norm_first: bool = False, n_layers: int | None = None, ax=None):
    """Draw the map of an encoder: embeddings and positions in, one layer repeated N times, out.

    The layer is drawn post-LN (``norm_first=False``: add, then LayerNorm, as in the 2017 paper
    and BERT) or pre-LN (``norm_first=True``: LayerNorm inside each residual branch, plus one final
    LayerNorm after the stack). Every arrow on the main path carries an ``L x d_model`` matrix.
    Its labels are 12 pt when the axes is at least ``MAP_SIZE`` inches; in a smaller axes they shrink.

    Args:
        norm_first: False for post-LN, True for pre-LN.
        n_layers: number of layers written on the repeat bracket (``N`` when None).
        ax: a matplotlib Axes to draw into (a new figure when None).

    Returns:
        the matplotlib Figure holding the drawing.
    """
    if ax is None:
        height = MAP_SIZE[1] + MAP_TITLE_ROOM
        fig, ax = new_figure((MAP_SIZE[0], height))
        ax.set_position([0, 0, 1, MAP_SIZE[1] / height])
    fig = ax.figure
    box = ax.get_position()
    scale = min(1.0, box.width * fig.get_figwidth() / MAP_SIZE[0], box.height * fig.get_figheight() / MAP_SIZE[1])
    font = lambda size=MAP_FONT: size * scale  # noqa: E731
    ax.set_xlim(0, MAP_SIZE[0] * 72)  # data units: points of the reference axes
    ax.set_ylim(0, MAP_SIZE[1] * 72)
    ax.set_axis_off()

    items, first_in_layer, last_in_layer = _map_items(norm_first)
    gap = _GAP
    # The arrows entering and leaving the repeated layer get twice the room (the frame crosses them).
    gaps = [2 * gap if i in (first_in_layer - 1, last_in_layer) else gap for i in range(len(items) - 1)]
    total = sum(h for _, _, h in items) + sum(gaps)
    x0, width = 60.0 + _BOX_WIDTH / 2, _BOX_WIDTH
    y = (MAP_SIZE[1] * 72 - total) / 2
    boxes = []  # (bottom, top) of each item
    for i, (kind, label, height) in enumerate(items):
        if i:
            y += gaps[i - 1]
        boxes.append((y, y + height))
        if kind == "add":
            ax.add_patch(Circle((x0, y + height / 2), height / 2, fc="white", ec="black", lw=1.2))
            ax.text(x0, y + height / 2, "+", ha="center", va="center", fontsize=font(13), color=_INK)
        else:
            ax.add_patch(FancyBboxPatch((x0 - width / 2, y), width, height,
                                        boxstyle="round,pad=0,rounding_size=5", fc=_FILLS[kind], ec="black",
                                        lw=1.0))
            ax.text(x0, y + height / 2, label, ha="center", va="center", fontsize=font(), color=_INK,
                    linespacing=1.1)
        y += height

    def arrow(x1, y1, x2, y2):
        ax.add_patch(FancyArrowPatch((x1, y1), (x2, y2), arrowstyle="-|>", mutation_scale=11 * scale,
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
            y_text = y1 + 1.45 * gap
        ax.text(x0 + 5, y_text, shape, ha="left", va="center", fontsize=font(), color=_NOTE)

    # Residual paths: they leave the main path below each sublayer and rejoin at the "+".
    adds = [i for i, (kind, _, _) in enumerate(items) if kind == "add"]
    starts = [first_in_layer, adds[0] + 1] if norm_first else [first_in_layer, adds[0] + 2]
    xr = x0 - width / 2 - 18
    for start, add in zip(starts, adds):
        yb = boxes[start][0] - gap / 2  # branch point, on the arrow entering the sublayer
        ya = (boxes[add][0] + boxes[add][1]) / 2
        ax.plot([x0, xr, xr], [yb, yb, ya], color=_NOTE, lw=1.2)
        ax.plot([x0], [yb], marker="o", ms=4 * scale, color=_NOTE)
        r = (boxes[add][1] - boxes[add][0]) / 2
        arrow(xr, ya, x0 - r, ya)
    ax.text(xr - 3, (boxes[first_in_layer][0] + boxes[adds[0]][1]) / 2, "residual", rotation=90,
            ha="right", va="center", fontsize=font(), color=_NOTE)

    # The repeated layer, framed, with its repeat count.
    bottom = boxes[first_in_layer][0] - gap
    top = boxes[last_in_layer][1] + gap * 0.6
    left, right = 12.0, x0 + width / 2 + 112
    ax.add_patch(FancyBboxPatch((left, bottom), right - left, top - bottom,
                                boxstyle="round,pad=0,rounding_size=8", fc="none", ec="#666666", lw=1.0, ls="--"))
    count = "N" if n_layers is None else str(n_layers)
    ax.text(right - 6, top - 5, f"× {count}", ha="right", va="top", fontsize=font(14), fontweight="bold")
    ax.text(right - 6, bottom + 5, "encoder\nlayer", ha="right", va="bottom", fontsize=font(), color=_NOTE)
    if norm_first:
        ax.text(x0 + width / 2 + 6, (boxes[last_in_layer + 1][0] + boxes[last_in_layer + 1][1]) / 2,
                "once, after\nthe stack", ha="left", va="center", fontsize=font(), color=_NOTE, linespacing=1.1)
    name = "pre-LN: LayerNorm before each sublayer" if norm_first else "post-LN: LayerNorm after each add"
    note = "(GPT-2 and most recent models)" if norm_first else "(the 2017 paper, BERT)"
    ax.set_title(f"Encoder, {name}\n{note}", fontsize=font())
    return finish(ax, alt=_map_alt(norm_first, n_layers), layout=None)


def draw_post_and_pre_ln(n_layers: int | None = None):
    """The post-LN map beside the pre-LN map, each at its full size (labels 12 pt).

    Args:
        n_layers: number of layers written on both repeat brackets (``N`` when None).

    Returns:
        the matplotlib Figure.
    """
    height = MAP_SIZE[1] + MAP_TITLE_ROOM
    fig, (left, right) = new_figure((2 * MAP_SIZE[0] + 0.3, height), ncols=2)
    for ax, x in ((left, 0.0), (right, (MAP_SIZE[0] + 0.3) / (2 * MAP_SIZE[0] + 0.3))):
        ax.set_position([x, 0, MAP_SIZE[0] / (2 * MAP_SIZE[0] + 0.3), MAP_SIZE[1] / height])
    draw_encoder_block(False, n_layers, ax=left)
    draw_encoder_block(True, n_layers, ax=right)
    alt = ("Two diagrams side by side. Left: " + _map_alt(False, n_layers) + " Right: " + _map_alt(True, n_layers))
    return finish(fig, alt=alt, layout=None)
