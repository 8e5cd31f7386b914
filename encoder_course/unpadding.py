"""Unpadding: a batch's real tokens packed into one sequence, so no work is spent on padding.

A padded batch ``(B, L)`` computes every layer for ``B * L`` positions, padding included. Everything in a
layer except attention works on one token at a time (the projections, the feed-forward network, the norms),
so it can run on the ``T`` real tokens alone, packed one sentence after another into ``(1, T, d_model)``.
Attention must stay within each sentence: the packed sequence's attention is block-diagonal, one block per
sentence. :class:`Packed` describes the packing, the sentences of one length side by side;
:func:`packed_attention` attends within each sentence, the sentences of one length together (a loop over
lengths: GPUs do it in one kernel, ``flash_attn_varlen``, that reads the sentences' offsets); :func:`pack` and
:func:`unpack` move between the two layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch

from ._validate import shape_str


@dataclass(frozen=True)
class Packed:
    """Where a padded batch's real tokens sit once packed.

    Attributes:
        index: ``(T,)`` long, each real token's flat position ``b * L + j`` in the padded batch, sentence by
            sentence, the sentences of one length side by side (in the order of :attr:`groups`).
        positions: ``(T,)`` long, each real token's position ``j`` in its own row (what rotary positions and
            windows measure offsets with, so the packed path computes what the padded one does).
        lengths: the number of real tokens of each sentence of the batch, in the batch's order (``T = sum(lengths)``).
        batch, length: the padded batch's ``(B, L)``.
        groups: the sentences that attention can take together: ``(start, count, n, contiguous)`` per group,
            ``count`` sentences of ``n`` tokens each, packed one after another from ``start`` (their real tokens
            side by side in their rows when ``contiguous``; a sentence with padding between its tokens is a group
            of its own).
        window: the ``(L, L)`` window mask of the padded layout for local attention, or None for global attention.
    """

    index: torch.Tensor
    positions: torch.Tensor
    lengths: tuple[int, ...]
    batch: int
    length: int
    groups: tuple = field(default=(), compare=False, repr=False)
    window: torch.Tensor | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_mask(cls, real: torch.Tensor) -> "Packed":
        """The packing of a ``(B, L)`` bool mask, True at real tokens."""
        if not isinstance(real, torch.Tensor) or real.dtype != torch.bool or real.dim() != 2:
            raise ValueError(f"unpadding needs a (B, L) bool mask of the real tokens, got {shape_str(real)}")
        batch, length = real.shape
        in_row = real.reshape(-1).nonzero().squeeze(1)  # (T,): the real tokens, in the batch's order
        lengths = real.sum(dim=1).tolist()
        flat, first = in_row.tolist(), 0  # read once: a GPU is not waited for sentence by sentence
        by_key: dict = {}  # (n, True) for sentences without padding between their tokens, else one group each
        for b, (tokens, n) in enumerate(zip(in_row.split(lengths), lengths)):  # each sentence's flat positions
            if n:
                contiguous = flat[first + n - 1] - flat[first] == n - 1
                by_key.setdefault((n, True) if contiguous else (n, False, b), []).append(tokens)
            first += n
        groups, start = [], 0
        for key, sentences in by_key.items():  # the sentences of one group side by side
            groups.append((start, len(sentences), key[0], key[1]))
            start += len(sentences) * key[0]
        index = torch.cat([t for sentences in by_key.values() for t in sentences]) if by_key else in_row  # (T,)
        return cls(index=index, positions=index % length, lengths=tuple(lengths), batch=batch, length=length,
                   groups=tuple(groups))

    @property
    def tokens(self) -> int:
        """``T``, the number of real tokens."""
        return int(self.index.numel())

    def with_window(self, table: torch.Tensor | None) -> "Packed":
        """The same packing with local attention: ``table`` is the ``(L, L)`` window mask of the padded layout
        (``sliding_window_mask(L, window)``); None for global attention."""
        return replace(self, window=table)

    def group_window(self, start: int, n: int, contiguous: bool) -> torch.Tensor | None:
        """The ``(n, n)`` window of the group packed from ``start`` (None for global attention). A window depends
        on the offsets between positions only, so sentences whose tokens sit side by side share the first ``n``
        rows."""
        if self.window is None:
            return None
        if contiguous:
            return self.window[:n, :n]
        pos = self.positions[start:start + n]  # a group of one sentence
        return self.window[pos][:, pos]

    def dense_mask(self) -> torch.Tensor:
        """The packed sequence's whole mask, ``(1, 1, T, T)``: True within a sentence (and its window).

        For an attention module that only takes a mask: the same numbers as :func:`packed_attention`, but
        it computes all ``T x T`` scores, so it is slower than the padded path, not faster.
        """
        sentence = self.index // self.length  # (T,): each token's row in the padded batch
        allowed = sentence[:, None] == sentence[None, :]  # (T, T)
        if self.window is not None:
            allowed = allowed & self.window[self.positions][:, self.positions]
        return allowed[None, None]  # (1, 1, T, T)


def real_tokens(mask: torch.Tensor | None, batch: int, length: int) -> torch.Tensor:
    """The ``(B, L)`` real-token mask behind an encoder's padding mask: a ``(B, L)`` or ``(B, 1, 1, L)`` mask,
    or None (every token real). A mask over (query, key) pairs cannot be unpadded: it raises."""
    if mask is None:
        return torch.ones(batch, length, dtype=torch.bool)
    if mask.dim() == 4 and mask.shape[1] == 1 and mask.shape[2] == 1:
        mask = mask[:, 0, 0, :]  # (B or 1, L)
    if mask.dim() != 2:
        raise ValueError(f"unpadding needs a padding mask, (B, L) or (B, 1, 1, L), got {shape_str(mask)}: a mask "
                         "over (query, key) pairs has no packed form; give unpad=False for it")
    return mask.expand(batch, length)  # (B, L)


def pack(x: torch.Tensor, packed: Packed) -> torch.Tensor:
    """The real tokens of ``x``, packed.

    Shape:
        ``x`` ``(B, L, d)`` -> ``(1, T, d)``.
    """
    return x.reshape(-1, x.shape[-1])[packed.index][None]  # (1, T, d)


def unpack(x: torch.Tensor, packed: Packed) -> torch.Tensor:
    """Back to the padded layout, zeros at the padding.

    Shape:
        ``x`` ``(1, T, d)`` -> ``(B, L, d)``.
    """
    d = x.shape[-1]
    out = x.new_zeros(packed.batch * packed.length, d)  # (B * L, d)
    out = out.index_copy(0, packed.index, x[0])  # differentiable, unlike an in-place write
    return out.view(packed.batch, packed.length, d)  # (B, L, d)


def packed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, packed: Packed, attend) -> torch.Tensor:
    """Attention within each sentence of a packed sequence, sentences of one length together.

    The sentences of each length (:attr:`Packed.groups`) sit side by side in the packed sequence: each group is a
    slice, viewed as a batch ``(count, H, n, d_head)`` and attended in one call. Within a group there is no
    padding.

    Args:
        q, k, v: the packed sequence's queries, keys and values.
        packed: the packing (and its window, for local attention).
        attend: ``attend(q, k, v, mask) -> out`` for a batch of sentences of one length (``mask`` None or ``(n, n)``).

    Shape:
        ``q``, ``k``, ``v`` ``(1, H, T, d_head)``; returns ``(1, H, T, d_head)``.
    """
    outs = []
    for start, count, n, contiguous in packed.groups:
        take = [x[0, :, start:start + count * n].unflatten(1, (count, n)).transpose(0, 1) for x in (q, k, v)]
        out = attend(*take, packed.group_window(start, n, contiguous))  # (count, H, n, d_v)
        outs.append(out.transpose(0, 1).flatten(1, 2))  # (H, count * n, d_v)
    if not outs:  # no real token at all
        return v.new_zeros(v.shape)
    return torch.cat(outs, dim=1)[None]  # (1, H, T, d_v)
