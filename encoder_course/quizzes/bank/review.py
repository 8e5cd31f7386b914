"""Notebook 13 (review): ten questions, one per section, each a short calculation or a few lines of code to read."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="A query and a key each have d_k = 256 independent components with mean 0 and variance 1. "
             "What is the standard deviation of their dot product q·k, and then of q·k / √d_k?",
        options=(
            "16, then 1",
            "256, then 1",
            "16, then 1/16",
            "256, then 16",
        ),
        explanation="q·k is a sum of 256 products, each with mean 0 and variance 1, so its variance is 256 and "
                    "its standard deviation √256 = 16. Dividing by √d_k = 16 brings the standard deviation to 1. "
                    "256 is the variance, not the standard deviation; 1/16 is what dividing by d_k instead of "
                    "√d_k would give.",
        see="14 · review, “1. Why divide the scores by √d_k?”; 02 · attention, “Why divide by √d_k?”",
    ),
    Question(
        text="A MultiHeadAttention(768, n_heads=12) receives x of shape (2, 10, 768), (B, L, d_model). "
             "What shape do its attention weights, attention_weights(x), have?",
        options=(
            "(2, 12, 10, 10)",
            "(2, 12, 10, 64)",
            "(2, 10, 12, 12)",
            "(2, 12, 64, 64)",
        ),
        explanation="One weight per sequence, head, query and key: (B, H, L, L) = (2, 12, 10, 10), so each of "
                    "the 10 tokens gets 12 separate distributions over the 10 keys. (2, 12, 10, 64) is the shape "
                    "of each head's queries, keys and values (d_head = 768 / 12 = 64); the weights have no "
                    "d_head axis, and heads are never weighted against each other.",
        see="14 · review, “2. Why several heads?”; 04 · multi_head, the shape table",
    ),
    Question(
        text="What does this print? (EncoderBlock and causal_mask as in the course: the mask is True where "
             "a query may attend.)",
        code=("block = ec.EncoderBlock(64, 4, 256, dropout=0.0).eval()\n"
              "x = torch.randn(1, 6, 64)\n"
              "y = x.clone()\n"
              "y[0, 5] += 1.0  # change only the last token\n"
              "mask = ec.causal_mask(6)\n"
              "change = (block(x, mask) - block(y, mask)).abs().amax(dim=-1)[0]  # (6,)\n"
              "print((change > 0).int().tolist())"),
        options=(
            "[0, 0, 0, 0, 0, 1]",
            "[1, 1, 1, 1, 1, 1]",
            "[1, 0, 0, 0, 0, 0]",
            "[0, 1, 1, 1, 1, 1]",
        ),
        explanation="With the causal mask, position i attends only to positions 0 to i, and the feed-forward "
                    "network and the LayerNorms work on each position alone, so only the last position sees "
                    "the change. A row of 1s is what an encoder without the mask prints: every token reads the "
                    "last one (all 1s). The other two lines would need an early token to see the end of the sentence, "
                    "or the last token to stop seeing itself.",
        see="14 · review, “3. Why does an encoder use no causal mask?”; 03 · masks, “Causal masks”",
    ),
    Question(
        text="An encoder with d_model = 128, 6 pre-LN layers (norm_first=True) and no LayerNorm on the "
             "embeddings: how many LayerNorm parameters does it have in all?",
        options=(
            "3,328",
            "3,072",
            "1,664",
            "4,608",
        ),
        explanation="Each layer has two LayerNorms (norm1, norm2), each with a γ and a β of 128 values: "
                    "6 · 2 · 2 · 128 = 3,072. A pre-LN stack adds one final LayerNorm on its output, 256 more: "
                    "3,328. 3,072 forgets the final LayerNorm (it is the post-LN count); 1,664 counts only the "
                    "γ vectors; 4,608 gives every layer a final LayerNorm of its own.",
        see="14 · review, “4. Pre-LN or post-LN?”; 08 · stacking, “The final LayerNorm belongs to pre-LN stacks”",
    ),
    Question(
        text="One BERT-base layer (d_model 768, 12 heads of 64) at L = 512: how many FLOPs does computing the "
             "scores QKᵀ take, all heads together, counting a multiply-add as 2 FLOPs?",
        options=(
            "about 0.40 GFLOPs",
            "about 0.20 GFLOPs",
            "about 0.03 GFLOPs",
            "about 4.83 GFLOPs",
        ),
        explanation="Each head multiplies a (512 × 64) by a (64 × 512) matrix: 512 · 512 · 64 multiply-adds. "
                    "Twelve heads make 512² · 768 = 201M multiply-adds, 0.40 GFLOPs. 0.20 G forgets that a "
                    "multiply-add is 2 FLOPs; 0.03 G is a single head; 4.83 G is the same layer's "
                    "feed-forward network (2 · 512 · 2 · 768 · 3072), twelve times the scores.",
        see="14 · review, “5. Where are the parameters, and where are the FLOPs?”; 09 · cost",
    ),
    Question(
        text="No padding mask. A real token's query gives the same score to each of its sentence's 4 real "
             "keys and to every [PAD] key, and all pad slots hold the same vector. What share of its "
             "attention weight goes to padding with 3 pads, and then with 124?",
        options=(
            "3/7, then 124/128",
            "3/7, then 3/7",
            "4/7, then 4/128",
            "0, then 0",
        ),
        explanation="With equal scores the softmax gives each key the same weight, 1 / (number of keys): 3 of "
                    "7 keys are pads, then 124 of 128. Identical pads do not cancel out: each one is another "
                    "key sharing the softmax, so the more padding, the more the real token's output is pulled "
                    "towards the pad's value. 4/7 and 4/128 are the real keys' share; 0 is what the mask gives.",
        see="14 · review, “6. What breaks without the padding mask?”; 03 · masks",
    ),
    Question(
        text="x has shape (4, 10, 32), (B, L, d_model). LayerNorm(32) on x, and a BatchNorm over the batch "
             "and the positions (BatchNorm1d(32) on x.transpose(1, 2)), each compute means. How many means "
             "does each compute?",
        options=(
            "40, then 32",
            "32, then 40",
            "10, then 32",
            "40, then 40",
        ),
        explanation="LayerNorm normalises each token over its own 32 features: one mean per token, "
                    "4 · 10 = 40. BatchNorm normalises each feature over every token in the batch: one mean "
                    "per feature, 32, each over 40 values, which is why a sentence's output depends on its "
                    "batch-mates. 10 would be one mean per position, taken across the batch, which neither computes; "
                    "40 for BatchNorm would make it a LayerNorm.",
        see="14 · review, “7. Why LayerNorm and not BatchNorm?”; 05 · residual_and_layernorm",
    ),
    Question(
        text="A GELU feed-forward network with d_model = 768 and d_ff = 3072 has two weight matrices. A "
             "SwiGLU one has three (two of d_model × d_ff, one of d_ff × d_model). Which d_ff gives it the "
             "same number of weights?",
        options=(
            "2048",
            "3072",
            "1536",
            "2304",
        ),
        explanation="The GELU FFN has 2 · 768 · 3072 = 8 · 768² weights; the SwiGLU one has 3 · 768 · d_ff, "
                    "equal when d_ff = 8 · 768 / 3 = 2048. Keeping 3072 makes it 1.5 times larger; 2304 "
                    "(3 · d_model) gives 1.125 times and 1536 (2 · d_model) 0.75 times the weights.",
        see="14 · review, “8. Why is the FFN four times wider?”; 06 · feed_forward",
    ),
    Question(
        text="What does this print? (No position vectors are added to x.)",
        code=("block = ec.EncoderBlock(64, 4, 256, dropout=0.0).eval()\n"
              "x = torch.randn(1, 3, 64)  # three token vectors\n"
              "perm = torch.tensor([2, 0, 1])\n"
              "out, out_p = block(x), block(x[:, perm])\n"
              "print(torch.allclose(out_p, out[:, perm], atol=1e-5),\n"
              "      torch.allclose(out_p, out, atol=1e-5))"),
        options=(
            "True False",
            "False True",
            "True True",
            "False False",
        ),
        explanation="Without positions a token's output depends on its own vector and on the set of the "
                    "others, so permuting the inputs permutes the outputs the same way: the first comparison "
                    "is True (equivariance). The outputs do not stay in place, so the second is False: "
                    "attention is not permutation-invariant; only something pooled over the tokens, such as "
                    "their mean, would be.",
        see="14 · review, “9. Does attention know the order of the tokens?”; 01 · tokens_and_positions",
    ),
    Question(
        text="One layer's attention weights for one sequence of L = 8192 tokens with 12 heads, stored in "
             "float16 (2 bytes each): how much memory do they take?",
        options=(
            "1.5 GiB",
            "768 MiB",
            "3.0 GiB",
            "128 MiB",
        ),
        explanation="L² · H values of 2 bytes: 8192² · 12 · 2 = 1,610,612,736 bytes = 1.5 GiB. 3.0 GiB is "
                    "float32 (4 bytes), 768 MiB counts 1 byte per value, 128 MiB is a single head. Kernels "
                    "such as FlashAttention never store this matrix, but they still compute all 8192² "
                    "scores of every head.",
        see="14 · review, “10. What does attention cost at long L?”; 09 · cost, “Memory: the score matrix”",
    ),
)
