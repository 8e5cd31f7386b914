"""The one way a widget shows a figure: inside its Output widget, exactly once, with its alt text."""

from __future__ import annotations


def show_figure(fig) -> None:
    """Display a figure in the current output (an Output widget's, inside a callback) and close it.

    Closing it stops ``%matplotlib inline`` from showing it a second time at the end of the cell. The
    figure's alt text goes into the output's metadata (see :func:`encoder_course.plots.style.install_alt_formatter`).
    """
    import matplotlib.pyplot as plt
    from IPython.display import display

    from ..plots.style import install_alt_formatter

    install_alt_formatter()
    display(fig)
    plt.close(fig)


def showing(view):
    """Wrap a ``*_view`` callback so that a widget shows the figure it returns (see :func:`show_figure`).

    The wrapper takes keyword arguments only, so ``ipywidgets.interactive`` makes controls for exactly
    the arguments it is given, not for the view's other parameters.
    """

    def show(**kwargs):
        show_figure(view(**kwargs))

    show.__name__ = view.__name__
    show.__doc__ = view.__doc__
    return show
