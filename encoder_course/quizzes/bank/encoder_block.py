"""Notebook 07 (the encoder block): reading a block's forward, counting its parameters, dropout's values."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="A learner wrote this forward for a block built with norm_first=True. What is it?",
        code="def forward(self, x, mask=None):\n"
             "    h = self.norm1(x)\n"
             "    x = h + self.dropout1(self.attn(h, mask))\n"
             "    h = self.norm2(x)\n"
             "    return h + self.dropout2(self.ffn(h))",
        options=(
            "Not pre-LN: the residual adds norm1(x), not x, so the stream is normalised",
            "Correct pre-LN: each sublayer reads a normalised input, and its output is added",
            "Correct post-LN: each LayerNorm comes right before its residual add",
            "Correct pre-LN, but the final LayerNorm that every pre-LN layer ends with is missing",
        ),
        explanation="In pre-LN the stream itself is never normalised inside a block: x = x + attn(norm1(x)), "
                    "x = x + ffn(norm2(x)). Here both residual adds start from the normalised h, so the layer "
                    "throws away the un-normalised stream (the checker calls it \"the residual adds the "
                    "normalised x\"). Post-LN normalises after the add, norm1(x + attn(x)); the final LayerNorm "
                    "of a pre-LN model comes once after the whole stack, not in every layer.",
        see="07 · encoder_block, “Two places for the LayerNorm” and “Exercise: write EncoderBlock”",
    ),
    Question(
        text="How many parameters has ec.EncoderBlock(d_model=64, n_heads=4, d_ff=256): attention, FFN and "
             "two LayerNorms, biases included?",
        options=(
            "49,984",
            "49,728",
            "49,152",
            "50,240",
        ),
        explanation="Attention: 4 · 64² weights + 4 · 64 biases = 16,640. FFN: 2 · 64 · 256 weights + 256 + 64 "
                    "biases = 33,088. Two LayerNorms, each gamma and beta of 64: 256. Total 49,984 (the same as "
                    "nn.TransformerEncoderLayer). 49,728 leaves out the LayerNorms; 49,152 counts the weight "
                    "matrices only; 50,240 counts each LayerNorm twice.",
        see="07 · encoder_block, “The same two layers as code”; the counts of 04 · multi_head and "
            "06 · feed_forward",
    ),
    Question(
        text="In train() mode, nn.Dropout(p=0.2) is applied to a large tensor of ones. Which values does its "
             "output contain?",
        options=(
            "0 and 1.25",
            "0 and 1",
            "0 and 0.8",
            "0.2 and 1",
        ),
        explanation="Dropout zeroes each value with probability p = 0.2 and scales the survivors by "
                    "1 / (1 - p) = 1.25, so the expected value stays 1 and eval() mode (no dropout, no scaling) "
                    "sees activations of the same size. Without the scaling the survivors would stay 1; 0.8 is "
                    "1 - p, the keep probability, not the scale.",
        see="07 · encoder_block, “Claim check: dropout is on in train() and off in eval()”",
    ),
)
