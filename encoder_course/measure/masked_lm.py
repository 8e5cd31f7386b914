"""Masked-language-model pretraining on real text (notebook 12): BERT's masking rule, a small encoder, and
what it learned, measured on held-out modules against the unigram baseline.

BERT (Devlin et al., 2019, section 3.1 and appendix A.1) chooses 15 % of the tokens to predict; of those, 80 %
are replaced by ``[MASK]``, 10 % by a random token and 10 % are left as they are, so the model cannot learn
that only ``[MASK]`` positions matter. The loss is notebook 10's ``masked_token_loss`` over the chosen tokens.

The text is the docstring corpus (:mod:`encoder_course.measure.docs_corpus`) through all-MiniLM-L6-v2's
WordPiece tokenizer. A small model has no use for 30,522 word pieces when the corpus uses a third of them:
:class:`Vocabulary` keeps the pieces the training part uses (a held-out piece outside it becomes ``[UNK]``).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import Counter
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .._validate import require_positive_int, require_positive_number, require_probability
from ..encoder import Encoder, EncoderConfig
from ..tools import free_cores
from .timing import cpu_threads
from .training import FAST_ADAM, masked_token_loss

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0 to 4 of every Vocabulary


def mask_tokens(token_ids: torch.Tensor, maskable: torch.Tensor, mask_id: int, vocab_size: int,
                generator: torch.Generator | None = None, p: float = 0.15):
    """BERT's masking rule: choose each maskable token with probability ``p``; of the chosen, 80 % become
    ``mask_id``, 10 % a random token id, and 10 % stay as they are.

    Args:
        token_ids: the batch, long.
        maskable: bool, True where a token may be chosen (a real word piece: not padding, [CLS] or [SEP]).
        mask_id: the id of ``[MASK]``.
        vocab_size: random replacements are drawn uniformly from ``0 .. vocab_size - 1``.
        generator: the random generator to draw from (the global one when None).
        p: the probability that a maskable token is chosen.

    Shape:
        ``token_ids`` and ``maskable`` ``(B, L)``; returns ``(inputs, chosen)``, both ``(B, L)``: the model's
        input (``token_ids`` with the replacements; the argument itself is not changed) and bool ``chosen``,
        True at the positions the model must predict (the loss's mask; the labels are ``token_ids``).
    """
    chosen = (torch.rand(token_ids.shape, generator=generator) < p) & maskable  # (B, L)
    action = torch.rand(token_ids.shape, generator=generator)  # (B, L): < 0.8 mask, < 0.9 random, else keep
    random_ids = torch.randint(vocab_size, token_ids.shape, generator=generator)  # (B, L)
    inputs = token_ids.masked_fill(chosen & (action < 0.8), mask_id)
    swap = chosen & (action >= 0.8) & (action < 0.9)
    inputs = torch.where(swap, random_ids, inputs)
    return inputs, chosen


# ----------------------------------------------------------------------------------------------
# The text as token ids


class Vocabulary:
    """The word pieces the training text uses, numbered from 0, with the five special tokens first.

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` (all-MiniLM-L6-v2's WordPiece).
        texts: the training texts; every piece they use gets an id.
    """

    def __init__(self, tokenizer, texts: list[str]):
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_str(tokenizer.to_str())  # a copy that neither pads nor truncates
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        counts = Counter(piece for enc in self.tokenizer.encode_batch(list(texts)) for piece in enc.tokens)
        pieces = [p for p, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if p not in SPECIALS]
        self.pieces = list(SPECIALS) + pieces
        self.ids = {p: i for i, p in enumerate(self.pieces)}
        self.counts = counts
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = range(5)

    def __len__(self) -> int:
        return len(self.pieces)

    def encode(self, texts: list[str], max_len: int = 64) -> list[list[int]]:
        """Each text as ids: ``[CLS]`` pieces ``[SEP]``, cut to ``max_len`` (the ``[SEP]`` kept)."""
        out = []
        for enc in self.tokenizer.encode_batch(list(texts)):
            pieces = [p for p in enc.tokens if p not in ("[CLS]", "[SEP]")][:max_len - 2]
            out.append([self.cls_id] + [self.ids.get(p, self.unk_id) for p in pieces] + [self.sep_id])
        return out

    def decode(self, ids) -> list[str]:
        """The pieces of ``ids``."""
        return [self.pieces[int(i)] for i in ids]

    def most_frequent(self) -> int:
        """The id of the most frequent ordinary piece in the training text (the unigram baseline's answer)."""
        return len(SPECIALS)  # pieces are numbered by frequency after the specials


def pad_batch(sequences: list[list[int]], pad_id: int = 0) -> torch.Tensor:
    """Sequences padded at the end to the longest one, ``(B, L)``."""
    longest = max(len(s) for s in sequences)
    return torch.tensor([s + [pad_id] * (longest - len(s)) for s in sequences], dtype=torch.long)  # (B, L)


def maskable_positions(token_ids: torch.Tensor, vocab: Vocabulary) -> torch.Tensor:
    """True at ordinary word pieces: not padding, ``[CLS]``, ``[SEP]`` or ``[UNK]`` (nothing to learn there)."""
    return token_ids >= len(SPECIALS)  # the specials are ids 0 to 4


def length_batches(sequences: list[list[int]], batch_size: int, generator: torch.Generator) -> list[list[int]]:
    """Indices of ``sequences`` in batches of similar length, the batches in random order.

    Padding each batch only to its own longest sequence wastes little compute when its sequences have
    similar lengths (notebook 12 measures the padding a random batch would carry).
    """
    order = sorted(range(len(sequences)), key=lambda i: (len(sequences[i]), i))
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


# ----------------------------------------------------------------------------------------------
# The model


class MaskedLM(nn.Module):
    """An encoder and its output layer: each position's vector scored against every word piece.

    The output layer shares its weights with the token embedding (as BERT does), plus a bias per piece.

    Args:
        encoder: an encoder with the course's interface (``ec.Encoder`` or ``yours.build_encoder(config)``).
    """

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.bias = nn.Parameter(torch.zeros(encoder.config.vocab_size))

    def forward(self, token_ids: torch.Tensor, mask: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
        """Logits of the chosen positions only, ``(N, V)``: scoring every position would cost the whole
        vocabulary times the batch's tokens for nothing."""
        hidden = self.encoder(token_ids, mask)  # (B, L, d_model)
        return hidden[chosen] @ self.encoder.embeddings.token.weight.T + self.bias  # (N, V)


def small_config(vocab_size: int, **changes) -> EncoderConfig:
    """The pretraining encoder: 2 pre-LN layers, 128 wide, 4 heads, sinusoidal positions, 64 tokens, no dropout.

    No dropout: for notebook 12's 700 steps, dropout of 0.1 gave the same held-out accuracy and loss (10.7 % and
    5.85 nats against 10.8 % and 5.85 without) and took half as long again (69 against 46 s, 2 cores): drawing
    its random masks on the CPU cost more than the layers' matrix products.
    """
    base = EncoderConfig(vocab_size=vocab_size, max_len=64, d_model=128, n_heads=4, d_ff=512, n_layers=2,
                         dropout=0.0, norm_first=True, activation="gelu", positions="sinusoidal", pad_id=0)
    return base.replace(**changes)


def make_model(config: EncoderConfig, encoder_class=Encoder, seed: int = 0) -> MaskedLM:
    """A :class:`MaskedLM` around ``encoder_class(config)`` (yours: ``yours.build_encoder``), seeded."""
    torch.manual_seed(seed)
    encoder = encoder_class(config)
    with torch.no_grad():  # BERT's initialisation of the token table (std 0.02): the logits start small
        encoder.embeddings.token.weight.normal_(0.0, 0.02)
    return MaskedLM(encoder)


# ----------------------------------------------------------------------------------------------
# Pretraining and measuring


@dataclass
class PretrainResult:
    """What a pretraining run recorded: the loss at every step, the wall time and the steps taken."""

    loss: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def steps(self) -> int:
        return len(self.loss)

    def final_loss(self, last: int = 50) -> float:
        tail = self.loss[-last:]
        return sum(tail) / max(len(tail), 1)


def pretrain(model: MaskedLM, sequences: list[list[int]], vocab: Vocabulary, *, steps: int = 600,
             seconds: float | None = None, batch_size: int = 64, lr: float = 2e-3, warmup_steps: int = 50,
             seed: int = 0, mask_fn=mask_tokens, loss_fn=masked_token_loss, callback=None,
             threads: int | str | None = "free", clock=time.perf_counter) -> PretrainResult:
    """Train ``model`` to fill in masked word pieces with AdamW, a linear warmup and a linear decay to 0.

    Args:
        model: the :class:`MaskedLM` (trained in place, left in eval mode).
        sequences: the training text as ids (:meth:`Vocabulary.encode`).
        vocab: its vocabulary (the ``[MASK]`` id and the number of pieces).
        steps: optimiser steps (the schedule's length).
        seconds: stop after this many seconds of ``clock`` even before ``steps`` (None: no limit). The schedule
            still runs over ``steps``, so a run cut short ends at a higher learning rate.
        clock: what ``seconds`` counts: wall time by default; ``time.process_time`` counts the processor time this
            process spent, which a busy machine does not shrink (comparisons of designs use it).
        batch_size: sequences per step, grouped by length (:func:`length_batches`).
        lr: the peak learning rate.
        warmup_steps: linear warmup length.
        seed: seeds the batches' order and the masking.
        mask_fn: ``mask_fn(ids, maskable, mask_id, vocab_size, generator)``, as :func:`mask_tokens`.
        loss_fn: ``loss_fn(logits, labels, mask)``, as notebook 10's ``masked_token_loss``.
        callback: called as ``callback(step, steps, loss)`` after every step (a live curve, a progress bar).
        threads: CPU threads while training, restored afterwards: a number, None (torch's setting) or
            ``"free"`` (the default): as many as the machine's idle cores when the run starts
            (:func:`encoder_course.tools.free_cores`), no more than torch's setting. For :func:`small_config`'s
            model on 2 cores, two threads took 3.8 s per 100 steps against 4.8-6.0 s for one on a quiet machine,
            and 12 to 98 s against 8-9 s with a busy loop on each core, where threads that wait for each other
            lose their turns: one is chosen there.
    """
    require_positive_int("steps", steps)
    require_positive_int("batch_size", batch_size)
    require_positive_number("lr", lr)
    if threads == "free":
        threads = min(torch.get_num_threads(), free_cores())
    elif threads is not None:
        require_positive_int("threads", threads)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, **FAST_ADAM)  # as training.train
    result, start, batches, empty = PretrainResult(), time.perf_counter(), [], 0
    budget_start = clock()
    with cpu_threads(threads) if threads is not None else contextlib.nullcontext():
        model.train()
        step = 0
        while step < steps:
            if not batches:
                batches = length_batches(sequences, batch_size, generator)
            ids = pad_batch([sequences[i] for i in batches.pop()], vocab.pad_id)  # (B, L)
            real = ids != vocab.pad_id  # (B, L)
            inputs, chosen = mask_fn(ids, maskable_positions(ids, vocab), vocab.mask_id, len(vocab), generator)
            if not chosen.any():  # nothing to predict in this batch: draw another (a step needs a loss)
                empty += 1
                if empty > 100:
                    raise ValueError("100 batches in a row had no token chosen: "
                                     "does the text have ordinary word pieces?")
                continue
            empty = 0
            logits = model(inputs, real, chosen)  # (N, V)
            loss = loss_fn(logits[None], ids[chosen][None], torch.ones(1, logits.shape[0], dtype=torch.bool))
            scale = min(1.0, (step + 1) / max(warmup_steps, 1)) * max(0.0, 1 - step / steps)
            for group in optimizer.param_groups:
                group["lr"] = lr * scale
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            result.loss.append(float(loss.detach()))
            step += 1
            if callback is not None:
                callback(step, steps, result.loss[-1])
            if seconds is not None and clock() - budget_start > seconds:
                break
    result.seconds = time.perf_counter() - start
    model.eval()
    return result


@torch.no_grad()
def masked_accuracy(model: MaskedLM, sequences: list[list[int]], vocab: Vocabulary, seed: int = 1,
                    batch_size: int = 256) -> dict[str, float]:
    """Held-out masked-token accuracy and loss, with the unigram baseline on the very same positions.

    Every chosen token is replaced by ``[MASK]`` here (no random or kept tokens: the question is only
    "which piece was here?"). The unigram baseline always answers the training text's most frequent piece.

    Returns:
        ``{"accuracy", "loss", "unigram_accuracy", "unigram_loss", "tokens"}``; ``unigram_loss`` is the
        cross-entropy of predicting every piece with its training frequency.
    """
    generator = torch.Generator().manual_seed(seed)
    model.eval()
    frequency = torch.ones(len(vocab), dtype=torch.float64)  # add-one smoothing: no piece has probability 0
    for piece, count in vocab.counts.items():
        if piece in vocab.ids:
            frequency[vocab.ids[piece]] += count
    frequency[:len(SPECIALS)] = 0
    log_unigram = (frequency / frequency.sum()).log()
    hits = unigram_hits = total = 0
    loss = unigram_loss = 0.0
    for start in range(0, len(sequences), batch_size):
        ids = pad_batch(sequences[start:start + batch_size], vocab.pad_id)  # (B, L)
        chosen = (torch.rand(ids.shape, generator=generator) < 0.15) & maskable_positions(ids, vocab)  # (B, L)
        logits = model(ids.masked_fill(chosen, vocab.mask_id), ids != vocab.pad_id, chosen)  # (N, V)
        labels = ids[chosen]  # (N,)
        hits += int((logits.argmax(-1) == labels).sum())
        unigram_hits += int((labels == vocab.most_frequent()).sum())
        loss += float(F.cross_entropy(logits.double(), labels, reduction="sum"))
        unigram_loss -= float(log_unigram[labels].sum())
        total += int(labels.numel())
    return {"accuracy": hits / total, "loss": loss / total, "unigram_accuracy": unigram_hits / total,
            "unigram_loss": unigram_loss / total, "tokens": total}


@torch.no_grad()
def fill_in(model: MaskedLM, vocab: Vocabulary, text: str, word: str, k: int = 3) -> list[str]:
    """The ``k`` pieces the model puts in place of ``word`` in ``text`` (its first word piece, masked), best first."""
    ids = vocab.encode([text])[0]
    target = vocab.ids.get(vocab.tokenizer.encode(word, add_special_tokens=False).tokens[0], vocab.unk_id)
    if target not in ids:
        raise ValueError(f"{word!r} (piece id {target}) is not in {text!r}")
    ids = torch.tensor([ids])  # (1, L)
    chosen = ids == target  # (1, L): every occurrence is masked
    logits = model(ids.masked_fill(chosen, vocab.mask_id), torch.ones_like(chosen), chosen)  # (n, V)
    logits[:, :len(SPECIALS)] = -math.inf  # never answer a special token
    return vocab.decode(logits[0].topk(k).indices)


def masked_share(sequences: list[list[int]], vocab: Vocabulary, p: float = 0.15) -> float:
    """The share of all tokens (specials included) that are maskable times ``p``: what one batch predicts."""
    require_probability("p", p)
    tokens = sum(len(s) for s in sequences)
    ordinary = sum(1 for s in sequences for i in s if i >= len(SPECIALS))
    return p * ordinary / max(tokens, 1)
