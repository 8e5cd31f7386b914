"""Fine-tuning a sentence encoder for search with in-batch negatives (notebook 12).

Each training pair is a query and the passage it should find. In a batch of B pairs, query i's passage is
its positive and the other B - 1 passages are its negatives, for free: the loss is the cross-entropy of
picking passage i among all of them from scaled cosine similarities. all-MiniLM-L6-v2 was trained with
this loss (sentence-transformers calls it ``MultipleNegativesRankingLoss``; scale 20); the idea is
Henderson et al., 2017, *Efficient Natural Language Response Suggestion for Smart Reply*, section 4.

The pairs here come from the docstring corpus: the query is the object's qualified name written as words
(``"json dumps"``), the passage its docstring's first paragraph. The query is never a piece of the
passage's text, and the held-out modules, where it is measured, take no part in training.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .._validate import require_positive_int, require_positive_number
from .docs_corpus import Passage, name_words
from .training import FAST_ADAM


def contrastive_loss(queries: torch.Tensor, passages: torch.Tensor, scale: float = 20.0) -> torch.Tensor:
    """In-batch negatives: the cross-entropy of finding query i's passage, ``passages[i]``, among all passages.

    Args:
        queries: the queries' embeddings.
        passages: the passages' embeddings; the first B are the queries' positives, in order, and any
            further rows are extra negatives for every query.
        scale: the cosine similarities are multiplied by it before the softmax (a temperature of 1 / scale).

    Shape:
        ``queries`` ``(B, d)``, ``passages`` ``(P, d)`` with ``P >= B``; returns a 0-d tensor.
    """
    scores = F.normalize(queries, dim=-1) @ F.normalize(passages, dim=-1).T * scale  # (B, P)
    return F.cross_entropy(scores, torch.arange(queries.shape[0], device=scores.device))  # query i's answer: column i


# ----------------------------------------------------------------------------------------------
# Pairs and batches


def pairs(passages: list[Passage]) -> list[tuple[str, str]]:
    """``(query, passage)`` pairs: the qualified name as words, and the docstring's first paragraph."""
    return [(name_words(p.name), p.text) for p in passages]


def batches(pairs_: list[tuple[str, str]], batch_size: int, generator: torch.Generator) -> list[list[int]]:
    """Indices of ``pairs_`` in batches of passages of similar length, the batches in random order.

    Similar lengths keep the padding small (the passages dominate the compute). A batch never holds two
    pairs with the same query, which would make a right passage count as a wrong one.
    """
    order = sorted(range(len(pairs_)), key=lambda i: (len(pairs_[i][1]), i))
    out, current, queries = [], [], set()
    for i in order:
        if pairs_[i][0] in queries:
            continue  # dropped: a query whose name repeats another's (8 in the corpus) is never in a batch
        current.append(i)
        queries.add(pairs_[i][0])
        if len(current) == batch_size:
            out.append(current)
            current, queries = [], set()
    return [out[i] for i in torch.randperm(len(out), generator=generator).tolist()]


# ----------------------------------------------------------------------------------------------
# Fine-tuning


@dataclass
class FineTuneResult:
    loss: list[float] = field(default_factory=list)
    seconds: float = 0.0


def embed_with_grad(sentence_encoder, texts: list[str]) -> torch.Tensor:
    """Pooled embeddings ``(B, d)`` of ``texts`` with gradients, pooled by the sentence encoder's own pooling
    (not normalised: the loss normalises)."""
    batch = sentence_encoder.tokenize(texts)
    hidden = sentence_encoder.encoder(*sentence_encoder.encoder_inputs(batch))  # (B, L, d)
    return sentence_encoder.pool(hidden, batch["mask"])  # (B, d)


def fine_tune(sentence_encoder, pairs_: list[tuple[str, str]], *, steps: int = 20, batch_size: int = 16,
              lr: float = 1e-4, seed: int = 0, loss_fn=contrastive_loss, train_embeddings: bool = False,
              max_length: int = 64, callback=None) -> FineTuneResult:
    """Fine-tune ``sentence_encoder``'s encoder in place on ``(query, passage)`` pairs with ``loss_fn``.

    Args:
        sentence_encoder: a ``SentenceEncoder`` (its encoder is trained; it is left in eval mode).
        pairs_: the training pairs (:func:`pairs`).
        steps: optimiser steps (AdamW, constant rate).
        batch_size: pairs per step: each query has ``batch_size - 1`` negatives.
        lr: the learning rate.
        seed: seeds the batches and dropout.
        loss_fn: ``loss_fn(queries, passages)``, as :func:`contrastive_loss`.
        train_embeddings: also train the embedding tables (30,522 x 384 for all-MiniLM-L6-v2). Off by default:
            a batch touches a few hundred of their rows, and updating all of them costs most of a step.
        max_length: word pieces kept per text while training. The backward pass needs every layer's
            activations, which grow with the batch's longest text (its attention weights with the square):
            for all-MiniLM-L6-v2, 16 pairs cut at 64 pieces store about 350 MB, the few passages of
            256 pieces would store gigabytes.
        callback: called as ``callback(step, steps, loss)`` after every step.
    """
    require_positive_int("steps", steps)
    require_positive_int("batch_size", batch_size)
    require_positive_number("lr", lr)
    encoder = sentence_encoder.encoder
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # dropout
    trained = [p for name, p in encoder.named_parameters() if train_embeddings or not name.startswith("embeddings.")]
    frozen = [p for p in encoder.parameters() if all(p is not q for q in trained)]
    for p in frozen:
        p.requires_grad_(False)
    optimizer = torch.optim.AdamW(trained, lr=lr, **FAST_ADAM)  # one update for all: as training.train
    result, start, order = FineTuneResult(), time.perf_counter(), []
    tokenizer = sentence_encoder.tokenizer
    cuts = hasattr(tokenizer, "enable_truncation")  # a tokenizers.Tokenizer (a test's stand-in may not be)
    truncation = dict(tokenizer.truncation or {}) if cuts else {}
    if cuts:
        tokenizer.enable_truncation(max_length=min(max_length, truncation.get("max_length", max_length)))
    encoder.train()
    try:
        for step in range(steps):
            if not order:
                order = batches(pairs_, batch_size, generator)
            chosen = [pairs_[i] for i in order.pop()]
            queries = embed_with_grad(sentence_encoder, [q for q, _ in chosen])  # (B, d)
            passages = embed_with_grad(sentence_encoder, [p for _, p in chosen])  # (B, d)
            loss = loss_fn(queries, passages)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            result.loss.append(float(loss.detach()))
            if callback is not None:
                callback(step + 1, steps, result.loss[-1])
    finally:
        if truncation and cuts:
            tokenizer.enable_truncation(**{k: v for k, v in truncation.items() if k in (
                "max_length", "stride", "strategy", "direction")})
        elif cuts:
            tokenizer.no_truncation()
        for p in frozen:
            p.requires_grad_(True)
        encoder.eval()
    result.seconds = time.perf_counter() - start
    return result


def copy_encoder(sentence_encoder):
    """A new ``SentenceEncoder`` with a deep copy of the encoder (the same tokenizer): fine-tune the copy and
    the original stays as it was."""
    import copy

    return type(sentence_encoder)(copy.deepcopy(sentence_encoder.encoder), sentence_encoder.tokenizer,
                                  name=sentence_encoder.name, pool=sentence_encoder.pool)


def trainable(module: nn.Module) -> int:
    """Parameters that fine-tuning changes (the embedding tables excluded)."""
    return sum(p.numel() for name, p in module.named_parameters() if not name.startswith("embeddings."))
