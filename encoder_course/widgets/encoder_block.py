"""Notebook 07: post-LN vs pre-LN at initialisation
(the measurement is :func:`encoder_course.measure.gradient_flow.mean_placement_profile`)."""

from __future__ import annotations

from .. import plots
from ..measure.gradient_flow import mean_placement_profile
from ._display import showing

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["NORM_PLACEMENT_DEPTHS", "explore_norm_placement", "norm_placement_view"]

NORM_PLACEMENT_DEPTHS = tuple(range(2, 25, 2))  # the depth slider: 2, 4, ..., 24
NORM_PLACEMENT_STACKS = 5  # random stacks averaged per picture: one stack's profile is noisy


def norm_placement_view(norm_first: bool = False, depth: int = 12):
    """The diagram of a post-LN or pre-LN encoder, and its gradient norms and activation scale at step 0,
    each the mean of :data:`NORM_PLACEMENT_STACKS` random stacks.

    Args:
        norm_first: False for post-LN, True for pre-LN.
        depth: number of layers.

    Returns:
        the matplotlib Figure (diagram left; gradient norm per layer and residual-stream std right).
    """
    profile = mean_placement_profile(norm_first, depth, stacks=NORM_PLACEMENT_STACKS)
    return plots.norm_placement_panel(norm_first, profile["grad_norm"], profile["stream_std"],
                                      stacks=NORM_PLACEMENT_STACKS)


def explore_norm_placement():
    """A post-LN / pre-LN toggle and a depth slider, wired to :func:`norm_placement_view`."""
    import ipywidgets

    return ipywidgets.interactive(
        showing(norm_placement_view),
        norm_first=ipywidgets.ToggleButtons(options=[("post-LN", False), ("pre-LN", True)], value=False,
                                            description="placement"),
        depth=ipywidgets.IntSlider(value=12, min=NORM_PLACEMENT_DEPTHS[0], max=NORM_PLACEMENT_DEPTHS[-1],
                                   step=2, description="layers", continuous_update=False),
    )
