"""Notebook 02 (attention): shapes of the scores, the growth of q · k, attention as a soft lookup."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="What is the shape of `scores`?",
        code="q = torch.randn(2, 8, 10, 64)  # (B, H, L_q, d_k)\n"
             "k = torch.randn(2, 8, 12, 64)  # (B, H, L_k, d_k)\n"
             "scores = q @ k.transpose(-2, -1) / math.sqrt(64)",
        options=(
            "(2, 8, 10, 12)",
            "(2, 8, 12, 10)",
            "(2, 8, 64, 64)",
            "(2, 8, 10, 10)",
        ),
        explanation="The batch and head dimensions (2, 8) carry through; (10, 64) @ (64, 12) gives one row per "
                    "query and one column per key: (10, 12). (12, 10) would be k @ qᵀ; (64, 64) would come from "
                    "transposing q instead of k; (10, 10) assumes as many keys as queries, which is only true in "
                    "self-attention over one sequence.",
        see="02 · attention, “Step 1: scores” and the exercise",
    ),
    Question(
        text="Queries and keys have independent entries with mean 0 and variance 1, and d_k = 256. About what is "
             "the standard deviation of q · k, and of q · k / √d_k?",
        options=(
            "16 for q · k, and 1 after dividing by √d_k",
            "256 for q · k, and 16 after dividing by √d_k",
            "16 for q · k, and 1/16 after dividing by √d_k",
            "1 for q · k, and 1/16 after dividing by √d_k",
        ),
        explanation="q · k is a sum of 256 independent products of variance 1, so its variance is 256 and its "
                    "standard deviation √256 = 16; dividing by √d_k = 16 brings it to 1. 256 is the variance, not "
                    "the standard deviation; 1/16 would need a division by d_k; and the spread of a sum of 256 "
                    "terms does not stay at 1.",
        see="02 · attention, “Claim check 1: dot products grow with d_k”",
    ),
    Question(
        text="Three keys with one-number values, and one query (d_k = 2). About what does attention return?",
        code="keys   = torch.tensor([[2.0, 0.0], [0.0, 2.0], [-2.0, 0.0]])\n"
             "values = torch.tensor([[10.0], [20.0], [30.0]])\n"
             "query  = torch.tensor([[2.0, 2.0]])\n"
             "out, weights = ec.scaled_dot_product_attention(query, keys, values)",
        options=(
            "About 15: half of 10 plus half of 20",
            "About 20: the mean of all three values",
            "About 10: the value of the first key",
            "About 30: the sum of the two matches",
        ),
        explanation="The scores are 4/√2 ≈ 2.83 for the first two keys and −2.83 for the third, so the softmax "
                    "gives about 0.499, 0.499 and 0.002: an even blend of 10 and 20, about 15.0. The mean of all "
                    "three would need equal scores; only the first value would need the first key to win clearly; "
                    "and the weights sum to 1, so the values are averaged, never added.",
        see="02 · attention, “Attention as a soft dictionary lookup”",
    ),
)
