"""How many operations must run one after another: a recurrence against attention (notebook 02).

A recurrent network computes its state at position t from its state at t - 1, so its L steps form a
chain: the last output cannot start before every earlier one has finished, however many processors
there are. Self-attention computes every position's output from the same few matrix products. The
2017 paper makes this comparison in its section 4 ("Why Self-Attention", Table 1: O(n) sequential
operations for a recurrent layer, O(1) for self-attention). :func:`sequential_depth` measures it on
the operations autograd records: the longest chain of them in which each needs the one before.
"""

from __future__ import annotations

import math

import torch

from ..attention import scaled_dot_product_attention


def sequential_depth(output: torch.Tensor) -> int:
    """The longest chain of recorded operations, each needing the result of the one before, behind ``output``.

    Walks autograd's graph from ``output.grad_fn`` back to the inputs; every node is one operation
    (a matrix product, an addition, a ``tanh``, ...). Only operations on tensors that require grad are
    recorded, so give the inputs ``requires_grad=True``.

    Args:
        output: a tensor computed with autograd recording.

    Returns:
        the number of operations on the longest path from an input to ``output`` (0 for a leaf).
    """
    if not isinstance(output, torch.Tensor):
        raise TypeError(f"output must be a torch.Tensor, got {type(output).__name__}")
    if output.grad_fn is None:
        return 0
    depth: dict = {}
    stack = [(output.grad_fn, False)]
    while stack:  # an explicit stack: a long recurrence is deeper than Python's recursion limit
        node, children_done = stack.pop()
        if node in depth:
            continue
        children = [child for child, _ in node.next_functions if child is not None]
        if children_done:
            # AccumulateGrad stands for an input (a leaf), not for an operation on one.
            own = 0 if type(node).__name__ == "AccumulateGrad" else 1
            depth[node] = own + max((depth[child] for child in children), default=0)
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in children if child not in depth)
    return depth[output.grad_fn]


def recurrence_and_attention_depth(lengths, *, d_model: int = 16, seed: int = 0) -> dict:
    """:func:`sequential_depth` of a plain recurrent layer and of one self-attention layer, for each length.

    The recurrence is ``h_t = tanh(h_{t-1} W_h + x_t W_x)`` from ``h_0 = 0`` (an Elman RNN), the outputs
    ``h_1 .. h_L`` stacked. The attention is ``softmax(Q K^T / sqrt(d_model)) V`` with ``Q, K, V`` computed
    from the same ``x``. Both read the same random input ``(L, d_model)``; the global random state is
    left untouched.

    Args:
        lengths: sequence lengths L to measure.
        d_model: width of the input and of the state.
        seed: seed for the weights and the input.

    Returns:
        ``{"lengths": [...], "recurrence": [...], "attention": [...]}``: the depth of each, per length.
    """
    lengths = [int(n) for n in lengths]
    if not lengths or any(n < 1 for n in lengths):
        raise ValueError(f"lengths must be positive ints, got {lengths!r}")
    generator = torch.Generator().manual_seed(seed)
    w_h, w_x, w_q, w_k, w_v = (torch.randn(d_model, d_model, generator=generator) / math.sqrt(d_model)
                               for _ in range(5))
    result = {"lengths": lengths, "recurrence": [], "attention": []}
    for n in lengths:
        x = torch.randn(n, d_model, generator=generator, requires_grad=True)  # (L, d_model)
        h = torch.zeros(d_model)  # (d_model,)
        states = []
        for t in range(n):  # each step needs the state of the step before
            h = torch.tanh(h @ w_h + x[t] @ w_x)  # (d_model,)
            states.append(h)
        result["recurrence"].append(sequential_depth(torch.stack(states)))  # (L, d_model)
        out, _ = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)  # (L, d_model)
        result["attention"].append(sequential_depth(out))
    return result
