"""Interactive explorers for the notebooks.

Each explorer is split in two: a plain callback (``*_view``) that takes the controls' values and
draws or returns a figure, which the tests call for every combination of controls, and a small
function that wires the callback to ipywidgets controls. ipywidgets is imported only here.
"""

from __future__ import annotations


# --- notebooks 01-02: positions and the attention scale -----------------------------------------

POSITIONS_D_MODELS = (8, 16, 32, 64, 128, 256)
POSITIONS_SEQ_LEN = 64
POSITIONS_STEP = 9  # the position slider moves in steps of 9: 0, 9, ..., 63


def positions_view(d_model: int = 64, position: int = 14, seq_len: int = POSITIONS_SEQ_LEN):
    """The sinusoidal table with one position highlighted, and that position's similarity to all others.

    Left: the table ``(seq_len, d_model)`` as a heatmap, the chosen row outlined. Right: the cosine
    similarity between the chosen position's vector and every position's vector. Moving the position
    slides the same curve along: the similarity depends only on the offset.

    Args:
        d_model: width of the position vectors (even).
        position: the highlighted position, ``0 <= position < seq_len``.
        seq_len: number of positions drawn.

    Returns:
        the matplotlib Figure.
    """
    import matplotlib.pyplot as plt
    import torch

    from .positions import sinusoidal_positions

    if not 0 <= position < seq_len:
        raise ValueError(f"position must be in [0, {seq_len}), got {position}")
    table = sinusoidal_positions(seq_len, d_model)  # (L, d_model)
    unit = table / table.norm(dim=-1, keepdim=True)  # every row has norm sqrt(d_model/2)
    similarity = (unit @ unit[position]).numpy()  # (L,)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), dpi=80,
                                      gridspec_kw={"width_ratios": [1, 1.25]})
    left.imshow(table.numpy(), aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    left.axhline(position - 0.5, color="black", lw=1.2)
    left.axhline(position + 0.5, color="black", lw=1.2)
    left.set_xlabel("feature index")
    left.set_ylabel("position")
    left.set_title(f"table {seq_len} × {d_model}, row {position} outlined", fontsize=10)
    offsets = torch.arange(seq_len) - position
    right.plot(torch.arange(seq_len).numpy(), similarity, "-", color="#1f77b4")
    right.axvline(position, color="black", lw=0.8, ls="--")
    right.axhline(0, color="grey", lw=0.6)
    right.set_ylim(-0.6, 1.05)
    right.set_xlabel("other position j (offset j − position)")
    right.set_ylabel("cosine similarity")
    near = similarity[(offsets.abs() == 1).numpy()].mean()
    right.set_title(f"similarity to position {position}; at offset ±1: {near:.2f}", fontsize=10)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.15, top=0.9, wspace=0.25)  # faster than tight_layout
    return fig


def explore_positions():
    """Sliders for d_model and a position, wired to :func:`positions_view`."""
    import ipywidgets

    return ipywidgets.interactive(
        _intro_display(positions_view),
        d_model=ipywidgets.Dropdown(options=POSITIONS_D_MODELS, value=64, description="d_model"),
        position=ipywidgets.IntSlider(value=14, min=0, max=POSITIONS_SEQ_LEN - 1, step=POSITIONS_STEP,
                                      description="position", continuous_update=False),
    )


ATTENTION_SCALE_EXPONENTS = tuple(range(-6, 1))  # scale = 2**e: 1/64 ... 1
ATTENTION_SCALE_D_KS = (16, 64, 256, 1024)


def attention_scale_view(scale: float = 0.125, d_k: int = 64, n_keys: int = 8, seed: int = 0):
    """One query's attention row over ``n_keys`` random keys, with the scores multiplied by ``scale``.

    Queries and keys have independent unit-variance entries, so the raw scores ``q . k`` have
    variance ``d_k``; ``scale = 1/sqrt(d_k)`` is the Transformer's choice.

    Args:
        scale: factor applied to the raw scores.
        d_k: width of the query and keys.
        n_keys: number of keys.
        seed: seed of the random query and keys (the same draw for every scale).

    Returns:
        the matplotlib Figure (bars of the weights, entropy in the title).
    """
    import math

    import torch

    from .plots import attention_row_bars

    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(d_k, generator=generator)  # (d_k,)
    k = torch.randn(n_keys, d_k, generator=generator)  # (n_keys, d_k)
    weights = torch.softmax(scale * (k @ q), dim=-1)  # (n_keys,)
    title = f"scale {scale:.4g}, d_k {d_k} (1/√d_k = {1 / math.sqrt(d_k):.4g})"
    return attention_row_bars(weights, [f"k{i}" for i in range(n_keys)], title=title)


