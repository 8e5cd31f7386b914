"""Notebook 08: where an encoder's parameters are."""

from __future__ import annotations

from .style import COLOURS, finish, label_axes, new_figure

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["config_error_figure", "parameter_breakdown"]

_COMPONENTS = (("embeddings", "embeddings"), ("attention", "attention"), ("feed_forward", "feed-forward"),
               ("norms", "LayerNorms"), ("other", "other (pooler, heads)"))


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
    names = [(key, label) for key, label in _COMPONENTS if key != "other" or counts.get("other", 0)]
    total = counts["total"]
    values = [counts[key] / 1e6 for key, _ in names]
    fig, ax = new_figure((7.5, 3.2))
    bars = ax.barh([label for _, label in names], values, color=[COLOURS[key] for key, _ in names],
                   edgecolor="black", linewidth=0.5)
    ax.invert_yaxis()
    right = max(values) if max(values) > 0 else 1.0
    shares = []
    for bar, (key, label) in zip(bars, names):
        share = 100 * counts[key] / total if total else 0.0
        text = f"{counts[key]:,}  ({share:.1f}%)" if share >= 1 else f"{counts[key]:,}  ({share:.2f}%)"
        ax.text(bar.get_width() + 0.01 * right, bar.get_y() + bar.get_height() / 2, text, va="center", fontsize=9)
        shares.append(f"{label} {text}")
    ax.set_xlim(0, right * 1.45)
    label_axes(ax, f"{title}: {total:,} in all", xlabel="parameters (millions)")
    # Fixed margins rather than tight_layout: the configuration explorer redraws this often.
    fig.subplots_adjust(left=0.25, right=0.97, top=0.83, bottom=0.15)
    return finish(fig, layout=None, alt=(
        f"Horizontal bar chart of an encoder's {total:,} parameters by component ({title.splitlines()[0]}): "
        + "; ".join(shares) + "."))


def config_error_figure(message: str, title: str = "Choose a number of heads that divides d_model"):
    """A figure that says why a configuration is not a valid encoder (the explorer shows it instead of bars)."""
    fig, ax = new_figure((7.5, 3.2))
    ax.set_axis_off()
    ax.text(0.5, 0.5, f"Not a valid encoder:\n{message}", ha="center", va="center", fontsize=11)
    label_axes(ax, title)
    return finish(fig, layout=None, alt=f"No chart: not a valid encoder. {message} {title}.")
