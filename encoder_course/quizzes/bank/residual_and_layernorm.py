"""Notebook 05 (residual connections and LayerNorm): the residual Jacobian, the axis of LayerNorm, two LayerNorms."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="A sublayer is linear, f(x) = W x with W = [[0, 2], [0, 0]], and sits on a residual branch: "
             "y = x + f(x). What is the Jacobian dy/dx that the gradient is multiplied by on the way back?",
        options=(
            "[[1, 2], [0, 1]]",
            "[[0, 2], [0, 0]]",
            "[[1, 0], [0, 1]]",
            "[[2, 2], [0, 2]]",
        ),
        explanation="dy/dx = I + df/dx = I + W = [[1, 2], [0, 1]]: the identity of the residual path plus the "
                    "sublayer's own Jacobian. [[0, 2], [0, 0]] is the sublayer alone (no residual); the identity "
                    "alone forgets the sublayer; [[2, 2], [0, 2]] adds 2I instead of I.",
        see="05 · residual_and_layernorm, “The residual path: an identity in the Jacobian”",
    ),
    Question(
        text="x has shape (B, L, d_model). Which line of this LayerNorm forward normalises over the wrong axis?",
        code="mean = x.mean(dim=-1, keepdim=True)                   # line 1\n"
             "var = x.var(dim=1, keepdim=True, unbiased=False)      # line 2\n"
             "x_hat = (x - mean) / torch.sqrt(var + self.eps)       # line 3\n"
             "return self.weight * x_hat + self.bias                # line 4",
        options=(
            "Line 2: dim=1 is the position axis, not the features",
            "Line 1: dim=-1 mixes the features of different tokens",
            "Line 3: eps should be added outside the square root",
            "Line 4: gamma and beta belong before the normalising",
        ),
        explanation="LayerNorm takes each token's statistics over its own d_model features, the last axis. Line 2 "
                    "takes the variance over dim=1, the L positions of a sequence: every token is then scaled by "
                    "how much one feature varies along the sentence, and depends on its neighbours. dim=-1 in line "
                    "1 is right (one mean per token); eps inside the root is nn.LayerNorm's formula; gamma and beta "
                    "come after normalising.",
        see="05 · residual_and_layernorm, “LayerNorm: each token on its own” and “Claim checks”",
    ),
    Question(
        text="A token of d = 4 features is x = [1, -1, 1, -1]; nn.LayerNorm(4) (weight 1, bias 0) returns "
             "about [1, -1, 1, -1]. What does the Annotated Transformer's LayerNorm, "
             "(x - x.mean(-1)) / (x.std(-1) + 1e-6), return?",
        options=(
            "about [0.87, -0.87, 0.87, -0.87]",
            "about [1.00, -1.00, 1.00, -1.00]",
            "about [1.15, -1.15, 1.15, -1.15]",
            "about [0.75, -0.75, 0.75, -0.75]",
        ),
        explanation="The mean is 0 and x.std is unbiased: sqrt((1 + 1 + 1 + 1) / (4 - 1)) = sqrt(4/3) = 1.155, so "
                    "every feature becomes ±1 / 1.155 = ±0.87, the factor sqrt((d - 1) / d) = sqrt(3/4). The biased "
                    "std (dividing by 4) would give ±1, as nn.LayerNorm does; 1.15 multiplies by the std instead of "
                    "dividing; 0.75 divides by the variance 4/3 instead of its square root.",
        see="05 · residual_and_layernorm, “Another LayerNorm you will meet: the Annotated Transformer's”",
    ),
)
