"""Notebook 13: rotary or added positions, a window and how often a layer stays global; each layer's
attention and what the stack's attention costs, timed live (the notebook's own measurement over lengths is
:func:`encoder_course.measure.modern.local_attention_times`)."""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F

from ..blockwise import sliding_window_attention
from ..encoder import Encoder, EncoderConfig
from ..measure.timing import cpu_threads
from ..plots.style import finish, label_axes, new_figure, to_numpy
from ._display import show_figure

#: What the notebooks reach as ``widgets.<name>``.
__all__ = ["explore_modern_encoder", "modern_encoder_view"]

POSITIONS = ("rotary", "learned", "sinusoidal")
WINDOWS = (0, 4, 8, 16)  # 0: no window, every layer global
GLOBAL_EVERY = (1, 2, 3)
COST_LENGTH = 1024  # the stack's attention is timed at this length ...
COST_HEADS, COST_D_HEAD = 4, 16  # ... with 4 heads of width 16 (the explorer's encoders: d_model 64)
REPEATS = 2  # timed runs of each stack, after one warm-up (both stacks together stay under 0.3 s)


def _untrained(positions: str, window: int, global_every: int) -> Encoder:
    """A seeded untrained 6-layer encoder (64 wide, 4 heads) with ``positions``, ``window`` and ``global_every``."""
    torch.manual_seed(0)
    config = EncoderConfig(vocab_size=100, max_len=64, d_model=64, n_heads=4, d_ff=128, n_layers=6, dropout=0.0,
                           norm_first=True, positions=positions, window=window, global_every=global_every)
    return Encoder(config).eval()


def _default_ids(config: EncoderConfig) -> torch.Tensor:
    """A fixed sequence of up to 40 ids within ``config``'s vocabulary (ids 0-4 are special tokens)."""
    length = min(40, config.max_len)
    return (torch.arange(length) * 7 % max(config.vocab_size - 5, 1) + 5)[None]  # (1, L)


