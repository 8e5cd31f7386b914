"""A small training toolkit: a synthetic task that needs attention, a token classifier, a train loop.

The task (:class:`FrequencyTask`): every token of a sequence is labelled with how many times its
own symbol occurs in that sequence (1, 2, ..., with the last class meaning "K or more"). A token's
label depends on the whole sequence, so a model that looks at each token on its own (an FFN, or
any per-token classifier) cannot do better than guess from the token id and its position; a model
that attends can count matching symbols. Sequences have varied lengths and are padded with
``pad_id`` 0, so the padding mask matters.

After training, :func:`attention_maps` takes the attention weights out of a classifier's encoder (the
course's or the learner's) and :func:`attention_by_symbol` measures how they depend on the symbols.

Everything is seeded: the same seed gives the same data, the same initial weights and the same
loss curve on the same machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .._validate import (
    require_positive_int,
    require_positive_number,
    require_rank,
    require_token_ids,
    require_token_loss_inputs,
    shape_str,
)
from ..attention import scaled_dot_product_attention
from ..encoder import Encoder, EncoderConfig
from ..masks import padding_mask
from ..multi_head import split_heads

IGNORE_INDEX = -100  # label of padding positions: skipped by the loss and by the accuracy

# How the course's training loops ask for Adam (and AdamW): one update for all the parameters, never PyTorch's
# default loop over them on a CPU. From torch 2.4 the fused update does each parameter in one pass; measured on
# 2 cores (Xeon, one thread), a step took 1.3 ms against 3.6 ms for foreach (one operation over the list of
# parameters) and 5.6 ms for the loop for notebook 10's 6-layer models, and 33 against 120-150 ms (foreach) for
# MiniLM's 22.6 M parameters. The numbers differ from the loop's in rounding only.
def adam_options(version: str = torch.__version__) -> dict:
    """``{"fused": True}`` where torch ``version`` fuses Adam's update on a CPU (2.4 and later), else
    ``{"foreach": True}``."""
    return {"fused": True} if torch.torch_version.TorchVersion(version) >= "2.4" else {"foreach": True}


FAST_ADAM = adam_options()


# ----------------------------------------------------------------------------------- the task
def frequency_labels(token_ids: torch.Tensor, n_classes: int, pad_id: int = 0) -> torch.Tensor:
    """Label each real token with how often its symbol occurs in its own sequence.

    Class ``c`` (0-based) means "the symbol occurs ``c + 1`` times"; the last class means
    "``n_classes`` times or more". Padding positions get :data:`IGNORE_INDEX`.

    Shape:
        ``token_ids`` ``(B, L)``; returns int64 ``(B, L)``.
    """
    require_token_ids("token_ids", token_ids)
    require_positive_int("n_classes", n_classes)
    real = token_ids != pad_id  # (B, L)
    same = token_ids[:, :, None] == token_ids[:, None, :]  # (B, L, L): symbol i equals symbol j
    counts = (same & real[:, None, :]).sum(dim=-1)  # (B, L): occurrences among real tokens
    labels = counts.clamp(max=n_classes) - 1  # (B, L), class 0 = "once"
    return labels.masked_fill(~real, IGNORE_INDEX).long()


def pad_sequences(sequences, length: int | None = None, pad_id: int = 0) -> torch.Tensor:
    """Right-pad lists of token ids to one length (the longest, or ``length``).

    Shape:
        returns int64 ``(B, length)``.
    """
    sequences = [list(map(int, s)) for s in sequences]
    if not sequences:
        raise ValueError("need at least one sequence to pad")
    longest = max(len(s) for s in sequences)
    length = longest if length is None else length
    if length < longest:
        raise ValueError(f"length ({length}) is shorter than the longest sequence ({longest})")
    out = torch.full((len(sequences), length), pad_id, dtype=torch.long)
    for row, seq in enumerate(sequences):
        out[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return out


@dataclass(frozen=True)
class FrequencyTask:
    """Token classification: how often does this token's symbol occur in its sequence?

    Args:
        n_symbols: distinct symbols; they get the token ids ``1..n_symbols`` (0 is padding).
        n_classes: classes "1, 2, ..., n_classes or more" occurrences.
        min_len: shortest sequence (real tokens).
        max_len: longest sequence (real tokens).
        pad_id: the padding id (0).
    """

    n_symbols: int = 6
    n_classes: int = 4
    min_len: int = 4
    max_len: int = 16
    pad_id: int = 0

    def __post_init__(self):
        for name in ("n_symbols", "n_classes", "min_len", "max_len"):
            require_positive_int(name, getattr(self, name))
        if self.min_len > self.max_len:
            raise ValueError(f"min_len ({self.min_len}) must be <= max_len ({self.max_len})")
        if self.pad_id != 0:
            raise ValueError(f"the task's symbols are 1..n_symbols, so pad_id must be 0, got {self.pad_id}")

    @property
    def vocab_size(self) -> int:
        """Number of token ids, padding included."""
        return self.n_symbols + 1

    def sequences(self, n: int, generator: torch.Generator) -> list[list[int]]:
        """``n`` random unpadded sequences with lengths uniform in ``[min_len, max_len]``."""
        lengths = torch.randint(self.min_len, self.max_len + 1, (n,), generator=generator)
        symbols = torch.randint(1, self.n_symbols + 1, (n, self.max_len), generator=generator)
        return [symbols[i, : int(lengths[i])].tolist() for i in range(n)]

    def batch(self, n: int, generator: torch.Generator, pad_to: int | None = None):
        """A padded batch ``(token_ids, labels)``, padded to its longest sequence or to ``pad_to``.

        Shape:
            both int64 ``(n, L)``; labels are :data:`IGNORE_INDEX` at padding.
        """
        ids = pad_sequences(self.sequences(n, generator), pad_to, self.pad_id)  # (n, L)
        return ids, self.labels(ids)

    def labels(self, token_ids: torch.Tensor) -> torch.Tensor:
        """The labels of padded token ids (see :func:`frequency_labels`)."""
        return frequency_labels(token_ids, self.n_classes, self.pad_id)


def majority_baseline(labels: torch.Tensor) -> float:
    """Accuracy of always predicting the most common class, over real tokens only."""
    real = labels[labels != IGNORE_INDEX]
    if real.numel() == 0:
        raise ValueError("no real (non-padding) tokens in labels")
    return real.bincount().max().item() / real.numel()


def best_without_attention(token_ids: torch.Tensor, labels: torch.Tensor) -> float:
    """Accuracy of the best lookup table from (position, symbol) to class, fitted on these data.

    A model that never looks at the other tokens (an FFN on each token's embedding plus position)
    can do no better than such a table; fitting and scoring on the same data makes this an
    optimistic bound for it.

    Shape:
        ``token_ids`` and ``labels`` ``(B, L)``.
    """
    table = _position_symbol_counts(token_ids, labels)  # (cells, C)
    return table.max(dim=1).values.sum().item() / table.sum().item()  # the best table: each cell's largest class


def _position_symbol_counts(token_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """How often each class labels each (position, symbol) cell, over the real tokens: ``(L * symbols, C)``."""
    real = labels != IGNORE_INDEX  # (B, L)
    if not real.any():
        raise ValueError("no real (non-padding) tokens in labels")
    positions = torch.arange(token_ids.shape[1]).expand_as(token_ids)  # (B, L)
    n_classes = int(labels[real].max()) + 1
    n_symbols = int(token_ids.max()) + 1
    cell = (positions[real] * n_symbols + token_ids[real]) * n_classes + labels[real]  # (N,)
    return cell.bincount(minlength=token_ids.shape[1] * n_symbols * n_classes).view(-1, n_classes)


def loss_without_attention(token_ids: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    """The lowest mean cross-entropy (nats per real token) two models without attention can reach.

    ``"class_frequencies"``: a model that always answers the class frequencies (the entropy of the
    labels). ``"per_token"``: the best table from (position, symbol) to class probabilities, the loss
    counterpart of :func:`best_without_attention` (fitted and scored on these data, so optimistic).
    A training loss below ``"per_token"`` means the model uses the other tokens of its sequence.

    Shape:
        ``token_ids`` and ``labels`` ``(B, L)``.
    """
    table = _position_symbol_counts(token_ids, labels).double()  # (cells, C): counts

    def entropy(counts: torch.Tensor) -> float:  # counts (rows, C) -> mean -log p of the row's own class
        p = counts / counts.sum(-1, keepdim=True).clamp(min=1)
        return -(counts * p.clamp(min=1e-300).log()).sum().item() / counts.sum().item()

    return {"class_frequencies": entropy(table.sum(0, keepdim=True)), "per_token": entropy(table)}


# ---------------------------------------------------------------------------------- the model
class TokenClassifier(nn.Module):
    """An :class:`Encoder` with a linear head that classifies every token.

    Args:
        config: the encoder's hyperparameters.
        n_classes: number of classes.
        encoder_class: what builds the encoder from ``config`` (default :class:`Encoder`); any
            class with its interface, such as the learner's ``yours.build_encoder`` (notebook 10).

    Shape:
        ``token_ids`` ``(B, L)``; returns logits ``(B, L, n_classes)``.
    """

    def __init__(self, config: EncoderConfig, n_classes: int, encoder_class=None):
        super().__init__()
        require_positive_int("n_classes", n_classes)
        self.config = config
        self.encoder = (Encoder if encoder_class is None else encoder_class)(config)
        self.head = nn.Linear(config.d_model, n_classes)

    def forward(self, token_ids: torch.Tensor, use_mask: bool = True) -> torch.Tensor:
        """Classify every token; ``use_mask=False`` lets real tokens attend to padding (the bug)."""
        mask = padding_mask(token_ids, self.config.pad_id) if use_mask else None  # (B, 1, 1, L)
        hidden = self.encoder(token_ids, mask)  # (B, L, d_model)
        return self.head(hidden)  # (B, L, n_classes)


def make_model(task: FrequencyTask, *, d_model: int = 64, n_heads: int = 4, d_ff: int = 128,
               n_layers: int = 2, norm_first: bool = False, max_len: int = 128,
               dropout: float = 0.0, seed: int = 0, encoder_class=None) -> TokenClassifier:
    """A seeded :class:`TokenClassifier` sized for ``task`` (small enough to train on a CPU).

    ``encoder_class`` builds the encoder from the configuration (default :class:`Encoder`).
    """
    config = EncoderConfig(vocab_size=task.vocab_size, max_len=max_len, d_model=d_model,
                           n_heads=n_heads, d_ff=d_ff, n_layers=n_layers, dropout=dropout,
                           norm_first=norm_first, activation="gelu", positions="sinusoidal",
                           pad_id=task.pad_id)
    torch.manual_seed(seed)
    return TokenClassifier(config, task.n_classes, encoder_class=encoder_class)


# ------------------------------------------------------------------------------- evaluation
def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of real tokens classified correctly; padding positions are not counted.

    Shape:
        ``logits`` ``(B, L, C)``, ``labels`` ``(B, L)`` with :data:`IGNORE_INDEX` at padding.
    """
    if logits.shape[:-1] != labels.shape:
        raise ValueError(f"logits {shape_str(logits)} and labels {shape_str(labels)} do not match")
    real = labels != IGNORE_INDEX  # (B, L)
    if not real.any():
        raise ValueError("no real (non-padding) tokens in labels")
    correct = (logits.argmax(dim=-1) == labels) & real  # (B, L)
    return correct.sum().item() / real.sum().item()


@torch.no_grad()
def predict(model: TokenClassifier, token_ids: torch.Tensor, use_mask: bool = True) -> torch.Tensor:
    """Predicted class of every position (padding included), in eval mode.

    Shape:
        ``(B, L)`` -> int64 ``(B, L)``.
    """
    was_training = model.training
    model.eval()
    try:
        return model(token_ids, use_mask=use_mask).argmax(dim=-1)  # (B, L)
    finally:
        model.train(was_training)


@torch.no_grad()
def evaluate(model: TokenClassifier, token_ids: torch.Tensor, labels: torch.Tensor,
             use_mask: bool = True) -> float:
    """Accuracy on real tokens, in eval mode (dropout off)."""
    was_training = model.training
    model.eval()
    try:
        return accuracy(model(token_ids, use_mask=use_mask), labels)
    finally:
        model.train(was_training)


# -------------------------------------------------------------------------------- training
def warmup_factor(step: int, warmup_steps: int) -> float:
    """Learning-rate multiplier: linear from ``1/warmup_steps`` up to 1, then constant 1."""
    if warmup_steps <= 0:
        return 1.0
    return min(1.0, (step + 1) / warmup_steps)


@dataclass
class TrainResult:
    """What :func:`train` records.

    Attributes:
        loss: training loss (mean cross-entropy over real tokens) at every step.
        lr: learning rate used at every step.
        eval_steps: steps after which the validation accuracy was measured.
        eval_accuracy: validation accuracy on real tokens at those steps.
    """

    loss: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_accuracy: list[float] = field(default_factory=list)

    @property
    def final_accuracy(self) -> float:
        """The last measured validation accuracy."""
        return self.eval_accuracy[-1] if self.eval_accuracy else float("nan")

    def final_loss(self, last: int = 20) -> float:
        """Mean training loss over the last ``last`` steps (smooths the step-to-step noise)."""
        tail = self.loss[-last:]
        return sum(tail) / len(tail) if tail else float("nan")


def train(model: TokenClassifier, task: FrequencyTask, *, steps: int = 300, batch_size: int = 32,
          lr: float = 1e-3, warmup_steps: int = 0, use_mask: bool = True, seed: int = 0,
          eval_data: tuple[torch.Tensor, torch.Tensor] | None = None, eval_every: int = 50,
          grad_clip: float | None = None, loss_fn=None) -> TrainResult:
    """Train ``model`` on fresh batches of ``task`` with Adam and an optional linear warmup.

    Args:
        model: the classifier (trained in place).
        task: where the batches come from.
        steps: optimiser steps.
        batch_size: sequences per step, padded to the longest one in the batch.
        lr: peak learning rate (reached after the warmup, then kept constant).
        warmup_steps: linear warmup length; 0 for none.
        use_mask: pass the padding mask to the encoder (False reproduces the padding bug).
        seed: seeds the batches (the model's weights are seeded in :func:`make_model`).
        eval_data: ``(token_ids, labels)`` to measure accuracy on; none if omitted.
        eval_every: measure every this many steps (and after the last step).
        grad_clip: clip the global gradient norm to this value; None for no clipping.
        loss_fn: ``loss_fn(logits, labels, mask)``, the mean loss over real tokens (``mask`` True),
            as :func:`masked_token_loss`; by default ``F.cross_entropy`` with ``ignore_index``,
            which computes the same.

    Returns:
        a :class:`TrainResult` with the loss at every step and the accuracy curve.
    """
    require_positive_int("steps", steps)
    require_positive_int("batch_size", batch_size)
    require_positive_int("eval_every", eval_every)
    require_positive_number("lr", lr)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, **FAST_ADAM)  # one update for all (FAST_ADAM)
    result = TrainResult()
    model.train()
    for step in range(steps):
        current_lr = lr * warmup_factor(step, warmup_steps)
        for group in optimizer.param_groups:
            group["lr"] = current_lr
        ids, labels = task.batch(batch_size, generator)  # (B, L), (B, L)
        logits = model(ids, use_mask=use_mask)  # (B, L, C)
        if loss_fn is None:
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX)
        else:
            loss = loss_fn(logits, labels, labels != IGNORE_INDEX)  # mask (B, L): True = real token
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        value = loss.item()
        result.loss.append(value if math.isfinite(value) else float("nan"))
        result.lr.append(current_lr)
        if eval_data is not None and ((step + 1) % eval_every == 0 or step + 1 == steps):
            result.eval_steps.append(step + 1)
            result.eval_accuracy.append(evaluate(model, *eval_data, use_mask=use_mask))
    model.eval()
    return result


