"""encoder_course.widgets (the package): it exports views and explorers only, never the experiments they draw."""

from encoder_course import widgets


def test_widgets_show_experiments_but_do_not_hold_them():
    """The measurements live in modules named for what they measure, not in widgets."""
    for name in ("norm_placement_profile", "residual_stack_gradient_norms", "analytic_parameter_counts",
                 "head_weights", "_padding_outputs", "padded_outputs"):
        assert not hasattr(widgets, name), name
    for name in widgets.__all__:
        assert name.startswith("explore_") or name.endswith("_view") or name.isupper() or name == "quiz", name
