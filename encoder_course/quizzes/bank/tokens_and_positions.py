"""Notebook 01 (tokens and positions): position values, equivariance, wavelengths."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="With the sinusoidal table of the 2017 paper (positions from 0, sine in even columns, cosine in odd "
             "ones), what are PE[1, 0] and PE[1, 1], whatever d_model is?",
        options=(
            "PE[1, 0] = 0.841 and PE[1, 1] = 0.540",
            "PE[1, 0] = 0.540 and PE[1, 1] = 0.841",
            "PE[1, 0] = 0.017 and PE[1, 1] = 1.000",
            "PE[1, 0] = 0.000 and PE[1, 1] = 1.000",
        ),
        explanation="Columns 0 and 1 are pair i = 0, whose frequency is 1 / 10000^0 = 1, so they hold sin(1 · 1) "
                    "= 0.841 and cos(1 · 1) = 0.540 (radians). Swapping them puts the cosine in the even column; "
                    "0.017 and 1.000 are sin and cos of 1 degree; 0 and 1 are the values of row 0, position 0.",
        see="01 · tokens_and_positions, “Exercise: the sinusoidal position table”",
    ),
    Question(
        text="X holds 3 token vectors with no positions added, and attn is self-attention. "
             "Which equality holds (up to rounding)?",
        code="a = attn(X)            # (3, d_model)\n"
             "b = attn(X[[2, 0, 1]])  # the rows of X, reordered",
        options=(
            "b equals a[[2, 0, 1]]: the outputs move with their tokens",
            "b equals a: the outputs ignore the order of the tokens",
            "b equals a[[1, 2, 0]]: the outputs move the other way",
            "b[0] equals a[0]: only the first position keeps its output",
        ),
        explanation="Attention is permutation-equivariant: row i of b is computed from token X[[2, 0, 1]][i] and "
                    "the same set of tokens, so b[i] = a[[2, 0, 1][i]], i.e. b = a[[2, 0, 1]]. It is not invariant "
                    "(b = a would need the outputs not to move at all); [1, 2, 0] is the inverse shuffle, which "
                    "would undo the reordering instead of following it.",
        see="01 · tokens_and_positions, “Claim check: attention alone cannot see order”",
    ),
    Question(
        text="In a sinusoidal table with d_model = 512, how many positions does column pair i = 128 "
             "(columns 256 and 257) take to repeat, i.e. what is its wavelength?",
        options=(
            "2π · 10000^(256/512) ≈ 628 positions",
            "10000^(256/512) = 100 positions",
            "2π · 10000^(128/512) ≈ 62.8 positions",
            "2π · 10000 ≈ 62,832 positions",
        ),
        explanation="Pair i turns by 1 / 10000^(2i/d_model) radians per position, so its wavelength is "
                    "2π · 10000^(2i/d_model); with 2i = 256 that is 2π · 10000^0.5 = 2π · 100 ≈ 628. Leaving out "
                    "2π gives 1/ω, the number of positions per radian, not per full turn; using i instead of 2i "
                    "in the exponent gives 62.8; 10000 · 2π is "
                    "the upper end of the progression, which even the last pair only approaches.",
        see="01 · tokens_and_positions, “Reading the wavelengths off the table”",
    ),
)