def masked_token_loss(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean cross-entropy over the real tokens only: padding neither adds to the sum nor to the count.

    Args:
        logits: the classifier's scores at every position.
        labels: the class of every position; those of padding positions are never read (any value,
            :data:`IGNORE_INDEX` in :class:`FrequencyTask`'s batches).
        mask: bool, True = real token.

    Shape:
        ``logits`` ``(B, L, C)``, ``labels`` int ``(B, L)``, ``mask`` ``(B, L)``; returns a 0-d tensor.
    """
    require_token_loss_inputs(logits, labels, mask)
    return F.cross_entropy(logits[mask], labels[mask])  # (N, C) and (N,): the N real tokens


# ------------------------------------------------------------------ what the trained model attends to
@torch.no_grad()
def attention_maps(model: TokenClassifier, token_ids: torch.Tensor, use_mask: bool = True) -> list[torch.Tensor]:
    """The attention weights of every layer of a classifier's encoder, one ``(B, H, L, L)`` per layer.

    Works for any encoder whose layers hold their attention as ``attn`` with ``w_q`` and ``w_k`` (the
    course's :class:`Encoder` and the learner's ``yours.build_encoder`` alike): a hook on each ``attn`` takes the
    input it receives in a forward pass, and the weights are ``softmax(q k^T / sqrt(d_head))`` with the
    padding mask (True = may attend) when ``use_mask``. Runs in eval mode (no dropout).

    Shape:
        ``token_ids`` ``(B, L)``; returns ``n_layers`` tensors ``(B, H, L, L)``, rows = queries.
    """
    require_token_ids("token_ids", token_ids)
    inputs, hooks = [], []

    def keep_input(module, args, kwargs):
        inputs.append(args[0] if args else next(iter(kwargs.values())))  # (B, L, d_model)

    for layer in model.encoder.layers:
        hooks.append(layer.attn.register_forward_pre_hook(keep_input, with_kwargs=True))
    was_training = model.training
    model.eval()
    try:
        model(token_ids, use_mask=use_mask)
    finally:
        for hook in hooks:
            hook.remove()
        model.train(was_training)
    mask = padding_mask(token_ids, model.config.pad_id) if use_mask else None  # (B, 1, 1, L)
    maps = []
    for layer, x in zip(model.encoder.layers, inputs):
        q = split_heads(layer.attn.w_q(x), model.config.n_heads)  # (B, H, L, d_head)
        k = split_heads(layer.attn.w_k(x), model.config.n_heads)  # (B, H, L, d_head)
        maps.append(scaled_dot_product_attention(q, k, k, mask)[1])  # (B, H, L, L); the values do not matter
    return maps


def attention_by_symbol(weights: torch.Tensor, token_ids: torch.Tensor, pad_id: int = 0) -> dict[str, torch.Tensor]:
    """How one layer's attention weights depend on the symbols, per head, over the real tokens.

    For every real query and every pair of distinct real keys, the difference between the weights the
    query gives the two keys, averaged separately over pairs whose keys hold the same symbol and over
    pairs whose keys hold different symbols. And the weight each real query gives to the copies of its
    own symbol (itself included), next to what uniform weights over the real tokens would give.

    Returns:
        ``{"same_symbol_gap", "other_symbol_gap", "own_symbol_share"}``, each ``(H,)``, and
        ``"uniform_share"``, 0-d (the same for every head).

    Shape:
        ``weights`` ``(B, H, L, L)``, ``token_ids`` ``(B, L)``.
    """
    require_token_ids("token_ids", token_ids)
    require_rank("weights", weights, 4, "(B, H, L, L)")
    batch, length = token_ids.shape
    if (weights.shape[0], *weights.shape[2:]) != (batch, length, length):
        raise ValueError(f"weights must be (B, H, L, L) = ({batch}, H, {length}, {length}) for token_ids "
                         f"{shape_str(token_ids)}, got {shape_str(weights)}")
    real = token_ids != pad_id  # (B, L)
    same = token_ids[:, :, None] == token_ids[:, None, :]  # (B, L, L)
    distinct = real[:, :, None] & real[:, None, :] & ~torch.eye(length, dtype=torch.bool)  # (B, L, L)
    gaps = (weights[..., :, None] - weights[..., None, :]).abs()  # (B, H, L_q, L_k, L_k): |w_qj - w_qk|
    queries = real[:, None, :, None, None]  # (B, 1, L_q, 1, 1)
    same_pairs = queries & (distinct & same)[:, None, None]  # (B, 1, L_q, L_k, L_k)
    other_pairs = queries & (distinct & ~same)[:, None, None]
    copies = (same & real[:, None, :]).float()  # (B, L_q, L_k): key holds the query's symbol
    own = (weights * copies[:, None]).sum(-1)  # (B, H, L_q)
    uniform = copies.sum(-1) / real.sum(-1, keepdim=True).clamp(min=1)  # (B, L_q)
    n_real = real.sum()
    return {
        "same_symbol_gap": (gaps * same_pairs).sum(dim=(0, 2, 3, 4)) / same_pairs.sum(),  # (H,)
        "other_symbol_gap": (gaps * other_pairs).sum(dim=(0, 2, 3, 4)) / other_pairs.sum(),  # (H,)
        "own_symbol_share": (own * real[:, None]).sum(dim=(0, 2)) / n_real,  # (H,)
        "uniform_share": (uniform * real).sum() / n_real,  # 0-d, the same for every head
    }
