"""Notebook 10 (training): a loss that leaks padding, padding in the softmax, a warmup schedule."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="real is True at real tokens, False at padding; labels hold 0 at padding. What is wrong with this "
             "loss?",
        code="losses = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction=\"none\")  # (B*L,)\n"
             "loss = (losses * real.flatten()).sum() / losses.numel()",
        options=(
            "It divides by every position, so padding changes each sentence's weight",
            "It multiplies by real, which keeps the losses of the padded positions",
            "With reduction=\"none\", cross_entropy cannot give one loss per token",
            "Nothing: the padded positions are zeroed before the sum is taken",
        ),
        explanation="The product zeroes the padded losses, so the sum is right; but the count is every position, "
                    "padding included. The same sentences get a smaller loss (and smaller gradients) when their batch "
                    "has more padding. Divide by real.sum(), the number of real tokens, as masked_token_loss does. "
                    "reduction=\"none\" does return one loss per position.",
        see="10 · training, “Exercise: a loss over real tokens only”",
    ),
    Question(
        text="Without a padding mask, a real token's query gives a score of 2.0 to each of the 4 real keys and 0.0 "
             "to each pad key (all pads identical). What share of its attention goes to padding with 12 pads?",
        options=(
            "About 0.29",
            "About 0.75",
            "About 0.02",
            "About 0.00",
        ),
        explanation="The pads together get 12 · e⁰ / (4 · e² + 12 · e⁰) = 12 / 41.6 ≈ 0.29; with 124 pads it would "
                    "be 124 / 153.6 ≈ 0.81. Identical pads do not cancel out: their number alone moves weight to them. "
                    "0.75 ignores the scores (12 of 16 keys), 0.02 is the share of a single pad (1 / 41.6 ≈ 0.024), "
                    "and 0.00 is what the padding mask would give.",
        see="10 · training, “Claim check: identical pads, the bug is still there”",
    ),
    Question(
        text="training.train sets the learning rate lr · warmup_factor(step, warmup_steps) at each step, counting "
             "steps from 0. With lr = 1e-2 and warmup_steps = 50, what rate does step 9 use?",
        code="def warmup_factor(step, warmup_steps):\n"
             "    if warmup_steps <= 0:\n"
             "        return 1.0\n"
             "    return min(1.0, (step + 1) / warmup_steps)",
        options=(
            "2.0e-3",
            "1.8e-3",
            "1.0e-2",
            "2.0e-4",
        ),
        explanation="(9 + 1) / 50 = 0.2, and 0.2 · 1e-2 = 2e-3: the tenth step, since steps count from 0. 1.8e-3 "
                    "forgets the + 1, 1e-2 is the rate after the warmup (from step 49 on), and 2e-4 is the rate of the "
                    "first step, step 0: (0 + 1) / 50 · 1e-2.",
        see="10 · training, “The model and the training loop”",
    ),
)
