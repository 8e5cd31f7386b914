"""Notebook 09: FLOPs, memory and time of attention against the sequence length."""

from __future__ import annotations

from .style import COLOURS, CYCLE, finish, label_axes, new_figure, new_or_given_axes

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["attention_peak_memory_vs_length", "attention_time_vs_length", "cost_overview", "layer_flops_vs_length"]

_COST_LABELS = {
    "projections": "Q, K, V, O projections (8Ld²)",
    "scores": "QKᵀ (2L²d)",
    "weighted_values": "AV (2L²d)",
    "ffn": "FFN (4L·d·d_ff)",
}
_METHODS = {"naive": "naive (weights materialised)", "sdpa": "F.scaled_dot_product_attention",
            "chunked": "chunked (query blocks)"}
_METHOD_MARKERS = {"naive": "o", "sdpa": "s", "chunked": "^"}


def _method_style(method: str, index: int) -> dict:
    return {"color": COLOURS.get(method, CYCLE[index % len(CYCLE)]), "marker": _METHOD_MARKERS.get(method, "o")}


def _draw_components(ax, lengths, formula: dict) -> None:
    """One line per FLOP component, AV dashed (it has QKᵀ's count, so it would hide behind it)."""
    for key, label in _COST_LABELS.items():
        if key in formula:
            ax.plot(lengths, formula[key], "--" if key == "weighted_values" else "-", color=COLOURS[key], label=label)


def layer_flops_vs_length(lengths, formula: dict, measured: dict | None = None, crossover: int | None = None,
                          title: str = "FLOPs of one encoder layer, per component", ax=None):
    """FLOPs per component against L (log-log): formula as lines, measured counts as markers.

    Args:
        lengths: the sequence lengths.
        formula: component name -> list of FLOPs (keys as :func:`encoder_course.layer_flops`).
        measured: the same keys -> counted FLOPs at the same lengths (optional).
        crossover: an L to mark with a vertical line (where attention's quadratic part equals the rest).
        ax: an Axes to draw into (a new figure when None).
    """
    lengths = list(lengths)
    fig, ax = new_or_given_axes(ax, (7.5, 4))
    _draw_components(ax, lengths, formula)
    if measured:
        for key in _COST_LABELS:
            if key in formula and key in measured:
                ax.plot(lengths, measured[key], "o", color=COLOURS[key], markersize=4)
    quad = [a + b for a, b in zip(formula["scores"], formula["weighted_values"])]
    rest = [a + b for a, b in zip(formula["projections"], formula["ffn"])]
    ax.plot(lengths, quad, "--", color="black", linewidth=1, label="attention's L² part (QKᵀ + AV)")
    ax.plot(lengths, rest, ":", color="black", linewidth=1, label="the rest (projections + FFN)")
    if crossover:
        ax.axvline(crossover, color=COLOURS["reference"], linewidth=1)
        ax.annotate(f"crossover L = {crossover}", (crossover, min(min(v) for v in formula.values())),
                    xytext=(4, 4), textcoords="offset points", fontsize=8, color="#555555")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    label_axes(ax, title + ("\n(lines: formula, dots: torch's FLOP counter)" if measured else ""),
               "sequence length L (tokens)", "FLOPs per sequence", legend={"fontsize": 8, "loc": "upper left"},
               grid="both")
    where = f"; the quadratic part overtakes the rest at L = {crossover}" if crossover else ""
    dots = ", with dots for the FLOPs torch counted" if measured else ""
    return finish(ax, alt=(
        f"Log-log plot of the FLOPs of one encoder layer against the sequence length L from {lengths[0]} to "
        f"{lengths[-1]}, one line per component (projections, QKᵀ, AV, FFN){dots}. "
        f"The projections and the FFN grow like L, QKᵀ and AV like L²: at L = {lengths[0]} the L² part is "
        f"{quad[0] / (quad[0] + rest[0]):.0%} of the total, at L = {lengths[-1]} it is "
        f"{quad[-1] / (quad[-1] + rest[-1]):.0%}{where}."))


