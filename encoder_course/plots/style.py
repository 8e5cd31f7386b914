"""The one plotting vocabulary of the course: every figure in ``encoder_course.plots`` is drawn through it.

- :func:`to_numpy`: a tensor, array or list as a float numpy array.
- :func:`new_figure`, :func:`new_or_given_axes`: a figure of a given size at the course's dpi, or the
  caller's axes.
- :func:`label_axes`: the title, axis labels, legend and grid of one axes.
- :func:`finish`: the last line of every plot function: layout, overall title, and the figure's alt text.
- :data:`PALETTE`, :data:`COLOURS`, :func:`series_colour`: the Okabe-Ito colour-blind-safe palette and
  one colour per thing the course contrasts (post-LN / pre-LN, with / without mask, ...), so the same
  series has the same colour in every notebook.

Nothing here changes matplotlib's global settings (``rcParams``): each figure is given its size, dpi
and colours explicitly.

Alt text: every figure carries a sentence saying what it shows (:func:`finish` stores it, :func:`alt_text`
reads it). Inside IPython, the first figure finished registers a PNG formatter for matplotlib figures
that returns ``(png, {"alt": text})``, so a notebook's stored output carries
``"image/png": {"alt": ...}`` in its metadata, for screen readers and the website edition of the course.

Sharp figures: in a notebook on the inline backend with its default format, the same first figure asks
the backend for 2x PNGs ("retina"): each PNG has twice the pixels and its display size in the metadata
(``"width"``, ``"height"``), so it shows at the usual size, sharp on HiDPI screens and when the website
enlarges it. A format the notebook chose itself (``%config InlineBackend.figure_formats``) is kept.
"""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

#: What the notebooks reach as ``plots.<name>``.
__all__ = ["alt_text"]

DPI = 80  # every figure's dots per inch, given per figure (never through rcParams)

# Okabe & Ito (2008), "Color Universal Design": eight colours told apart with every common colour-vision deficiency.
PALETTE = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "grey": "#999999",
}

# Series with no meaning of their own take these in turn.
CYCLE = tuple(PALETTE[name] for name in ("blue", "orange", "green", "vermillion", "purple", "sky_blue", "black"))

# One colour per thing the course contrasts. Within a pair, the setting that shows the problem is
# vermillion and the one that fixes it blue; markers or line styles differ too, so colour is never the
# only cue.
COLOURS = {
    # norm placement (notebooks 05, 07, 10)
    "post_ln": PALETTE["vermillion"],
    "pre_ln": PALETTE["blue"],
    # the padding mask (03, 10, 11)
    "without_mask": PALETTE["vermillion"],
    "with_mask": PALETTE["blue"],
    # the residual path (05)
    "without_residual": PALETTE["vermillion"],
    "with_residual": PALETTE["blue"],
    "plain_scaled_init": PALETTE["orange"],  # a plain stack with init std 1/sqrt(width)
    "plain_layer_norm": PALETTE["purple"],  # a plain stack with a LayerNorm before each sublayer
    # the 1/sqrt(d_k) scale of the scores (02)
    "without_scale": PALETTE["vermillion"],
    "with_scale": PALETTE["blue"],
    # attention implementations (09)
    "naive": PALETTE["vermillion"],
    "sdpa": PALETTE["blue"],
    "chunked": PALETTE["green"],
    # FLOPs of one layer (09)
    "projections": PALETTE["orange"],
    "scores": PALETTE["vermillion"],
    "weighted_values": PALETTE["purple"],
    "ffn": PALETTE["blue"],
    # parameters by component (08) and the boxes of the encoder map (00, 07), which use pale tints
    "embeddings": PALETTE["green"],
    "attention": PALETTE["orange"],
    "feed_forward": PALETTE["blue"],
    "norms": PALETTE["yellow"],
    "other": PALETTE["grey"],
    # one item picked out among others (a head), the others, and reference lines (uniform, a prediction)
    "highlight": PALETTE["vermillion"],
    "others": PALETTE["sky_blue"],
    "weights": PALETTE["orange"],
    "reference": PALETTE["grey"],
}

