"""Notebook 07: post-LN vs pre-LN, the gradient and activation scale of a fresh stack."""

from __future__ import annotations

from .encoder_map import MAP_SIZE, MAP_TITLE_ROOM, draw_encoder_block
from .style import COLOURS, blank_figure, describe_range, finish, label_axes, new_figure

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["norm_placement_curves", "norm_placement_panel"]


def _placement(norm_first) -> str:
    return "pre-LN" if norm_first else "post-LN"


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
    fig, (left, right) = new_figure((9, 3.6), ncols=2)
    summary = []
    for label, (norm_first, grads, stds) in profiles.items():
        colour = COLOURS["pre_ln" if norm_first else "post_ln"]
        marker = "s" if norm_first else "o"
        left.plot(range(1, len(grads) + 1), grads, marker=marker, ms=3, color=colour, label=label)
        right.plot(range(len(stds)), stds, marker=marker, ms=3, color=colour, label=label)
        summary.append(f"{label} ({_placement(norm_first)}): gradient norm {float(grads[0]):.2g} at layer 1 and "
                       f"{float(grads[-1]):.2g} at layer {len(grads)}, stream std {describe_range(stds)}")
    left.set_ylim(bottom=0)
    right.set_ylim(bottom=0)
    label_axes(left, "gradient norm per layer", "layer (1 = nearest the input)", "‖gradient‖ of the layer's parameters",
               legend=True)
    label_axes(right, "activation scale per layer", "after layer (0 = the input)", "std of the residual stream")
    return finish(fig, title=title, alt=(
        "Two line plots per layer of a freshly initialised stack: left, the norm of the gradient of each layer's "
        "parameters; right, the standard deviation of the residual stream after each layer. "
        + "; ".join(summary) + "."))


def norm_placement_panel(norm_first: bool, grad_norm, stream_std, grad_max: float = 0.7,
                         std_max: float = 6.0, stacks: int = 1):
    """The encoder diagram for one norm placement next to its gradient norms and activation scale.

    Args:
        norm_first: False for post-LN, True for pre-LN.
        grad_norm: one gradient norm per layer.
        stream_std: residual-stream std for the input and after each layer.
        grad_max, std_max: upper y limits (fixed, so that switching placement compares like with like;
            raised when a value is larger).
        stacks: how many random stacks the values are the mean of (said in the titles when more than 1).

    Returns:
        the matplotlib Figure.
    """
    depth = len(grad_norm)
    width, height = MAP_SIZE[0] + 5.5, MAP_SIZE[1] + MAP_TITLE_ROOM
    fig = blank_figure((width, height))
    # Axes placed by hand (in inches, then as fractions): faster than a layout engine on every redraw.
    diagram = fig.add_axes([0, 0, MAP_SIZE[0] / width, MAP_SIZE[1] / height])
    draw_encoder_block(norm_first=norm_first, n_layers=depth, ax=diagram)
    x, w = (MAP_SIZE[0] + 0.9) / width, 4.4 / width
    colour = COLOURS["pre_ln" if norm_first else "post_ln"]
    top = fig.add_axes([x, 4.35 / height, w, 2.65 / height])
    top.bar(range(1, depth + 1), grad_norm, color=colour)
    top.set_xlim(0.4, max(depth, 2) + 0.6)
    top.set_ylim(0, max(grad_max, 1.1 * max(grad_norm)))
    ratio = grad_norm[-1] / grad_norm[0]
    mean_of = f"mean of {stacks} random stacks, " if stacks > 1 else ""
    label_axes(top, f"gradient norm of each layer's parameters\n({mean_of}last/first = {ratio:.2f})",
               "layer (1 = nearest the input)", "‖gradient‖")
    bottom = fig.add_axes([x, 0.7 / height, w, 2.65 / height])
    bottom.plot(range(depth + 1), stream_std, "o-", ms=3, color=colour)
    bottom.axhline(1.0, color=COLOURS["reference"], lw=0.6, ls="--")
    bottom.set_xlim(-0.4, depth + 0.4)
    bottom.set_ylim(0, max(std_max, 1.1 * max(stream_std)))
    label_axes(bottom, f"residual-stream std (after the last layer: {stream_std[-1]:.2f})",
               "after layer (0 = the input)", "std")
    return finish(fig, layout=None, alt=(
        f"Left: diagram of a {_placement(norm_first)} encoder with {depth} layers. Top right: bar chart of the "
        f"gradient norm of each layer's parameters at initialisation ({mean_of.rstrip(', ') or 'one stack'}), "
        f"{float(grad_norm[0]):.2g} at layer 1 and "
        f"{float(grad_norm[-1]):.2g} at layer {depth} (last/first = {ratio:.2f}). Bottom right: the standard "
        f"deviation of the residual stream after each layer, {describe_range(stream_std)}, ending at "
        f"{stream_std[-1]:.2f}."))