def attention_time_vs_length(rows, slopes: dict | None = None, title: str = "Attention time against L",
                             ax=None, stat: str = "median_s"):
    """Time of each attention method against L (log-log), from ``measure.timing.attention_sweep`` rows.

    Args:
        rows: dicts with ``method``, ``seq_len``, ``status`` and ``median_s`` (and ``min_s``).
        slopes: method -> fitted log-log slope, shown in the legend.
        title: the axes title.
        ax: an Axes to draw into (a new figure when None).
        stat: ``"median_s"`` (median run) or ``"min_s"`` (fastest run).
    """
    fig, ax = new_or_given_axes(ax, (7, 3.8))
    summary = []
    for i, method in enumerate(dict.fromkeys(r["method"] for r in rows)):
        done = [r for r in rows if r["method"] == method and r["status"] == "ok"]
        if not done:
            continue
        label = _METHODS.get(method, method)
        if slopes and method in slopes:
            label += f", slope {slopes[method]:.2f}"
        ax.plot([r["seq_len"] for r in done], [r[stat] * 1e3 for r in done], "-", label=label, markersize=4,
                **_method_style(method, i))
        summary.append(f"{label}: {done[0][stat] * 1e3:.3g} ms at L = {done[0]['seq_len']} to "
                       f"{done[-1][stat] * 1e3:.3g} ms at L = {done[-1]['seq_len']}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    which = "fastest" if stat == "min_s" else "median"
    label_axes(ax, title, "sequence length L (tokens)", f"{which} time per call (ms)", legend=True, grid="both")
    return finish(ax, alt=(f"Log-log plot of the {which} time per attention call against the sequence length L, "
                           f"one line per method ({title}). " + "; ".join(summary) + "."))


def attention_peak_memory_vs_length(rows, title: str = "Peak GPU memory of attention against L", ax=None):
    """Peak memory (``peak_bytes``, MiB) of each attention method against L (log-log), from sweep rows."""
    fig, ax = new_or_given_axes(ax, (7, 3.8))
    summary = []
    for i, method in enumerate(dict.fromkeys(r["method"] for r in rows)):
        done = [r for r in rows if r["method"] == method and r["status"] == "ok" and r.get("peak_bytes")]
        if done:
            ax.plot([r["seq_len"] for r in done], [r["peak_bytes"] / 2**20 for r in done], "-",
                    label=method, markersize=4, **_method_style(method, i))
            summary.append(f"{method}: {done[0]['peak_bytes'] / 2**20:,.3g} MiB at L = {done[0]['seq_len']} to "
                           f"{done[-1]['peak_bytes'] / 2**20:,.3g} MiB at L = {done[-1]['seq_len']}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    label_axes(ax, title, "sequence length L (tokens)", "peak memory allocated (MiB)", legend=True, grid="both")
    return finish(ax, alt=(f"Log-log plot of the peak memory of each attention method against the sequence length "
                           f"L ({title}). " + ("; ".join(summary) or "No measured rows.") + "."))


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
    fig, (left, right) = new_figure((9, 3.8), ncols=2)
    lengths = list(lengths)
    _draw_components(left, lengths, formula)
    for key in _COST_LABELS:
        left.plot([seq_len], [measured_at[key]], "o", color=COLOURS[key], markersize=6)
    left.axvline(crossover, color=COLOURS["reference"], linewidth=1, linestyle=":")
    left.axvline(seq_len, color="black", linewidth=1)
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    label_axes(left, "compute (dots: counted at this L)", "sequence length L (tokens)",
               "FLOPs per layer, per sequence", legend={"fontsize": 7, "loc": "upper left"}, grid="both", title_size=9)
    for i, (label, values) in enumerate(memory.items()):
        right.plot(lengths, [v / 2**20 for v in values], color=CYCLE[i % len(CYCLE)], label=label)
        right.plot([seq_len], [memory_at[label] / 2**20], "o", color=CYCLE[i % len(CYCLE)], markersize=6)
    right.axvline(seq_len, color="black", linewidth=1)
    right.set_xscale("log", base=2)
    right.set_yscale("log")
    label_axes(right, "memory of the scores (dots: nbytes of a tensor)", "sequence length L (tokens)",
               "score matrix size (MiB)", legend={"fontsize": 7, "loc": "upper left"}, grid="both", title_size=9)
    flops = ", ".join(f"{_COST_LABELS[key].split(' (')[0]} {measured_at[key]:,.3g}" for key in _COST_LABELS)
    sizes = ", ".join(f"{label} {memory_at[label] / 2**20:,.3g} MiB" for label in memory)
    return finish(fig, title=title, title_size=10, alt=(
        f"Two log-log plots against the sequence length L, with L = {seq_len} marked by a vertical line. Left: "
        f"FLOPs of one layer per component, counted at L = {seq_len}: {flops}; the dotted line marks the "
        f"crossover at L = {crossover}. Right: the size of the score matrices, at L = {seq_len}: {sizes}."))
