"""How the gradient flows through a deep stack at initialisation (notebooks 05 and 07).

- :func:`residual_stack_gradient_norms` (notebook 05): a toy stack of ``tanh`` sublayers, with and
  without residual paths.
- :func:`norm_placement_profile` (notebook 07): a stack of real encoder blocks, post-LN or pre-LN;
  :func:`mean_placement_profile` averages it over several random stacks (one stack's per-layer
  profile is noisy), :func:`last_over_first_over_stacks` shows how much the last layer's gradient
  over the first's varies between stacks (for the whole layer and for its parts), and
  :func:`stream_gradient_tracking` compares each layer's gradient with the gradient on the residual
  stream at its output.

Nothing is trained: both measure the network at step 0, and leave the global random state untouched.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..block import EncoderBlock
from ..layer_norm import LayerNorm


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
        ``{"grad_norm", "ffn_w2_grad_norm", "norm_grad_norm": [depth floats],
        "stream_std", "stream_grad_norm": [depth + 1 floats]}``:
        the norm of the gradient of each layer's parameters (layer 1 first); the same for the FFN's
        second weight matrix alone (``ffn.w2.weight``, the ``W^{2,l}`` whose gradient Xiong et al.
        analyse) and for the layer's two LayerNorms alone; the standard deviation of the residual
        stream entering layer 1 and leaving each layer; and the norm of the loss's gradient with
        respect to the residual stream at those same places.
    """
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
        x.requires_grad_(True)  # to read the gradient on the stream entering layer 1
        stream = [x]
        for layer in layers:
            x = layer(x)  # (B, L, d_model)
            x.retain_grad()
            stream.append(x)
        stream_std = [h.std().item() for h in stream]
        if final_norm is not None:
            x = final_norm(x)
        loss = ((x - target) ** 2).mean()
        loss.backward()
        stream_grad_norm = [h.grad.norm().item() for h in stream]
        grad_norm = [torch.sqrt(sum((p.grad ** 2).sum() for p in layer.parameters())).item()
                     for layer in layers]
        ffn_w2_grad_norm = [layer.ffn.w2.weight.grad.norm().item() for layer in layers]
        norm_grad_norm = [torch.sqrt(sum((p.grad ** 2).sum() for norm in (layer.norm1, layer.norm2)
                                         for p in norm.parameters())).item() for layer in layers]
    finally:
        torch.set_num_threads(threads)
    return {"grad_norm": grad_norm, "ffn_w2_grad_norm": ffn_w2_grad_norm, "norm_grad_norm": norm_grad_norm,
            "stream_std": stream_std, "stream_grad_norm": stream_grad_norm}


def mean_placement_profile(norm_first: bool, depth: int, *, stacks: int = 5, **kwargs) -> dict:
    """:func:`norm_placement_profile` averaged, layer by layer, over ``stacks`` random stacks.

    One stack's per-layer gradient norms are noisy (in a 24-layer post-LN stack the last layer's
    gradient over the first's ranges from about 0.5 to almost 5 over seeds 0 to 19, see
    :func:`last_over_first_over_stacks`), so statements about the *shape* of the profile use the mean
    of several stacks, built with seeds 0, 1, ..., ``stacks - 1``.

    Args:
        norm_first: False for post-LN, True for pre-LN.
        depth: number of layers.
        stacks: how many random stacks to average.
        **kwargs: passed on to :func:`norm_placement_profile` (``d_model``, ``init``, ...; not ``seed``).

    Returns:
        the same keys as :func:`norm_placement_profile`, each the per-layer mean; ``"stacks"``; and
        ``"runs"``: the profile of each single stack (seed 0 first), to show the spread behind the mean.
    """
    if isinstance(stacks, bool) or not isinstance(stacks, int) or stacks < 1:
        raise ValueError(f"stacks must be a positive int, got {stacks!r}")
    if "seed" in kwargs:
        raise TypeError("mean_placement_profile uses the seeds 0 .. stacks - 1; pass stacks, not seed")
    runs = [norm_placement_profile(norm_first, depth, seed=seed, **kwargs) for seed in range(stacks)]
    mean = {key: [sum(values) / stacks for values in zip(*(run[key] for run in runs))] for key in runs[0]}
    return {**mean, "stacks": stacks, "runs": runs}


