"""Notebook 11 (pretrained): the name map, mean pooling, and the shapes of real attention maps."""

from ..quiz import Question

QUESTIONS = (
    Question(
        text="What does the name map return for this key of all-MiniLM-L6-v2's checkpoint (a Hugging Face "
             "BertModel), whose tensor has shape (384, 384)?",
        code='rename_key("encoder.layer.3.attention.output.dense.weight")',
        options=(
            "layers.3.attn.w_o.weight",
            "layers.3.ffn.w2.weight",
            "layers.3.norm1.weight",
            "layers.4.attn.w_o.weight",
        ),
        explanation="`attention.output` belongs to the attention sublayer: its `dense` is the output "
                    "projection W_O, our attn.w_o, 384 × 384. ffn.w2 is the layer's own `output.dense`, "
                    "of shape (384, 1536); norm1 is `attention.output.LayerNorm`, a vector of 384; and BERT "
                    "counts its layers from 0, as we do, so layer 3 stays layer 3.",
        see="11 · pretrained, “The name map”",
    ),
    Question(
        text="One sentence of a padded batch has the token vectors [[1, 2], [3, 4], [5, 6], [9, 0]] and the "
             "mask [True, True, True, False] (False = padding). What does mean pooling, as all-MiniLM-L6-v2 "
             "does it, give before normalising?",
        options=(
            "[3.00, 4.00]",
            "[4.50, 3.00]",
            "[2.25, 3.00]",
            "[1.00, 2.00]",
        ),
        explanation="Average over the three real tokens only: (1 + 3 + 5) / 3 = 3 and (2 + 4 + 6) / 3 = 4. "
                    "[4.50, 3.00] averages the padded slot too (18 / 4, 12 / 4), so the vector would depend "
                    "on the batch; [2.25, 3.00] zeroes the padded slot but still divides by all 4 slots; "
                    "[1.00, 2.00] is the first token's vector, the [CLS] vector, which this model was not "
                    "trained to use.",
        see="11 · pretrained, “From a sentence to a vector” and “[CLS] or the mean?”",
    ),
    Question(
        text="For all-MiniLM-L6-v2 (6 layers, 12 heads, d_model 384) and a batch of token ids of shape "
             "(2, 9), what does encoder.attention_maps(ids) return?",
        options=(
            "6 tensors, each (2, 12, 9, 9)",
            "12 tensors, each (2, 6, 9, 9)",
            "6 tensors, each (2, 12, 9, 32)",
            "6 tensors, each (12, 2, 9, 9)",
        ),
        explanation="One tensor per layer, each with one weight per sentence, head, query and key: "
                    "(B, H, L, L) = (2, 12, 9, 9), the batch first as everywhere in the course. 32 is d_head "
                    "(384 / 12), the width of each head's queries and keys, not of its weights; 12 tensors would "
                    "be one per head, but the heads of a layer come together.",
        see="11 · pretrained, “Real attention maps”",
    ),
)
