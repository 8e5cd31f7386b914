"""Notebook 12 (real_text): BERT's masking rule, a baseline to read accuracy against, in-batch negatives."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="A batch holds 2,000 maskable tokens. With BERT's rule (p = 0.15; 80 % [MASK], 10 % random, 10 % "
             "unchanged), about how many input tokens are [MASK], and about how many positions does the loss "
             "score?",
        options=(
            "About 240 [MASK]; the loss scores about 300",
            "About 300 [MASK]; the loss scores about 300",
            "About 240 [MASK]; the loss scores about 240",
            "About 1,600 [MASK]; the loss scores about 2,000",
        ),
        explanation="0.15 · 2,000 = 300 tokens are chosen, and the loss scores all 300 of them: the random and "
                    "unchanged ones too, which is what makes the model keep a guess for every token. 80 % of the 300 "
                    "become [MASK]: 240. Scoring only the 240 [MASK] positions is the slip that makes the 20 % "
                    "pointless; 1,600 applies the 80 % to every token instead of to the chosen ones.",
        see="12 · real_text, “Exercise: BERT's masking rule”",
    ),
    Question(
        text="On the held-out modules a pretrained model fills in 11 % of the masked tokens correctly. Always "
             "answering the most frequent piece fills in 6.6 %. What does the 11 % tell you?",
        options=(
            "It learned something beyond word frequencies: 11 % against 6.6 % on the same positions",
            "Nothing: 11 % is far below half, so the model has not learned the language",
            "It learned everything a model of that size can learn from the corpus",
            "It memorised the held-out modules, since it beats the baseline there",
        ),
        explanation="An accuracy is read against what a model with no understanding reaches on the very same "
                    "positions; here that is the unigram baseline, and 11 % is well above it. It does not say the "
                    "model is good (the blanks show it rarely finds the exact word), nor that it reached a "
                    "ceiling, and it cannot have memorised modules it never saw.",
        see="12 · real_text, “The baseline: always guess the most frequent piece”",
    ),
    Question(
        text="contrastive_loss gets queries (32, 384) and passages (48, 384): 32 positives and 16 extra negatives. "
             "What is the shape of the score matrix, and which column is query 5's right answer?",
        options=(
            "(32, 48); column 5",
            "(48, 32); row 5",
            "(32, 32); column 5",
            "(32, 48); column 37",
        ),
        explanation="One row per query, one column per passage: (32, 48). passages[i] is query i's positive for i "
                    "below 32, so row 5's right column is 5, and the 16 extra rows of passages are wrong answers for "
                    "every query. (32, 32) drops the extra negatives; (48, 32) scores passages against queries, the "
                    "cross-entropy over the wrong axis.",
        see="12 · real_text, “Exercise: the contrastive loss”",
    ),
)
