"""Notebook 04 (multi-head attention): shapes after the split, the parameter count, the blocks of W_O."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="A batch of B = 2 sentences of L = 10 tokens goes into multi-head attention with d_model = 768 and "
             "H = 12 heads. What are the shapes of q after splitting it into heads, and of the scores?",
        code="q = split_heads(self.w_q(x), self.n_heads)  # x: (2, 10, 768)\n"
             "k = split_heads(self.w_k(x), self.n_heads)\n"
             "scores = q @ k.transpose(-2, -1)",
        options=(
            "q (2, 12, 10, 64) and scores (2, 12, 10, 10)",
            "q (2, 10, 12, 64) and scores (2, 10, 12, 12)",
            "q (2, 12, 10, 768) and scores (2, 12, 10, 10)",
            "q (2, 12, 10, 64) and scores (2, 12, 64, 64)",
        ),
        explanation="Each head gets d_head = 768 / 12 = 64 features, and split_heads moves the heads before the "
                    "positions: (B, H, L, d_head) = (2, 12, 10, 64). Every head then compares its 10 queries with "
                    "its 10 keys, so the scores are (B, H, L, L) = (2, 12, 10, 10). Without the transpose the "
                    "heads would sit after the positions (and the scores would compare heads, not tokens); a head "
                    "of width 768 forgets to divide d_model by H; (64, 64) is what q.transpose(-2, -1) @ k "
                    "gives, a product over positions instead of features.",
        see="04 · multi_head, “Splitting and merging heads, two ways” and “The shape table”",
    ),
    Question(
        text="How many parameters, biases included, has a multi-head attention layer with d_model = 384 and "
             "12 heads (the size of all-MiniLM-L6-v2)?",
        options=(
            "591,360",
            "589,824",
            "7,096,320",
            "443,904",
        ),
        explanation="Four d_model x d_model projections (w_q, w_k, w_v, w_o): 4 · 384² = 589,824 weights, plus "
                    "four bias vectors of 384 = 1,536, so 591,360. The number of heads does not enter: heads split "
                    "the width, they do not add matrices. 589,824 leaves out the biases; 7,096,320 gives each of "
                    "the 12 heads full-size matrices; 443,904 counts three projections and four biases, "
                    "forgetting w_o.",
        see="04 · multi_head, “Parameters: 1,048,576 weights at width 512”",
    ),
    Question(
        text="In a layer with d_model = 512 and 8 heads, out = w_o(concat(heads)). Which part of "
             "w_o.weight (an nn.Linear weight, stored as (out, in)) multiplies the output of head 2 "
             "(heads counted from 0)?",
        options=(
            "w_o.weight[:, 128:192], columns 128 to 191",
            "w_o.weight[128:192, :], rows 128 to 191",
            "w_o.weight[:, 64:128], columns 64 to 127",
            "w_o.weight[2::8, :], every 8th row from row 2",
        ),
        explanation="nn.Linear computes x @ weight.T, so input feature j meets column j of the weight. Head 2's "
                    "output sits at features 2 · 64 = 128 to 191 of the concatenated vector, so it meets columns "
                    "128 to 191, and the layer's output is the sum of eight such per-head terms. Rows index the "
                    "output features, not the heads; columns 64 to 127 belong to head 1; heads are contiguous "
                    "blocks of 64, not every 8th feature.",
        see="04 · multi_head, “The output projection is a sum over heads”",
    ),
)
