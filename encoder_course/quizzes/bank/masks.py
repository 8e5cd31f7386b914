"""Notebook 03 (masks): which line leaks padding, PyTorch's mask conventions, identical pads."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="This attention is meant to ignore padding. Which line is wrong?",
        code="real = token_ids != pad_id                                      # 1: (B, L)\n"
             "scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)               # 2: (B, L, L)\n"
             "scores = scores.masked_fill(~real[:, :, None], float('-inf'))  # 3\n"
             "weights = torch.softmax(scores, dim=-1)                         # 4",
        options=(
            "Line 3: it blocks pad queries' rows, not pad keys' columns",
            "Line 1: the mask should be token_ids == pad_id, True for the pads",
            "Line 2: with padding the scores should be divided by d_k, not √d_k",
            "Line 4: with a mask the softmax should run over dim=-2, the queries",
        ),
        explanation="real[:, :, None] has shape (B, L, 1): it broadcasts along the keys, so a pad query's whole "
                    "row becomes -inf (then NaN) while every real query still gives weight to the pad keys. "
                    "Blocking keys needs real[:, None, :], shape (B, 1, L). Line 1 is right for this code, which "
                    "inverts the mask with ~ where it fills; the scale has nothing to do with padding; and the "
                    "softmax must run over the keys, dim=-1.",
        see="03 · masks, “What the mask does inside attention”",
    ),
    Question(
        text="mask = ec.padding_mask(ids, pad_id) is True for real tokens. Which call gives attention that "
             "ignores the padding?",
        options=(
            "nn.MultiheadAttention(..., key_padding_mask=~mask[:, 0, 0])",
            "nn.MultiheadAttention(..., key_padding_mask=mask[:, 0, 0])",
            "F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)",
            "F.scaled_dot_product_attention(q, k, v, attn_mask=mask.float())",
        ),
        explanation="nn.MultiheadAttention reads a bool mask as True = blocked, so it needs the inverted mask "
                    "(what interop.to_torch_padding_mask returns). F.scaled_dot_product_attention reads True as "
                    "'may attend', so ~mask there attends only to the pads; and a float mask is added to the "
                    "scores, so mask.float() adds 1 to the real keys and 0 to the pads, blocking nothing.",
        see="03 · masks, “One argument name, two meanings”",
    ),
    Question(
        text="No padding mask. A query's scores are 0 against each of its 4 real keys and 0 against each of 12 "
             "identical pad keys. What share of its attention weight goes to the real tokens?",
        options=(
            "0.25, since 4 of the 16 equal scores are real ones",
            "1.00, since identical pads add no information",
            "0.75, since the 12 pads share a single weight",
            "0.06, since each real token gets 1/16 alone",
        ),
        explanation="Equal scores give equal weights: each of the 16 keys gets 1/16, so the 4 real keys get "
                    "4/16 = 0.25 together. Identical pads are still 12 separate keys in the softmax, each taking "
                    "its share; 1/16 is the share of a single real token, not of all four.",
        see="03 · masks, “Is it the pads' position vectors?”",
    ),
)