def explore_attention_scale():
    """A log slider for the scale and a choice of d_k, wired to :func:`attention_scale_view`."""
    import ipywidgets

    return ipywidgets.interactive(
        _intro_display(attention_scale_view),
        scale=ipywidgets.FloatLogSlider(value=0.125, base=2, min=ATTENTION_SCALE_EXPONENTS[0],
                                        max=ATTENTION_SCALE_EXPONENTS[-1], step=1, description="scale",
                                        continuous_update=False),
        d_k=ipywidgets.Dropdown(options=ATTENTION_SCALE_D_KS, value=64, description="d_k"),
    )


def _show_figure(fig):
    """Display a figure inside an Output widget and close it (so it is shown exactly once)."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    display(fig)
    plt.close(fig)


def _intro_display(view):
    """Wrap a ``*_view`` callback so the widget shows its figure once (see :func:`_show_figure`)."""

    def show(**kwargs):
        _show_figure(view(**kwargs))

    show.__name__ = view.__name__
    return show


# --- notebooks 07-08: norm placement and the configuration explorer ------------------------------

NORM_PLACEMENT_DEPTHS = tuple(range(2, 25, 2))  # the depth slider: 2, 4, ..., 24


def norm_placement_profile(norm_first: bool, depth: int, *, d_model: int = 64, n_heads: int = 4,
                           seq_len: int = 16, batch: int = 4, init: str = "xavier", seed: int = 0) -> dict:
    """Measure a freshly initialised stack of encoder blocks: gradient norm and activation scale per layer.

    The stack is ``depth`` :class:`~encoder_course.EncoderBlock` layers (d_ff = 4 x d_model, GELU,
    no dropout), followed by a final LayerNorm when pre-LN. Its input is standard normal noise
    ``(batch, seq_len, d_model)``; its loss is the mean squared error against a random target. Nothing
    is trained: this is the network at step 0. The global random state is left untouched.

    Args:
        norm_first: False for post-LN, True for pre-LN.
        depth: number of layers.
        d_model, n_heads, seq_len, batch: size of the stack and of its input.
        init: ``"xavier"`` (Xavier-uniform weight matrices, as ``nn.Transformer`` initialises
            itself and as Xiong et al. 2020 analyse) or ``"default"`` (PyTorch's ``nn.Linear``
            default, what ``EncoderBlock`` starts with).
        seed: seed for the weights, the input and the target.

    Returns:
        ``{"grad_norm": [depth floats], "stream_std": [depth + 1 floats]}``: the norm of the gradient
        of each layer's parameters (layer 1 first), and the standard deviation of the residual
        stream entering layer 1 and leaving each layer.
    """
    import torch
    from torch import nn

    from .block import EncoderBlock
    from .layer_norm import LayerNorm

    if init not in ("xavier", "default"):
        raise ValueError(f"init must be 'xavier' or 'default', got {init!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers = nn.ModuleList(
            EncoderBlock(d_model, n_heads, 4 * d_model, dropout=0.0, norm_first=norm_first)
            for _ in range(depth)
        )
        if init == "xavier":
            for p in layers.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)
        final_norm = LayerNorm(d_model) if norm_first else None
        x = torch.randn(batch, seq_len, d_model)  # (B, L, d_model)
        target = torch.randn(batch, seq_len, d_model)  # (B, L, d_model)
    # The tensors are tiny: one thread is faster than several waiting on each other.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        stream_std = [x.std().item()]
        for layer in layers:
            x = layer(x)  # (B, L, d_model)
            stream_std.append(x.std().item())
        if final_norm is not None:
            x = final_norm(x)
        loss = ((x - target) ** 2).mean()
        loss.backward()
        grad_norm = [torch.sqrt(sum((p.grad ** 2).sum() for p in layer.parameters())).item()
                     for layer in layers]
    finally:
        torch.set_num_threads(threads)
    return {"grad_norm": grad_norm, "stream_std": stream_std}


def norm_placement_view(norm_first: bool = False, depth: int = 12):
    """The diagram of a post-LN or pre-LN encoder, and its gradient norms and activation scale at step 0.

    Args:
        norm_first: False for post-LN, True for pre-LN.
        depth: number of layers.

    Returns:
        the matplotlib Figure (diagram left; gradient norm per layer and residual-stream std right).
    """
    from .plots import norm_placement_panel

    profile = norm_placement_profile(norm_first, depth)
    return norm_placement_panel(norm_first, profile["grad_norm"], profile["stream_std"])


def explore_norm_placement():
    """A post-LN / pre-LN toggle and a depth slider, wired to :func:`norm_placement_view`."""
    import ipywidgets

    return ipywidgets.interactive(
        _intro_display(norm_placement_view),
        norm_first=ipywidgets.ToggleButtons(options=[("post-LN", False), ("pre-LN", True)], value=False,
                                            description="placement"),
        depth=ipywidgets.IntSlider(value=12, min=NORM_PLACEMENT_DEPTHS[0], max=NORM_PLACEMENT_DEPTHS[-1],
                                   step=2, description="layers", continuous_update=False),
    )


CONFIG_LAYERS = (1, 6, 12, 24)
CONFIG_D_MODELS = (256, 384, 768, 1024)
CONFIG_HEADS = (4, 8, 12, 16)
CONFIG_FF_RATIOS = (("2", 2.0), ("8/3", 8 / 3), ("4", 4.0))
CONFIG_VOCABS = (8000, 30522, 50257)


def analytic_parameter_counts(config) -> dict:
    """Count an encoder's parameters from its configuration alone, with the formulas per component.

    Equal to ``count_parameters(Encoder(config))`` without building the model.

    Returns:
        a dict with the keys ``embeddings, attention, feed_forward, norms, other, total``.
    """
    d, d_ff, n = config.d_model, config.d_ff, config.n_layers
    embeddings = config.vocab_size * d  # the token table
    if config.positions == "learned":
        embeddings += config.max_len * d  # the position table (sinusoids have no parameters)
    embeddings += config.type_vocab_size * d  # token types (segments)
    if config.embedding_norm:
        embeddings += 2 * d  # gamma and beta
    attention = n * 4 * (d * d + d)  # w_q, w_k, w_v, w_o with biases
    ffn_per_layer = d * d_ff + d_ff + d_ff * d + d  # w1 and w2 with biases
    if config.activation == "swiglu":
        ffn_per_layer += d * d_ff + d_ff  # the gate w3
    norms = n * 2 * 2 * d + (2 * d if config.norm_first else 0)  # two per layer (+ the final one)
    counts = {"embeddings": embeddings, "attention": attention, "feed_forward": n * ffn_per_layer,
              "norms": norms, "other": 0}
    counts["total"] = sum(counts.values())
    return counts


def config_view(n_layers: int = 12, d_model: int = 768, n_heads: int = 12, d_ff_ratio: float = 4.0,
                vocab_size: int = 30522):
    """The parameter breakdown of a BERT-style encoder with the given sizes.

    Everything not named is as BERT-base (learned positions up to 512, two token types, post-LN,
    GELU); ``d_ff = round(d_ff_ratio * d_model)``.

    Returns:
        the matplotlib Figure (a message instead of bars when ``n_heads`` does not divide ``d_model``).
    """
    import matplotlib.pyplot as plt

    from .encoder import EncoderConfig
    from .plots import parameter_breakdown

    d_ff = round(d_ff_ratio * d_model)
    try:
        config = EncoderConfig.bert_base().replace(n_layers=n_layers, d_model=d_model, n_heads=n_heads,
                                                   d_ff=d_ff, vocab_size=vocab_size)
    except ValueError as error:
        fig, ax = plt.subplots(figsize=(7.5, 3.2), dpi=80)
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"Not a valid encoder:\n{error}", ha="center", va="center", fontsize=11)
        ax.set_title("Choose a number of heads that divides d_model", fontsize=10)
        return fig
    counts = analytic_parameter_counts(config)
    title = (f"{n_layers} layers, d_model {d_model}, {n_heads} heads (heads add no parameters), "
             f"d_ff {d_ff}, vocab {vocab_size:,}\nTotal")
    return parameter_breakdown(counts, title=title)


def explore_config():
    """Controls for the sizes of an encoder, wired to :func:`config_view`."""
    import ipywidgets

    return ipywidgets.interactive(
        _intro_display(config_view),
        n_layers=ipywidgets.SelectionSlider(options=CONFIG_LAYERS, value=12, description="layers",
                                            continuous_update=False),
        d_model=ipywidgets.Dropdown(options=CONFIG_D_MODELS, value=768, description="d_model"),
        n_heads=ipywidgets.Dropdown(options=CONFIG_HEADS, value=12, description="heads"),
        d_ff_ratio=ipywidgets.Dropdown(options=CONFIG_FF_RATIOS, value=4.0, description="d_ff / d_model"),
        vocab_size=ipywidgets.Dropdown(options=CONFIG_VOCABS, value=30522, description="vocabulary"),
    )


# --- padding explorer (notebook 03) and heads explorer (notebook 04) -------------------------

PADDING_SENTENCE = ("the", "bank", "approved", "it")
PADDING_MAX = 124  # the seed's production story: 3 vs 124 padding positions
_PADDING_MODELS: dict = {}
_HEADS_MODELS: dict = {}
_PADDING_WORST: dict = {}


def _padding_model(seed: int = 0):
    """A small seeded encoder (eval mode, sinusoidal positions), built once per seed."""
    cache = _PADDING_MODELS
    if seed not in cache:
        import torch

        from .encoder import Encoder, EncoderConfig

        generator_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        config = EncoderConfig(vocab_size=16, max_len=len(PADDING_SENTENCE) + PADDING_MAX, d_model=32,
                               n_heads=4, d_ff=64, n_layers=2, dropout=0.0, pad_id=0)
        cache[seed] = Encoder(config).eval()
        torch.random.set_rng_state(generator_state)  # leave the caller's random stream alone
    return cache[seed]


def _padding_outputs(use_mask: bool, pad_length: int, seed: int = 0):
    """Outputs and last-layer weights (head average) of the padded sentence, and the drift."""
    import torch

    from .masks import padding_mask

    model = _padding_model(seed)
    n_real = len(PADDING_SENTENCE)
    sentence = torch.arange(1, n_real + 1)[None, :]  # (1, n_real), ids 1..n_real, pad id 0
    ids = torch.cat([sentence, torch.zeros(1, pad_length, dtype=torch.long)], dim=1)  # (1, L)
    mask = padding_mask(ids, 0) if use_mask else None
    with torch.no_grad():
        reference = model(sentence)  # (1, n_real, d_model): the sentence with no padding at all
        out, weights = model(ids, mask, return_weights=True)
    drift = (out[0, :n_real] - reference[0]).abs().amax(dim=-1)  # (n_real,)
    return weights[-1][0].mean(dim=0), drift  # (L, L), (n_real,)


def _padding_worst_drift(seed: int = 0) -> float:
    """The largest unmasked drift over a coarse grid of padding lengths (computed once per seed)."""
    if seed not in _PADDING_WORST:
        _PADDING_WORST[seed] = max(float(_padding_outputs(False, n, seed)[1].max())
                                   for n in range(0, PADDING_MAX + 1, 31))
    return _PADDING_WORST[seed]


def padding_view(use_mask: bool, pad_length: int, seed: int = 0):
    """Callback of :func:`explore_padding`: attention heatmap and the real tokens' drift.

    Args:
        use_mask: pass the padding mask to the encoder or not.
        pad_length: padding positions appended to the four-token sentence (0 to 124).
        seed: which random small encoder to use.

    Returns:
        a matplotlib Figure.
    """
    from . import plots

    if not 0 <= int(pad_length) <= PADDING_MAX:
        raise ValueError(f"pad_length must be in [0, {PADDING_MAX}], got {pad_length}")
    weights, drift = _padding_outputs(bool(use_mask), int(pad_length), seed)
    # A fixed drift axis (the worst unmasked drift over a coarse grid) makes the toggle obvious.
    worst = _padding_worst_drift(seed)
    top = 1.15 * max(worst, float(drift.max()), 1e-3)
    return plots.padding_drift_figure(weights, drift, list(PADDING_SENTENCE), len(PADDING_SENTENCE),
                                      bool(use_mask), top)


def explore_padding():
    """Toggle the padding mask and change the padding length; watch attention and the drift."""
    import ipywidgets as W

    use_mask = W.Checkbox(value=False, description="use padding mask", indent=False)
    pad_length = W.IntSlider(value=3, min=0, max=PADDING_MAX, step=1, description="padding",
                             continuous_update=False)
    out = W.interactive_output(lambda use_mask, pad_length: _show_figure(padding_view(use_mask, pad_length)),
                               {"use_mask": use_mask, "pad_length": pad_length})
    return W.VBox([W.HBox([use_mask, pad_length]), out])


HEAD_SENTENCES = (
    "the bank approved it",
    "the river bank flooded after the storm",
    "she said the loan was approved",
)
HEAD_LAYERS = 2
HEAD_COUNT = 8


def _heads_model(seed: int = 0):
    """A small seeded encoder with 8 heads per layer and RANDOM weights (built once per seed)."""
    cache = _HEADS_MODELS
    if seed not in cache:
        import torch

        from .encoder import Encoder, EncoderConfig

        generator_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        config = EncoderConfig(vocab_size=len(_head_vocab()) + 1, max_len=32, d_model=64,
                               n_heads=HEAD_COUNT, d_ff=128, n_layers=HEAD_LAYERS, dropout=0.0, pad_id=0)
        cache[seed] = Encoder(config).eval()
        torch.random.set_rng_state(generator_state)
    return cache[seed]


def _head_vocab():
    words = sorted({w for s in HEAD_SENTENCES for w in s.split()})
    return {w: i + 1 for i, w in enumerate(words)}  # id 0 is left for padding


def head_weights(sentence: str, layer: int = 0, seed: int = 0):
    """Attention weights ``(H, L, L)`` of one layer of the random 8-head encoder for a sentence."""
    import torch

    vocab = _head_vocab()
    words = sentence.split()
    unknown = [w for w in words if w not in vocab]
    if unknown:
        raise ValueError(f"unknown words {unknown}; use one of the sentences {HEAD_SENTENCES}")
    if not 0 <= layer < HEAD_LAYERS:
        raise ValueError(f"layer must be in [0, {HEAD_LAYERS}), got {layer}")
    ids = torch.tensor([[vocab[w] for w in words]])  # (1, L)
    with torch.no_grad():
        _, weights = _heads_model(seed)(ids, return_weights=True)
    return weights[layer][0]  # (H, L, L)


def heads_view(head: int, sentence: str = HEAD_SENTENCES[0], layer: int = 0, seed: int = 0):
    """Callback of :func:`explore_heads`: one head's attention map and every head's entropy.

    Args:
        head: which of the 8 heads to show (0 to 7).
        sentence: one of ``HEAD_SENTENCES``.
        layer: 0 or 1.
        seed: which random encoder (the weights are random, not trained).

    Returns:
        a matplotlib Figure.
    """
    from . import plots

    if not 0 <= int(head) < HEAD_COUNT:
        raise ValueError(f"head must be in [0, {HEAD_COUNT}), got {head}")
    weights = head_weights(sentence, int(layer), seed)
    return plots.head_view_figure(weights, int(head), sentence.split(), layer=int(layer),
                                  note=" (random weights)")


def explore_heads():
    """Pick a head, a sentence and a layer of a small RANDOM encoder and see that head's attention."""
    import ipywidgets as W

    head = W.IntSlider(value=0, min=0, max=HEAD_COUNT - 1, step=1, description="head",
                       continuous_update=False)
    sentence = W.Dropdown(options=list(HEAD_SENTENCES), value=HEAD_SENTENCES[0], description="sentence")
    layer = W.ToggleButtons(options=list(range(HEAD_LAYERS)), value=0, description="layer")
    out = W.interactive_output(
        lambda head, sentence, layer: _show_figure(heads_view(head, sentence, layer)),
        {"head": head, "sentence": sentence, "layer": layer},
    )
    return W.VBox([W.HBox([head, layer]), sentence, out])


