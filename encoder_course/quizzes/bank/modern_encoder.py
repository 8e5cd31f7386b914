"""Notebook 13 (modern_encoder): what rotary positions promise, GeGLU's parameter count, local attention's cost."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="apply_rotary turns a query q by its position m and a key k by its position n, each pair of features "
             "by position · base^(-2i/d). Besides q and k themselves, what does the score q_m · k_n depend on?",
        options=(
            "Only on the offset n - m between the positions",
            "On both positions m and n, each one on its own",
            "On nothing: a rotation leaves q · k just as it is",
            "Only on the larger of the positions, max(m, n)",
        ),
        explanation="Pair i of q turns by m · θ_i and pair i of k by n · θ_i; the dot product of two turned 2-vectors "
                    "is the dot product of the originals with one of them turned by the difference, (n - m) · θ_i. So "
                    "the same q and k score alike at positions (0, 3) and (100, 103). A rotation keeps each vector's "
                    "length, but not the angle between two vectors turned by different amounts; depending on m and n "
                    "each on its own is what a position table added to the input gives.",
        see="13 · modern_encoder, “Rotary positions”",
    ),
    Question(
        text="With d_model = d and d_ff = f, ModernBERT's GeGLU feed-forward has no biases: W_in maps d to 2f (a "
             "value and a gate), W_out maps f back to d. How many parameters does it have, against BERT's GELU FFN "
             "(two nn.Linear layers with biases)?",
        options=(
            "GeGLU 3·d·f; BERT's 2·d·f + f + d",
            "GeGLU 2·d·f; BERT's 2·d·f + f + d",
            "GeGLU 4·d·f; BERT's 2·d·f + f + d",
            "GeGLU 3·d·f; BERT's 2·d·f + f + f",
        ),
        explanation="W_in holds d · 2f weights and W_out f · d: 3·d·f, and nothing else without biases. BERT's w1 "
                    "holds d · f weights and f biases, w2 f · d weights and d biases: 2·d·f + f + d. 2·d·f forgets the "
                    "gate's half of W_in; 4·d·f doubles W_out too, though the gate is spent before it; f + f counts "
                    "w2's bias as f wide, but w2's outputs are the d features.",
        see="13 · modern_encoder, “GeGLU and no biases”",
    ),
    Question(
        text="A local attention layer uses a window w (w // 2 keys on each side of a query, w even) on a sequence of "
             "L tokens, with L much longer than w. About how many (query, key) pairs does it score, against a "
             "global layer?",
        options=(
            "About L·(w + 1), against L·L",
            "About L·(w / 2), against L·L",
            "About w·(w + 1), against L·L",
            "About L·(2w + 1), against L·L",
        ),
        explanation="Each query scores itself and w // 2 keys on either side: w + 1 keys, so L·(w + 1) pairs in all "
                    "(the first and last w // 2 queries see a few fewer, which is negligible when L is much longer "
                    "than w): linear in L, where a global layer's L·L is quadratic. At ModernBERT's w = 128 and "
                    "L = 8192 that is about 1.06 million pairs against 67 million. L·(w / 2) counts one side only; "
                    "w·(w + 1) counts one window, forgetting that every query has its own; L·(2w + 1) puts the whole "
                    "window on either side.",
        see="13 · modern_encoder, “Local and global attention”",
    ),
)
