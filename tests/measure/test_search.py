"""Search (notebook 12): the ranking, BM25 and the retrieval scores, on small cases computed by hand."""

from __future__ import annotations

import math

import pytest
import torch

from encoder_course.measure import search


class _Toy:
    """A stand-in sentence encoder: a text's vector counts three words."""

    WORDS = ("json", "file", "thread")

    def embed(self, texts, batch_size=32):
        vectors = torch.tensor([[t.lower().count(w) + 0.01 for w in self.WORDS] for t in texts], dtype=torch.float32)
        return torch.nn.functional.normalize(vectors, dim=-1)


def test_search_returns_the_top_k_with_names_passages_and_scores_best_first():
    names = ["json.dumps", "io.open", "threading.Thread.join"]
    passages = ["Serialize to a JSON string, json json.", "Open a file.", "Wait until the thread ends."]
    index = search.build_index(_Toy(), names, passages)
    hits = search.search(["json please", "a thread"], index, k=2)
    assert [h.name for h in hits[0]][0] == "json.dumps" and [h.name for h in hits[1]][0] == "threading.Thread.join"
    assert len(hits[0]) == 2 and hits[0][0].score >= hits[0][1].score
    assert hits[0][0].passage == passages[0] and math.isclose(hits[0][0].score, 1.0, abs_tol=0.01)
    assert len(search.search("file", index, k=10)[0]) == 3  # at most the number of passages
    with pytest.raises(ValueError, match="k"):
        search.search("file", index, k=0)
    with pytest.raises(ValueError, match="non-empty"):
        search.build_index(_Toy(), ["a"], [])


def test_embed_sorted_keeps_the_order_of_the_texts():
    class Lengthy:
        def embed(self, texts, batch_size=32):
            return torch.tensor([[float(len(t)), 1.0] for t in texts])
    texts = ["ccc", "a", "bb", "dddd", "e"]
    got = search.embed_sorted(Lengthy(), texts, batch_size=2)
    assert got[:, 0].tolist() == [3.0, 1.0, 2.0, 4.0, 1.0]


def test_embed_sorted_batches_by_word_pieces_where_the_encoder_tokenizes():
    """A text's characters say little about its word pieces ("_thread" is long in both): the batches follow the
    pieces the encoder's tokenizer counts, and every text still gets its own vector, in the given order."""
    pieces = {"a": 5, "bbbbbb": 1, "cc": 4, "ddddd": 2, "eee": 5, "ffff": 1}

    class Tokenizing:
        batches = []

        def tokenize(self, texts):
            longest = max(pieces[t] for t in texts)
            return {"mask": torch.tensor([[i < pieces[t] for i in range(longest)] for t in texts])}  # (N, L)

        def embed(self, texts, batch_size=32):
            self.batches.append(sorted(pieces[t] for t in texts))
            return torch.tensor([[float(pieces[t]), float(len(t))] for t in texts])

    encoder, texts = Tokenizing(), list(pieces)
    got = search.embed_sorted(encoder, texts, batch_size=2)
    assert encoder.batches == [[1, 1], [2, 4], [5, 5]]  # by characters: [4, 5], [1, 5], [1, 2]
    assert got.tolist() == [[float(pieces[t]), float(len(t))] for t in texts]


def test_bm25_matches_the_formula_on_a_small_case():
    passages = ["the cat sat", "the dog", "a cat and a cat"]
    bm25 = search.BM25(passages, k1=1.2, b=0.75)
    got = bm25.scores(["cat"])[0]
    n, df = 3, 2
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    avg = (3 + 2 + 5) / 3

    def term(tf, length):
        return idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * length / avg))
    assert got.tolist() == pytest.approx([term(1, 3), 0.0, term(2, 5)])
    assert bm25.scores(["unknown words"]).abs().sum() == 0
    assert search.words("StreamHandler.set_formatter(x2)") == ["stream", "handler", "set", "formatter", "x2"]


def test_ranks_recall_and_mrr_count_ties_against_the_right_passage():
    scores = torch.tensor([[0.9, 0.1, 0.2],   # right (column 0) first
                           [0.5, 0.4, 0.1],   # right (column 1) second
                           [0.3, 0.3, 0.3]])  # a three-way tie: rank 3
    assert search.ranks(scores).tolist() == [1, 2, 3]
    got = search.retrieval_scores(scores)
    assert got["recall@1"] == pytest.approx(1 / 3) and got["recall@5"] == pytest.approx(1.0)
    assert got["MRR"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert search.ranks(scores, torch.tensor([2, 0, 1])).tolist() == [2, 1, 3]
