"""Notebook 06 (the feed-forward network): its parameter count, SwiGLU's width, reading it as a key-value memory."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="How many parameters, biases included, has the FFN of all-MiniLM-L6-v2 (d_model = 384, "
             "d_ff = 1536, two nn.Linear layers)?",
        options=(
            "1,181,568",
            "1,179,648",
            "1,771,392",
            "1,181,184",
        ),
        explanation="w1 holds 384 · 1536 weights and 1536 biases, w2 holds 1536 · 384 weights and 384 biases: "
                    "2 · 589,824 + 1,920 = 1,181,568. 1,179,648 forgets the biases; 1,181,184 keeps only w1's bias; "
                    "1,771,392 adds a third 384 x 1536 matrix, as a SwiGLU FFN of the same d_ff would have.",
        see="06 · feed_forward, “Parameters: 2,097,152 against 1,048,576”",
    ),
    Question(
        text="A SwiGLU FFN has three d_model x d_ff matrices (W_1, the gate W_3, W_2). At d_model = 768, which "
             "d_ff gives it the same number of weights as a classic FFN with d_ff = 3072?",
        options=(
            "d_ff = 2048",
            "d_ff = 3072",
            "d_ff = 1536",
            "d_ff = 4608",
        ),
        explanation="The classic FFN has 2 · 768 · 3072 weights; three matrices of 768 x d_ff match that when "
                    "3 · d_ff = 2 · 3072, i.e. d_ff = 2048 = 8/3 · 768. Keeping 3072 spends 1.5 times the weights; "
                    "1536 halves d_ff as if the gate cost nothing extra; 4608 goes the wrong way.",
        see="06 · feed_forward, “Is 4x special? The ratio is a convention”",
    ),
    Question(
        text="A tiny FFN (ReLU, d_model = d_ff = 2) has the weights below and b2 = 0. What does it return for "
             "the token h = [1.5, 0.2]?",
        code="w1.weight = [[1, 0],     # row 0: key 0\n"
             "             [0, 1]]     # row 1: key 1\n"
             "w1.bias   = [-0.5, -0.5]\n"
             "w2.weight = [[0, 1],     # column 0: value 0 = [0, 4]\n"
             "             [4, 0]]     # column 1: value 1 = [1, 0]",
        options=(
            "[0.0, 4.0]",
            "[0.0, 1.0]",
            "[0.2, 6.0]",
            "[1.0, 0.0]",
        ),
        explanation="The activations are relu([1.5 - 0.5, 0.2 - 0.5]) = [1.0, 0.0]: only key 0 fires. The output "
                    "is the sum of W2's columns weighted by them, 1.0 · [0, 4] + 0 · [1, 0] = [0, 4]. [0, 1] reads "
                    "the values from W2's rows (row 0 is [0, 1]), as if w2 computed a @ W2 instead of "
                    "W2 @ a; [0.2, 6.0] forgets the bias (activations [1.5, 0.2]); [1.0, 0.0] "
                    "stops at the activations, before W2.",
        see="06 · feed_forward, “A second reading: the FFN as a key-value memory”",
    ),
)