# (words that must all appear in a series' label, colour key): the first rule that matches wins, so a
# label such as "without padding mask" gets the same colour in every figure that draws it.
LABEL_COLOURS = (
    (("without padding mask",), "without_mask"),
    (("no mask",), "without_mask"),
    (("with padding mask",), "with_mask"),
    (("post-LN",), "post_ln"),
    (("pre-LN",), "pre_ln"),
    (("without residual",), "without_residual"),
    (("plain", "1/sqrt(width)"), "plain_scaled_init"),
    (("plain", "LayerNorm"), "plain_layer_norm"),
    (("plain",), "without_residual"),
    (("residual",), "with_residual"),
)

_ALT = "_encoder_course_alt"  # the attribute holding a figure's (or an axes') alt text
_RETINA_ASKED = "_encoder_course_retina_asked"  # set on an IPython shell once 2x PNGs were asked for
_OWNED = "_encoder_course_owned"  # set on figures made here: only those are laid out by finish()


def tint(colour: str, amount: float = 0.7) -> str:
    """``colour`` mixed with ``amount`` of white (a pale fill for boxes with black text on them)."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    r, g, b = (round(c + (255 - c) * amount) for c in (r, g, b))
    return f"#{r:02x}{g:02x}{b:02x}"


def series_colour(label, index: int = 0, default: str | None = None) -> str:
    """The colour of a series: its contrast's colour when its label names one (see :data:`LABEL_COLOURS`),
    otherwise ``default`` or, without one, the ``index``-th colour of :data:`CYCLE`."""
    text = str(label)
    for words, key in LABEL_COLOURS:
        if all(word in text for word in words):
            return COLOURS[key]
    return default if default is not None else CYCLE[index % len(CYCLE)]


def to_numpy(values):
    """A tensor (any dtype or device, with or without grad), an array or a list, as a float numpy array."""
    import numpy as np

    if hasattr(values, "detach"):  # a torch tensor: bool, int, float16 and bfloat16 become float32
        values = values.detach().cpu()
        return (values if str(values.dtype) == "torch.float64" else values.float()).numpy()
    return np.asarray(values, dtype=float)


def new_figure(size=(7, 3.6), nrows: int = 1, ncols: int = 1, dpi: int = DPI, **kwargs):
    """A new figure of ``size`` inches at ``dpi`` and its axes (``plt.subplots``' keyword arguments pass through)."""
    fig, axes = plt.subplots(nrows, ncols, figsize=size, dpi=dpi, **kwargs)
    setattr(fig, _OWNED, True)
    return fig, axes


def blank_figure(size, dpi: int = DPI):
    """A new figure of ``size`` inches at ``dpi`` with no axes yet (for axes placed by hand)."""
    fig = plt.figure(figsize=size, dpi=dpi)
    setattr(fig, _OWNED, True)
    return fig


def new_or_given_axes(ax=None, size=(7, 3.6), dpi: int = DPI):
    """The caller's axes and its figure, or a new figure of ``size`` inches with one axes."""
    if ax is not None:
        return ax.figure, ax
    return new_figure(size, dpi=dpi)


def label_axes(ax, title: str | None = None, xlabel: str | None = None, ylabel: str | None = None, *,
               legend: bool | dict = False, grid: bool | str = False, title_size: float = 10):
    """Title, axis labels, legend and grid of one axes.

    Args:
        legend: True for a legend (font size 8), or a dict of ``ax.legend`` keyword arguments.
        grid: True for a light grid on the major ticks, ``"both"`` for major and minor ticks.
    """
    if title is not None:
        ax.set_title(title, fontsize=title_size)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    if legend:
        ax.legend(**{"fontsize": 8, **(legend if isinstance(legend, dict) else {})})
    if grid:
        ax.grid(alpha=0.3, which="both" if grid == "both" else "major")
    return ax


def finish(target, *, alt: str, title: str | None = None, title_size: float = 11, layout: str | None = "tight"):
    """The last step of every figure: its overall title, its layout and its alt text.

    Args:
        target: the Figure, or the one Axes a function drew into (perhaps the caller's).
        alt: one or two sentences saying what the figure shows, for readers who cannot see it.
        title: the figure's overall title (``suptitle``).
        layout: ``"tight"`` to fit the axes to their labels, None to keep the margins set by hand.
            A figure made with ``layout="constrained"`` keeps its own layout; a caller's figure is
            never laid out here.

    Returns:
        the Figure.
    """
    if not alt or not alt.strip():
        raise ValueError("every figure needs an alt text saying what it shows")
    fig = target if isinstance(target, Figure) else target.figure
    owned = getattr(fig, _OWNED, False)
    if target is not fig:  # one axes: its alt text joins the others' when the figure is the caller's
        setattr(target, _ALT, alt)
    if owned or target is fig:
        setattr(fig, _ALT, alt)
    if title is not None:
        fig.suptitle(title, fontsize=title_size)
    if owned and layout == "tight" and not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.tight_layout()
    install_alt_formatter()
    return fig


def alt_text(fig) -> str:
    """The alt text of a figure: its own, or else the sentences of the axes drawn into it, in order."""
    own = getattr(fig, _ALT, None)
    if own:
        return own
    return " ".join(text for ax in fig.axes if (text := getattr(ax, _ALT, None)))


def token_ticks(ax, tokens, max_labels: int | None = 16, rotation: float = 45, fontsize: float | None = None) -> None:
    """Token strings on both axes of a square map, when there are at most ``max_labels`` (None: always)."""
    if tokens is not None and (max_labels is None or len(tokens) <= max_labels):
        ax.set_xticks(range(len(tokens)))
        ax.set_xticklabels(tokens, rotation=rotation, ha="right" if rotation else "center", fontsize=fontsize)
        ax.set_yticks(range(len(tokens)))
        ax.set_yticklabels(tokens, fontsize=fontsize)


def describe_range(values) -> str:
    """``"from a to b"`` for a sequence of numbers (3 significant digits), for alt texts."""
    values = [float(v) for v in values]
    if not values:
        return "no values"
    return f"from {min(values):.3g} to {max(values):.3g}"


def install_alt_formatter() -> bool:
    """Make IPython's PNG output of a matplotlib figure carry the figure's alt text in its metadata.

    Does nothing outside IPython (IPython is never imported here). Inside IPython it wraps the PNG
    formatter registered for figures (the inline backend's, with its settings, retina included) or,
    when there is none, registers one, so that displaying a figure gives ``(png, {"alt": text})``.
    Called by :func:`finish` every time (cheap): ``%matplotlib inline`` run again re-registers the
    inline backend's formatter, and the next figure finished wraps it again.

    Returns:
        True when the formatter is in place.
    """
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    if not formatters or "image/png" not in formatters:
        return False
    _prefer_retina(shell)
    png = formatters["image/png"]
    try:
        current = png.lookup_by_type(Figure)
    except KeyError:
        current = None
    if getattr(current, "adds_alt_text", False):
        return True
    if current is None and any(_registered(f, Figure) for f in formatters.values()):
        return False  # figures are shown in another format only (e.g. SVG): leave that choice alone
    png.for_type(Figure, _png_with_alt(current))
    return True


def _prefer_retina(shell) -> None:
    """Once per shell: have the inline backend store 2x PNGs, unless the notebook chose its figure formats.

    Goes through the backend's own setting (what ``%config InlineBackend.figure_formats = {"retina"}``
    does), so the backend keeps its other settings and a later ``%matplotlib inline`` keeps the choice.
    """
    if getattr(shell, _RETINA_ASKED, False):
        return
    setattr(shell, _RETINA_ASKED, True)
    try:
        from matplotlib_inline.config import InlineBackend
    except ImportError:  # no inline backend installed: nothing to ask
        return
    if not InlineBackend.initialized():
        return  # the inline backend is not in use in this shell
    backend = InlineBackend.instance()
    if backend.shell is shell and set(backend.figure_formats) == {"png"}:  # the default, untouched
        backend.figure_formats = {"retina"}  # re-registers the PNG formatter with the same print settings


def _registered(formatter, cls) -> bool:
    try:
        formatter.lookup_by_type(cls)
    except (KeyError, AttributeError):
        return False
    return True


def _png_with_alt(render):
    """A PNG formatter for figures: ``render``'s output (or a plain PNG) with the alt text as metadata."""

    def png_with_alt(fig):
        if render is not None:
            data = render(fig)
        else:
            from IPython.core.pylabtools import print_figure

            try:
                data = print_figure(fig, "png", base64=True)
            except TypeError:  # IPython before 7.29 returns bytes only
                data = print_figure(fig, "png")
        text = alt_text(fig)
        if data is None or not text:
            return data
        metadata = {}
        if isinstance(data, tuple):  # the retina formatter returns (png, {"width": ..., "height": ...})
            data, metadata = data[0], dict(data[1] or {})
        metadata["alt"] = text
        return data, metadata

    png_with_alt.adds_alt_text = True
    png_with_alt.__wrapped__ = render
    return png_with_alt
