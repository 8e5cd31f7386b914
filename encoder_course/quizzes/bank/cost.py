"""Notebook 09 (cost): bytes of the scores, FLOPs of training, the online softmax."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="Naive attention materialises the scores of one layer for a batch of 8 sequences of 512 tokens, "
             "with 12 heads, in float16. How large is that (B, H, L, L) tensor?",
        options=(
            "48 MiB",
            "96 MiB",
            "6 MiB",
            "4 MiB",
        ),
        explanation="B · H · L² · 2 bytes = 8 · 12 · 512² · 2 = 50,331,648 bytes = 48 MiB. 96 MiB would be float32 "
                    "(or the scores and the weights together), 6 MiB forgets the batch of 8 and 4 MiB forgets the "
                    "12 heads.",
        see="09 · cost, “Memory: the score matrix”",
    ),
    Question(
        text="An encoder with N = 85 million non-embedding parameters is trained on 10⁹ tokens in sequences of "
             "128, short next to its d_model of 768. About how many FLOPs does the training take?",
        options=(
            "About 5.1 × 10¹⁷",
            "About 1.7 × 10¹⁷",
            "About 6.5 × 10¹⁹",
            "About 5.1 × 10¹⁰",
        ),
        explanation="A training step costs about 6N FLOPs per token (2N forward, 4N backward): 6 · 85 · 10⁶ · 10⁹ = "
                    "5.1 · 10¹⁷. The L² part adds only a factor 1 + L / (6 d) ≈ 1.03 at L = 128. 1.7 · 10¹⁷ is the "
                    "forward pass alone (2N), 6.5 · 10¹⁹ multiplies by the sequence length again, and 5.1 · 10¹⁰ "
                    "is the cost of only the first 100 tokens.",
        see="09 · cost, “Rules of thumb: 2N FLOPs per token forward, 6N in training”",
    ),
    Question(
        text="This loop over key blocks should give exactly full attention, but it does not. Which line is wrong?",
        code="m_new = torch.maximum(m, scores.amax(-1, keepdim=True))   # (1)\n"
             "p = torch.exp(scores - m_new)                             # (2)\n"
             "s = s + p.sum(-1, keepdim=True)                           # (3)\n"
             "acc = acc * torch.exp(m - m_new) + p @ v_block            # (4)\n"
             "m = m_new",
        options=(
            "Line (3): the old sum must be rescaled by exp(m − m_new) too",
            "Line (4): the old accumulator must not be rescaled at all",
            "Line (2): p must subtract the old maximum m, not the new one m_new",
            "Line (1): the maximum must be taken over this block only",
        ),
        explanation="s and acc were summed relative to the old maximum m; when a block raises the maximum, both must "
                    "move to the new one, multiplied by exp(m − m_new). Line (4) does it for acc, line (3) forgets it "
                    "for s, so the old blocks weigh too much in the denominator. Subtracting m_new in (2) is right (it "
                    "keeps the exponentials at most 1), and m must be the maximum over every key seen so far.",
        see="09 · cost, “Exercise: attention over blocks of keys, with an online softmax”",
    ),
)