# --- notebook 11: real attention maps of all-MiniLM-L6-v2 --------------------------------------

REAL_ATTENTION_SENTENCES = (
    "The bank approved it",
    "We sat on the bank of the river.",
    "The bank approved the loan because it was safe.",
    "The animal didn't cross the street because it was too tired.",
)


def real_attention_view(attention, sentence_index: int = 0, layer: int = 0, head: int = 0):
    """Callback of :func:`explore_real_attention`: one head of the real model on one sentence.

    Args:
        attention: precomputed maps, as returned by
            ``encoder_course.pretrained.SentenceEncoder.attention(sentences)`` (a list of dicts
            with ``sentence``, ``tokens`` and ``weights`` ``(n_layers, H, L, L)``), so the
            callback only draws.
        sentence_index: which sentence.
        layer: which layer (0 to 5 for all-MiniLM-L6-v2).
        head: which head (0 to 11).

    Returns:
        a matplotlib Figure.
    """
    from . import plots

    if not 0 <= int(sentence_index) < len(attention):
        raise ValueError(f"sentence_index must be in [0, {len(attention)}), got {sentence_index}")
    item = attention[int(sentence_index)]
    n_layers, n_heads = item["weights"].shape[:2]
    if not 0 <= int(layer) < n_layers:
        raise ValueError(f"layer must be in [0, {n_layers}), got {layer}")
    if not 0 <= int(head) < n_heads:
        raise ValueError(f"head must be in [0, {n_heads}), got {head}")
    return plots.real_attention_figure(item["weights"][int(layer)], int(head), item["tokens"], int(layer))


