"""Notebook 05: residual paths, the gradient that reaches the first layer of a deep stack, and two LayerNorms."""

from __future__ import annotations

from .style import COLOURS, CYCLE, describe_range, finish, label_axes, new_figure, series_colour

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["gradient_norm_per_layer", "gradient_ratio_vs_depth", "layer_norm_variants", "toy_loss_curves"]

_MARKERS = "osd^v<>"


def gradient_ratio_vs_depth(depths, curves: dict, title: str = "Gradient reaching layer 1, relative to the last layer"):
    """Log-scale curves of ``|grad W_1| / |grad W_depth|`` against depth, one per kind of stack.

    Args:
        depths: the depths measured (x axis).
        curves: ``{label: [ratio at each depth]}``.
        title: the figure title.
    """
    depths = list(depths)
    fig, ax = new_figure((7, 3.6))
    summary = []
    for i, (label, ratios) in enumerate(curves.items()):
        ratios = [float(r) for r in ratios]
        ax.plot(depths, ratios, marker=_MARKERS[i % len(_MARKERS)], ms=4, color=series_colour(label, i), label=label)
        summary.append(f"{label} ({_MARKERS[i % len(_MARKERS)]!r} markers): {ratios[-1]:.1e} at depth {depths[-1]}")
    ax.set_yscale("log")
    ax.axhline(1.0, color=COLOURS["reference"], lw=0.8, ls=":")
    label_axes(ax, title, "depth (number of sublayers)", "|grad layer 1| / |grad last layer|", legend=True,
               grid="both")
    return finish(fig, alt=(
        f"Log-scale line plot of the gradient norm of layer 1 divided by that of the last layer, against depth "
        f"from {depths[0]} to {depths[-1]}, one curve per kind of stack; 1 (dotted) means the first layer gets as "
        f"much gradient as the last. " + "; ".join(summary) + "."))


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
    fig, ax = new_figure((7, 3.6))
    label = "with residual: h + f(h)" if residual else "without residual: f(h)"
    ax.plot(layers, norms, marker="o", ms=4, color=series_colour(label), label=label)
    alt = (f"Log-scale line plot of the gradient norm of each layer's weight, layer 1 (nearest the input) to "
           f"layer {depth}, {label.split(':')[0]}: {describe_range(norms)}, layer 1 at {norms[0]:.2g} and the last "
           f"at {norms[-1]:.2g}.")
    if reference is not None:
        reference = [float(n) for n in reference]
        ax.plot(layers, reference, ls="--", lw=1.2, color=series_colour(reference_label, default=COLOURS["reference"]),
                label=reference_label)
        alt += (f" Dashed, for comparison, {reference_label or 'the other setting'}: layer 1 at "
                f"{reference[0]:.2g}, the last at {reference[-1]:.2g}.")
    ax.set_yscale("log")
    label_axes(ax, title or f"{depth} layers at initialisation: gradient norm per layer",
               "layer (1 = closest to the input)", "|dloss / dW| of the layer", legend=True, grid="both")
    return finish(fig, alt=alt)


def toy_loss_curves(curves: dict, title: str = "Training a deep toy stack"):
    """Training loss against step, one curve per run, on a log scale.

    Args:
        curves: ``{label: [loss at each step]}``.
        title: the figure title.
    """
    fig, ax = new_figure((7, 3.6))
    summary = []
    for i, (label, losses) in enumerate(curves.items()):
        losses = [float(v) for v in losses]
        ax.plot(range(len(losses)), losses, color=series_colour(label, i), label=label)
        summary.append(f"{label}: {losses[0]:.3g} to {losses[-1]:.3g}")
    ax.set_yscale("log")
    label_axes(ax, title, "optimiser step", "mean squared error (no unit)", legend=True, grid="both")
    return finish(fig, alt=(f"Log-scale line plot of the training loss against the optimiser step, one curve per "
                            f"run ({title}); from the first step to the last, " + "; ".join(summary) + "."))


def layer_norm_variants(dims, relative_gap, token_stds, curves: dict,
                        title: str = "Two LayerNorms: the Annotated Transformer's and nn.LayerNorm"):
    """Where two LayerNorm formulas differ: by width for ordinary tokens, by scale for quiet ones.

    Args:
        dims: the widths d measured (left panel, x axis).
        relative_gap: for each d, how much smaller the first variant's output is than the second's
            for ordinary tokens (``1 - ratio``); the formula ``1 - sqrt((d - 1) / d)`` is drawn dashed.
        token_stds: the standard deviations of the input tokens (right panel, x axis).
        curves: ``{label: [output std for each token std]}``; labels starting with "nn.LayerNorm" are
            drawn solid, the others dashed.
        title: the figure's overall title.
    """
    dims = [int(d) for d in dims]
    gaps = [float(g) for g in relative_gap]
    stds = [float(s) for s in token_stds]
    fig, (left, right) = new_figure((10, 4), ncols=2)
    left.plot(dims, gaps, "o", ms=5, color=CYCLE[0], label="measured")
    left.plot(dims, [1 - ((d - 1) / d) ** 0.5 for d in dims], "--", lw=1, color=COLOURS["reference"],
              label="1 - sqrt((d - 1) / d)")
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    label_axes(left, "ordinary tokens (std about 1)", "width d (features per token), log scale",
               "how much smaller (fraction)", legend=True, grid="both")
    summary = []
    for i, (label, values) in enumerate(curves.items()):
        values = [float(v) for v in values]
        style = "-" if label.startswith("nn.LayerNorm") else "--"
        right.plot(stds, values, style, marker=_MARKERS[i % len(_MARKERS)], ms=4, color=CYCLE[i % len(CYCLE)],
                   label=label)
        below = [s for s, v in zip(stds, values) if v < 0.5]
        summary.append(f"{label}: below 0.5 from token std {max(below):.0e} down" if below else
                       f"{label}: at least 0.5 everywhere")
    right.set_xscale("log")
    right.set_ylim(0, 1.45)  # room for the legend above the curves
    right.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    label_axes(right, "quiet tokens: where eps takes over", "std of the input token, log scale",
               "std of the output token", legend={"fontsize": 8, "loc": "upper left", "ncol": 2}, grid=True)
    return finish(fig, title=title, alt=(
        f"Two panels. Left: log-log plot of how much smaller the first LayerNorm's output is than the second's for "
        f"ordinary tokens, against the width d from {dims[0]} to {dims[-1]}: {gaps[0]:.2g} at d = {dims[0]} down "
        f"to {gaps[-1]:.2g} at d = {dims[-1]}, on the dashed formula 1 - sqrt((d - 1) / d). Right: the standard "
        f"deviation of the output token against the input token's, on a log scale from {min(stds):.0e} to "
        f"{max(stds):.0e}, one curve per LayerNorm: " + "; ".join(summary) + "."))