@torch.inference_mode()
def _stack_ms(local: list[bool], window: int) -> tuple[float, float]:
    """Milliseconds (median of :data:`REPEATS`, one thread) of the attention of every layer of the stack, at
    :data:`COST_LENGTH`: fused global attention for a global layer, the banded code for a local one; then the
    same stack with every layer global."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, COST_HEADS, COST_LENGTH, COST_D_HEAD, generator=generator) for _ in range(3))

    def run(kinds):
        for is_local in kinds:  # each layer's attention, (1, H, L, d_head)
            if is_local:
                sliding_window_attention(q, k, v, window)
            else:
                F.scaled_dot_product_attention(q, k, v)

    def median_ms(kinds):
        run(kinds)  # warm-up
        times = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            run(kinds)
            times.append(time.perf_counter() - start)
        return 1000 * statistics.median(times)

    with cpu_threads(1):
        ms = median_ms(local)
        return ms, (median_ms([False] * len(local)) if any(local) else ms)


def _check(positions: str, window: int, global_every: int, options) -> None:
    if positions not in options:
        raise ValueError(f"positions must be one of {tuple(options)}, got {positions!r}")
    if window not in WINDOWS:
        raise ValueError(f"window must be one of {WINDOWS}, got {window}")
    if global_every not in GLOBAL_EVERY:
        raise ValueError(f"global_every must be one of {GLOBAL_EVERY}, got {global_every}")


def modern_encoder_view(positions: str = "rotary", window: int = 8, global_every: int = 3, models=None, ids=None):
    """Each layer's attention (mean over heads) for ``ids`` with a window and ``global_every`` applied, and the
    cost of that stack's attention at :data:`COST_LENGTH` tokens: measured now, and the pairs from the formula.

    Args:
        positions: ``"rotary"``, ``"learned"`` or ``"sinusoidal"`` (with ``models``: one of its keys).
        window: the window of local layers (0: none, every layer global).
        global_every: with a window, layers 0, global_every, 2 * global_every, ... stay global.
        models: ``{positions: MaskedLM}`` trained in the notebook (with global attention): the chosen one's encoder
            gets the window for this view only (its config is restored afterwards). None: a seeded untrained
            6-layer encoder.
        ids: ``(1, L)`` token ids (default: a fixed sequence of 40 ids); cut to the encoder's ``max_len``.

    Returns:
        the matplotlib Figure: one map per layer, titled ``layer i: global`` or ``layer i: local``.
    """
    _check(positions, window, global_every, tuple(models) if models is not None else POSITIONS)
    if models is None:
        encoder = _untrained(positions, window, global_every)
        saved = encoder.config
    else:
        encoder = models[positions].encoder
        saved = encoder.config
        encoder.config = saved.replace(window=window, global_every=global_every)  # restored below
    try:
        config = encoder.config
        ids = (_default_ids(config) if ids is None else ids)[:, :config.max_len]  # (1, L)
        with torch.no_grad():
            maps = encoder.attention_maps(ids)  # n_layers x (1, H, L, L)
    finally:
        encoder.config = saved
    n = len(maps)
    local = [config.is_local(i) for i in range(n)]
    kinds = ["local" if is_local else "global" for is_local in local]
    fig, axes = new_figure((max(1.7 * n + 0.6, 7.5), 3.3), ncols=n, squeeze=False)
    for i, (ax, weights) in enumerate(zip(axes[0], maps)):
        ax.imshow(to_numpy(weights[0].mean(0)), cmap="viridis", vmin=0)  # (L, L): mean over heads
        ax.set_xticks([])
        ax.set_yticks([])
        label_axes(ax, f"layer {i}: {kinds[i]}", title_size=9)
    label_axes(axes[0][0], xlabel="key", ylabel="query")

    stack_ms, global_ms = _stack_ms(local, window)
    pairs_global = n * COST_LENGTH ** 2
    pairs = kinds.count("global") * COST_LENGTH ** 2 + kinds.count("local") * COST_LENGTH * (window + 1)
    trained = "trained with global attention" if models is not None else "untrained"
    global_layers = [str(i) for i, kind in enumerate(kinds) if kind == "global"]
    stack = (f"window {window}, global every {global_every}: " if window else "no window: ") + (
        "every layer global" if len(global_layers) == n else
        f"layer{'s' * (len(global_layers) > 1)} {', '.join(global_layers)} global, the others local")
    title = (f"{positions} positions ({trained}); {stack}\n"
             f"attention of these {n} layers at L = {COST_LENGTH} ({COST_HEADS} heads of {COST_D_HEAD}), "
             f"measured now: {stack_ms:.1f} ms (all global: {global_ms:.1f} ms)\n"
             f"from the formula (L² per global layer, L·(w+1) per local one): {pairs / 1e6:.2f} M (query, key) pairs "
             f"(all global: {pairs_global / 1e6:.2f} M)")
    return finish(fig, title=title, title_size=9,
                  alt=(f"{n} attention maps, one per layer ({', '.join(kinds)}), mean over heads, of an encoder with "
                       f"{positions} positions ({trained}); a local layer's weights lie in a band along the diagonal. "
                       f"Attention of these layers at {COST_LENGTH} tokens, measured now: {stack_ms:.1f} ms against "
                       f"{global_ms:.1f} ms with every layer global; from the formula {pairs / 1e6:.2f} million "
                       f"(query, key) pairs against {pairs_global / 1e6:.2f} million."))


def explore_modern_encoder(models=None, ids=None):
    """Positions, window and ``global_every`` controls wired to :func:`modern_encoder_view`.

    Args:
        models: ``{positions: MaskedLM}`` trained in the notebook (the positions offered are its keys), or None
            for untrained encoders.
        ids: ``(1, L)`` token ids to draw the maps for.
    """
    import ipywidgets as W

    options = tuple(models) if models is not None else POSITIONS
    positions = W.ToggleButtons(options=options, value="rotary" if "rotary" in options else options[0],
                                description="positions")
    window = W.Dropdown(options=[("0 (no window)", 0)] + [(str(w), w) for w in WINDOWS if w], value=8,
                        description="window")
    global_every = W.Dropdown(options=GLOBAL_EVERY, value=3, description="global every")

    def draw(positions, window, global_every):
        show_figure(modern_encoder_view(positions, window, global_every, models=models, ids=ids))

    out = W.interactive_output(draw, {"positions": positions, "window": window, "global_every": global_every})
    return W.VBox([positions, W.HBox([window, global_every]), out])