def explore_real_attention(attention):
    """Pick a sentence, a layer and a head of the real all-MiniLM-L6-v2 and see its attention map.

    Args:
        attention: precomputed maps from ``SentenceEncoder.attention(sentences)``.
    """
    import ipywidgets as W

    n_layers, n_heads = attention[0]["weights"].shape[:2]
    sentence = W.Dropdown(options=[(item["sentence"], i) for i, item in enumerate(attention)], value=0,
                          description="sentence", layout=W.Layout(width="95%"))
    layer = W.IntSlider(value=0, min=0, max=n_layers - 1, step=1, description="layer",
                        continuous_update=False)
    head = W.IntSlider(value=0, min=0, max=n_heads - 1, step=1, description="head",
                       continuous_update=False)
    out = W.interactive_output(
        lambda sentence_index, layer, head: _show_figure(real_attention_view(attention, sentence_index, layer, head)),
        {"sentence_index": sentence, "layer": layer, "head": head},
    )
    return W.VBox([sentence, W.HBox([layer, head]), out])


# --- notebook 05: residual connections and depth ---------------------------------------------------

RESIDUAL_DEPTHS = (1, 2, 4, 8, 12, 16, 24, 32, 48)  # the depth slider's values


def residual_stack_gradient_norms(depth: int, residual: bool, *, width: int = 32, batch: int = 16,
                                  init: str = "default", layer_norm: bool = False, seed: int = 0) -> list:
    """Gradient norm of every layer's weight in a toy stack of ``tanh`` sublayers, at initialisation.

    Sublayer ``i`` is ``f_i(h) = tanh(W_i h + b_i)`` (with ``layer_norm``: ``tanh(W_i LN(h) + b_i)``).
    The stack computes ``h <- h + f_i(h)`` with ``residual`` and ``h <- f_i(h)`` without. The loss is
    ``sum(h_out * r)`` for a fixed random ``r``, so the gradient arriving at the top has the same size
    whatever the depth, and what happens to it on the way down is the stack's doing. Nothing is
    trained, and the global random state is left untouched.

    Args:
        depth: number of sublayers.
        residual: add the input back around each sublayer.
        width: features per vector.
        batch: number of random input vectors.
        init: ``"default"`` (``nn.Linear``'s own: uniform with std ``1/sqrt(3 width)``) or
            ``"unit"`` (normal with std ``1/sqrt(width)``, which keeps the variance of ``W h`` equal
            to that of ``h``).
        layer_norm: normalise the input of every sublayer (no learned gain, as at initialisation).
        seed: seed for the weights, the input and ``r``.

    Returns:
        ``depth`` floats: ``|dloss/dW_i|`` for layer 1 (closest to the input) up to layer ``depth``.
    """
    import torch
    import torch.nn.functional as F
    from torch import nn

    if init not in ("default", "unit"):
        raise ValueError(f"init must be 'default' or 'unit', got {init!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive int, got {depth!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers = [nn.Linear(width, width) for _ in range(depth)]
        if init == "unit":
            for layer in layers:
                nn.init.normal_(layer.weight, std=width ** -0.5)
        x = torch.randn(batch, width)  # (batch, width)
        r = torch.randn(batch, width)  # (batch, width): the fixed direction the loss measures
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: one thread is faster
    try:
        h = x
        for layer in layers:
            inp = F.layer_norm(h, (width,)) if layer_norm else h
            f = torch.tanh(layer(inp))  # (batch, width)
            h = h + f if residual else f
        (h * r).sum().backward()
        return [layer.weight.grad.norm().item() for layer in layers]
    finally:
        torch.set_num_threads(threads)


def residual_depth_view(depth: int = 12, residual: bool = True):
    """Gradient norm per layer of a toy ``tanh`` stack of ``depth`` layers, with or without residuals.

    The other setting (residual off when on, and vice versa) is drawn dashed for comparison.

    Returns:
        the matplotlib Figure.
    """
    from .plots import gradient_norm_per_layer

    norms = residual_stack_gradient_norms(depth, residual)
    other = residual_stack_gradient_norms(depth, not residual)
    return gradient_norm_per_layer(
        norms, residual, reference=other,
        reference_label="without residual" if residual else "with residual",
        title=f"{depth} tanh layers (width 32, torch's default init), at initialisation",
    )


def explore_residual_depth():
    """A depth slider and a residual on/off toggle, wired to :func:`residual_depth_view`."""
    import ipywidgets

    return ipywidgets.interactive(
        _intro_display(residual_depth_view),
        depth=ipywidgets.SelectionSlider(options=list(RESIDUAL_DEPTHS), value=12, description="layers",
                                         continuous_update=False),
        residual=ipywidgets.ToggleButtons(options=[("with residual", True), ("without", False)], value=True,
                                          description="residual"),
    )


# --- notebook 09: the cost of attention ------------------------------------------------------------

COST_LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
COST_D_MODELS = (384, 768, 1024)


def cost_view(seq_len: int = 512, d_model: int = 768):
    """Predicted FLOPs per component and score memory of one layer, with measured points at ``seq_len``.

    The layer has ``d_model / 64`` heads and ``d_ff = 4 d_model`` (BERT's proportions). The lines
    are :func:`encoder_course.layer_flops` and :func:`encoder_course.score_bytes`; the dots are
    torch's FLOP counter run on a real step-by-step layer (on the ``meta`` device: shapes only,
    so any L is instant) and the ``nbytes`` of score tensors of that shape (also on ``meta``).

    Returns:
        the matplotlib Figure.
    """
    import torch

    from . import plots
    from .cost import crossover_length, layer_flops, measured_layer_flops, score_bytes

    if seq_len not in COST_LENGTHS:
        raise ValueError(f"seq_len must be one of {COST_LENGTHS}, got {seq_len}")
    if d_model not in COST_D_MODELS:
        raise ValueError(f"d_model must be one of {COST_D_MODELS}, got {d_model}")
    n_heads, d_ff = d_model // 64, 4 * d_model
    lengths = [2**i for i in range(6, 16)]  # 64 ... 32768
    per_length = [layer_flops(L, d_model, d_ff) for L in lengths]
    formula = {key: [f[key] for f in per_length] for key in ("projections", "scores", "weighted_values", "ffn")}
    measured_at = measured_layer_flops(seq_len, d_model, n_heads, d_ff)
    kinds = {"one head, float16": (1, torch.float16), f"{n_heads} heads, float16": (n_heads, torch.float16),
             f"{n_heads} heads, float32": (n_heads, torch.float32)}
    memory = {label: [score_bytes(L, h, dtype=dt) for L in lengths] for label, (h, dt) in kinds.items()}
    memory_at = {label: torch.empty(1, h, seq_len, seq_len, dtype=dt, device="meta").nbytes
                 for label, (h, dt) in kinds.items()}
    f = layer_flops(seq_len, d_model, d_ff)
    share = (f["scores"] + f["weighted_values"]) / f["total"]
    fp16_all = memory_at[f"{n_heads} heads, float16"]
    title = (f"d_model {d_model}, {n_heads} heads, L = {seq_len}: {f['total'] / 1e9:,.1f} GFLOP per layer, "
             f"L² part {share:.0%}; float16 scores {fp16_all / 2**20:,.0f} MiB")
    return plots.cost_overview(seq_len, lengths, formula, measured_at, memory, memory_at,
                               crossover_length(d_model, d_ff), title)


def explore_cost():
    """A sequence-length slider and a width, wired to :func:`cost_view`."""
    import ipywidgets as W

    seq_len = W.SelectionSlider(options=COST_LENGTHS, value=512, description="L",
                                continuous_update=False)
    d_model = W.Dropdown(options=COST_D_MODELS, value=768, description="d_model")
    out = W.interactive_output(lambda seq_len, d_model: _show_figure(cost_view(seq_len, d_model)),
                               {"seq_len": seq_len, "d_model": d_model})
    return W.VBox([W.HBox([seq_len, d_model]), out])


# --- notebook 12: the self-check quiz --------------------------------------------------------------

def quiz_view(answers) -> dict:
    """Feedback for the quiz's answers, as HTML: one snippet per question and a score line.

    Args:
        answers: one option index or None per question (see :func:`encoder_course.quiz.grade_quiz`).

    Returns:
        ``{"feedback": [html for each question], "score": html}``.
    """
    import html

    from .quiz import grade_quiz

    results = grade_quiz(answers)
    colours = {"correct": "#1a7f37", "wrong": "#b42318", "unanswered": "#666666"}
    marks = {"correct": "✓ ", "wrong": "✗ ", "unanswered": ""}
    feedback = [
        f'<span style="color:{colours[item.status]}">{marks[item.status]}{html.escape(item.feedback)}</span>'
        for item in results.items
    ]
    return {"feedback": feedback, "score": f"<b>Score: {html.escape(results.summary())}</b>"}


def quiz():
    """The self-check quiz: pick an answer to each question and read the feedback at once.

    Returns:
        an ipywidgets ``VBox``; its ``.radios`` (one ``RadioButtons`` per question, value None until
        answered), ``.feedback`` (one ``HTML`` per question) and ``.score`` (an ``HTML``) are
        attributes, so the wiring is testable without a browser.
    """
    import ipywidgets as W

    from .quiz import QUESTIONS

    radios, feedback, rows = [], [], []
    for number, question in enumerate(QUESTIONS, start=1):
        radio = W.RadioButtons(options=[(text, i) for i, text in enumerate(question.options)],
                               value=None, layout=W.Layout(width="auto"))
        note = W.HTML(value="")
        radios.append(radio)
        feedback.append(note)
        rows.append(W.VBox([W.HTML(value=f"<b>{number}. {question.text}</b>"), radio, note]))
    score = W.HTML(value="")

    def refresh(_change=None):
        view = quiz_view([radio.value for radio in radios])
        for note, text in zip(feedback, view["feedback"]):
            note.value = text
        score.value = view["score"]

    for radio in radios:
        radio.observe(refresh, names="value")
    refresh()
    box = W.VBox([*rows, score])
    box.radios, box.feedback, box.score = radios, feedback, score
    return box
