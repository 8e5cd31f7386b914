"""Notebook 05: gradients through a deep stack, with and without residual paths
(the measurement is :func:`encoder_course.measure.gradient_flow.residual_stack_gradient_norms`)."""

from __future__ import annotations

from .. import plots
from ..measure.gradient_flow import residual_stack_gradient_norms
from ._display import showing

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["RESIDUAL_DEPTHS", "explore_residual_depth", "residual_depth_view"]

RESIDUAL_DEPTHS = (1, 2, 4, 8, 12, 16, 24, 32, 48)  # the depth slider's values


def residual_depth_view(depth: int = 12, residual: bool = True):
    """Gradient norm per layer of a toy ``tanh`` stack of ``depth`` layers, with or without residuals.

    The other setting (residual off when on, and vice versa) is drawn dashed for comparison.

    Returns:
        the matplotlib Figure.
    """
    norms = residual_stack_gradient_norms(depth, residual)
    other = residual_stack_gradient_norms(depth, not residual)
    return plots.gradient_norm_per_layer(
        norms, residual, reference=other,
        reference_label="without residual" if residual else "with residual",
        title=f"{depth} tanh layers (width 32, torch's default init), at initialisation",
    )


def explore_residual_depth():
    """A depth slider and a residual on/off toggle, wired to :func:`residual_depth_view`."""
    import ipywidgets

    return ipywidgets.interactive(
        showing(residual_depth_view),
        depth=ipywidgets.SelectionSlider(options=list(RESIDUAL_DEPTHS), value=12, description="layers",
                                         continuous_update=False),
        residual=ipywidgets.ToggleButtons(options=[("with residual", True), ("without", False)], value=True,
                                          description="residual"),
    )