def last_over_first_over_stacks(norm_first: bool, depth: int, *, stacks: int = 20, **kwargs) -> dict:
    """How much the last layer's gradient over the first layer's varies between random stacks.

    The ratio is taken stack by stack, for the whole layer and for three parts of it: the attention
    and FFN weights (every parameter but the two LayerNorms', ``sqrt(grad_norm^2 - norm_grad_norm^2)``
    of each stack), the FFN's ``W_2`` alone and the two LayerNorms alone.

    Args:
        norm_first: False for post-LN, True for pre-LN.
        depth: number of layers.
        stacks: how many random stacks (seeds 0 .. stacks - 1).
        **kwargs: passed on to :func:`norm_placement_profile` (not ``seed``).

    Returns:
        ``{"ratios", "weights_ratios", "ffn_w2_ratios", "norm_ratios": [stacks floats],
        "ratio_of_means": float}``: last layer over first layer of each stack, for the whole layer
        (``grad_norm[-1] / grad_norm[0]``), the attention and FFN weights, ``W_2`` and the LayerNorms;
        and the whole layer's ratio for the profile averaged over all the stacks (what
        :func:`mean_placement_profile` with these ``stacks`` gives).
    """
    if isinstance(stacks, bool) or not isinstance(stacks, int) or stacks < 1:
        raise ValueError(f"stacks must be a positive int, got {stacks!r}")
    if "seed" in kwargs:
        raise TypeError("last_over_first_over_stacks uses the seeds 0 .. stacks - 1; pass stacks, not seed")
    runs = [norm_placement_profile(norm_first, depth, seed=seed, **kwargs) for seed in range(stacks)]

    def ratio(values):
        return values[-1] / values[0]

    def weights(run):  # every parameter of the layer but its LayerNorms', per layer, in this stack
        return [math.sqrt(max(g**2 - n**2, 0.0)) for g, n in zip(run["grad_norm"], run["norm_grad_norm"])]

    first = sum(run["grad_norm"][0] for run in runs) / stacks
    last = sum(run["grad_norm"][-1] for run in runs) / stacks
    return {"ratios": [ratio(run["grad_norm"]) for run in runs],
            "weights_ratios": [ratio(weights(run)) for run in runs],
            "ffn_w2_ratios": [ratio(run["ffn_w2_grad_norm"]) for run in runs],
            "norm_ratios": [ratio(run["norm_grad_norm"]) for run in runs],
            "ratio_of_means": last / first}


def stream_gradient_tracking(profile: dict) -> dict:
    """How the gradient on the residual stream changes with depth, and how closely each layer's gradient follows it.

    Args:
        profile: a result of :func:`norm_placement_profile` or :func:`mean_placement_profile`.

    Returns:
        ``{"growth": float, "correlation": float}``: the norm of the gradient on the stream leaving
        layer 1 divided by that on the stream leaving the last layer (above 1: larger towards the
        input), and Pearson's correlation, over the layers, between each layer's parameter gradient
        norm and the stream's gradient norm at that layer's output.
    """
    grads, stream = profile["grad_norm"], profile["stream_grad_norm"][1:]
    if len(grads) < 2 or len(grads) != len(stream):
        raise ValueError(f"expected a profile of at least 2 layers with one stream gradient per layer, got "
                         f"{len(grads)} layer gradients and {len(stream)} stream gradients")
    mean_g, mean_s = sum(grads) / len(grads), sum(stream) / len(stream)
    cov = sum((g - mean_g) * (s - mean_s) for g, s in zip(grads, stream))
    spread_g = math.sqrt(sum((g - mean_g) ** 2 for g in grads))
    spread_s = math.sqrt(sum((s - mean_s) ** 2 for s in stream))
    return {"growth": stream[0] / stream[-1], "correlation": cov / (spread_g * spread_s)}
