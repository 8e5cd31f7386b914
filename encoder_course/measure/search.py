"""Searching passages with an encoder, a lexical baseline to beat, and how retrieval is scored (notebook 12).

:func:`build_index` embeds every passage once with a :class:`~encoder_course.interop.pretrained.SentenceEncoder`
(all-MiniLM-L6-v2's weights in the course's encoder or in yours, or a fine-tuned one); :func:`search` embeds
the questions with the same encoder and ranks the passages by cosine similarity. :class:`BM25` ranks them by
shared words instead, the classic lexical baseline (Robertson and Zaragoza, 2009, *The Probabilistic
Relevance Framework: BM25 and Beyond*). :func:`retrieval_scores` gives recall@k and the mean reciprocal rank
of any score matrix, so both are measured the same way.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .._validate import require_positive_int


@dataclass(frozen=True)
class Hit:
    """One search result: the passage's qualified ``name`` (``json.dumps``), its ``passage`` and its ``score``."""

    name: str
    passage: str
    score: float


@dataclass
class Index:
    """Passages and their unit-length embeddings ``(N, d)``, made by one sentence encoder."""

    names: list[str]
    passages: list[str]
    embeddings: torch.Tensor  # (N, d), unit length
    encoder: object  # the SentenceEncoder that made them, which embeds the questions too


def embed_sorted(encoder, texts: list[str], batch_size: int = 16) -> torch.Tensor:
    """Unit-length embeddings of ``texts`` ``(N, d)``, in their order, computed in batches of similar length.

    Sorting by length before batching means each batch is padded only to its own longest text: on the
    docstring corpus this spends a fraction of the compute that batches in the corpus's order spend on
    padding (notebook 12 measures it). The length is counted in word pieces where the encoder has a
    ``tokenize`` method (a ``SentenceEncoder``), else in characters: on the corpus's 3,945 passages in batches of
    16, sorting by characters left 35 % of the computed positions padding, sorting by word pieces 4 %.
    """
    require_positive_int("batch_size", batch_size)
    lengths = _lengths(encoder, texts)
    order = sorted(range(len(texts)), key=lengths.__getitem__)
    out = torch.empty(len(texts), 0)
    for start in range(0, len(texts), batch_size):
        chunk = order[start:start + batch_size]
        vectors = encoder.embed([texts[i] for i in chunk], batch_size=len(chunk))  # (b, d)
        if out.shape[1] == 0:
            out = torch.empty(len(texts), vectors.shape[1])
        out[chunk] = vectors
    return out  # (N, d)


def _lengths(encoder, texts: list[str]) -> list[int]:
    """Each text's length: its word pieces where ``encoder`` tokenizes (the real tokens of its padding mask), else
    its characters."""
    if texts and callable(getattr(encoder, "tokenize", None)):
        return encoder.tokenize(list(texts))["mask"].sum(dim=1).tolist()  # mask: (N, L), True at real tokens
    return [len(t) for t in texts]


def build_index(encoder, names: list[str], passages: list[str], batch_size: int = 16) -> Index:
    """Embed every passage with ``encoder`` (a ``SentenceEncoder``) for :func:`search`."""
    if len(names) != len(passages) or not passages:
        raise ValueError(f"names and passages must be two non-empty lists of one length, got {len(names)} "
                         f"names and {len(passages)} passages")
    return Index(list(names), list(passages), embed_sorted(encoder, list(passages), batch_size), encoder)


def search(questions: list[str] | str, index: Index, k: int = 5) -> list[list[Hit]]:
    """The ``k`` passages of ``index`` closest to each question, best first.

    Args:
        questions: one question or a list of them, in plain words ("how do I read a JSON file").
        index: passages embedded by :func:`build_index`; its encoder embeds the questions.
        k: results per question (at most the number of passages).

    Returns:
        one list of :class:`Hit` ``(name, passage, score)`` per question, ``score`` the cosine similarity.
    """
    if isinstance(questions, str):
        questions = [questions]
    require_positive_int("k", k)
    if not questions:
        raise ValueError("questions must be a question or a non-empty list of them")
    queries = index.encoder.embed(list(questions))  # (Q, d), unit length
    scores = queries @ index.embeddings.T  # (Q, N): cosine similarities
    top = scores.topk(min(k, scores.shape[1]), dim=1)
    return [[Hit(index.names[j], index.passages[j], float(s)) for s, j in zip(row_s.tolist(), row_j.tolist())]
            for row_s, row_j in zip(top.values, top.indices)]


# ----------------------------------------------------------------------------------------------
# A lexical baseline


def words(text: str) -> list[str]:
    """Lower-case words and numbers, with ``snake_case`` and ``CamelCase`` names split into their words."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
    return re.findall(r"[a-z0-9]+", spaced.lower())


class BM25:
    """Okapi BM25 over :func:`words`: a passage scores for every query word it contains, more for rare
    words, with diminishing returns for repeats (``k1``) and a discount for long passages (``b``)."""

    def __init__(self, passages: list[str], k1: float = 1.2, b: float = 0.75, tokenize=words):
        self.tokenize, self.k1, self.b = tokenize, k1, b
        self.docs = [Counter(tokenize(p)) for p in passages]
        self.lengths = torch.tensor([sum(d.values()) for d in self.docs], dtype=torch.float64)
        n = len(self.docs)
        counts = Counter(w for d in self.docs for w in d)  # in how many passages each word occurs
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in counts.items()}
        self.avg_length = float(self.lengths.mean()) if n else 0.0

    def scores(self, queries: list[str]) -> torch.Tensor:
        """BM25 scores ``(Q, N)`` of every passage for every query."""
        out = torch.zeros(len(queries), len(self.docs), dtype=torch.float64)
        norm = self.k1 * (1 - self.b + self.b * self.lengths / max(self.avg_length, 1e-9))  # (N,)
        for q, query in enumerate(queries):
            for word in set(self.tokenize(query)):
                if word not in self.idf:
                    continue
                tf = torch.tensor([d.get(word, 0) for d in self.docs], dtype=torch.float64)  # (N,)
                out[q] += self.idf[word] * tf * (self.k1 + 1) / (tf + norm)
        return out  # (Q, N)


# ----------------------------------------------------------------------------------------------
# Scoring a ranking


def ranks(scores: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
    """The rank (1 = best) of each query's right passage; ``targets[q]`` is its column (the diagonal when None).

    Ties count against the right passage: it ranks below every passage that scores the same or more.
    """
    if targets is None:
        targets = torch.arange(scores.shape[0])
    right = scores.gather(1, targets[:, None])  # (Q, 1)
    return (scores >= right).sum(dim=1)  # (Q,)


def retrieval_scores(scores: torch.Tensor, targets: torch.Tensor | None = None, ks=(1, 5)) -> dict[str, float]:
    """Recall@k (the share of queries whose right passage is in the top k) and MRR (the mean of 1 / rank)."""
    r = ranks(scores, targets).double()
    out = {f"recall@{k}": float((r <= k).double().mean()) for k in ks}
    out["MRR"] = float((1 / r).mean())
    return out


def cosine_scores(queries: torch.Tensor, passages: torch.Tensor) -> torch.Tensor:
    """Cosine similarities ``(Q, N)`` of query and passage embeddings."""
    return F.normalize(queries, dim=-1) @ F.normalize(passages, dim=-1).T
