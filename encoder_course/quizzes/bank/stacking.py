"""Notebook 08 (stacking): counting a layer, a pre-LN stack, and a shared stack."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="How many parameters does one BERT-base layer have (d_model = 768, d_ff = 3072, every linear map "
             "with its bias, and its two LayerNorms)?",
        options=(
            "7,087,872",
            "7,084,800",
            "7,077,888",
            "9,450,240",
        ),
        explanation="Attention is 4 · (768² + 768) = 2,362,368; the FFN is 768 · 3072 + 3072 + 3072 · 768 + 768 = "
                    "4,722,432; the two LayerNorms are 2 · 2 · 768 = 3,072: 7,087,872 in all. 7,084,800 forgets the "
                    "LayerNorms, 7,077,888 counts only the weight matrices (no biases, no norms), and 9,450,240 "
                    "gives the FFN a third matrix, as a SwiGLU layer would have.",
        see="08 · stacking, “Counting BERT-base exactly”",
    ),
    Question(
        text="How many more parameters does the second encoder have than the first?",
        code="config = ec.EncoderConfig(vocab_size=1000, max_len=64, d_model=64, n_heads=4,\n"
             "                          d_ff=256, n_layers=4)  # post-LN, sinusoidal positions\n"
             "first = ec.Encoder(config)\n"
             "second = ec.Encoder(config.replace(norm_first=True))",
        options=(
            "128 more parameters",
            "512 more parameters",
            "Zero more parameters",
            "256 more parameters",
        ),
        explanation="Pre-LN and post-LN blocks have the same two LayerNorms each; they only use them in other places. "
                    "What pre-LN adds is one final LayerNorm after the last block: γ and β of width 64, 128 "
                    "parameters. 512 would be one extra LayerNorm per layer, 256 two final norms; and the final norm "
                    "is a real module with parameters, so the count does change.",
        see="08 · stacking, “The final LayerNorm belongs to pre-LN stacks”",
    ),
    Question(
        text="One EncoderBlock(64, 4, 256) has 49,984 parameters. What does the last line print?",
        code="block = ec.EncoderBlock(64, 4, 256)\n"
             "layers = nn.ModuleList([block] * 6)\n"
             "print(sum(p.numel() for p in layers.parameters()))",
        options=(
            "49,984",
            "299,904",
            "33,088",
            "16,640",
        ),
        explanation="[block] * 6 is a list with the same module object six times, so the six layers share one set of "
                    "weights, as ALBERT does, and parameters() lists each tensor once: 49,984. Six separate blocks "
                    "would have 6 · 49,984 = 299,904. 33,088 is the block's FFN alone and 16,640 its attention.",
        see="08 · stacking, “Claim check: N layers, N sets of weights” and the ALBERT aside",
    ),
)
