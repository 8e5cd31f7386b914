"""The exercises, each declared once: what the learner writes, where, and what it is checked against.

Everything in the checkers that depends on the exercise (the name in messages, whether a class or a
function is expected, the hint shown on a shape error) reads it from here. Adding an exercise is one
entry below and one checker file ``checks/<model file>.py`` with ``@_checker("<key>")`` on
``check_<key>``, exported from ``checks/__init__.py``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Exercise:
    key: str  # "multi_head_attention": check_<key> is the checker's name, and its pass line says it
    name: str  # "MultiHeadAttention": what the learner defines, and what messages call it
    notebook: str  # "04_multi_head": the notebook whose exercise it is
    kind: str  # "function" or "class" (a class is passed itself, not a module built from it)
    reference: str  # "encoder_course.multi_head.MultiHeadAttention": the package's answer, imported lazily
    shape_hint: str  # shown when the learner's code raises a shape error
    # Whether a passing answer is saved to the learner's workspace (encoder_course.yours) as a part of
    # their own encoder package. Said for every exercise: a new exercise is not a part unless it says so.
    part: bool
    uses: tuple[str, ...] = ()  # keys of the earlier parts its saved file imports (the learner's own)
    mask_hint: str = ""  # added to the shape hint when the failing call was given a mask
    # Other objects of the package that compute this exercise's answer, out of reach like the reference
    # while the learner's code runs (dotted paths; a class locks all its methods).
    locked: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in ("function", "class"):
            raise ValueError(f"exercise {self.key!r}: kind must be 'function' or 'class', got {self.kind!r}")

    def load_reference(self):
        """The package's own answer (the object ``reference`` names)."""
        return _load(self.reference)

    def load_locked(self) -> dict:
        """``{short name: object}`` for the reference and every object in ``locked``."""
        return {path.rpartition(".")[2]: _load(path) for path in (self.reference, *self.locked)}


def _load(path: str):
    module, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module), attr)


_DECLARED = (
    Exercise(
        key="sinusoidal_positions", name="sinusoidal_positions", notebook="01_tokens_and_positions",
        kind="function", reference="encoder_course.positions.sinusoidal_positions", part=True,
        shape_hint="The positions form a column (seq_len, 1) and the frequencies a row "
                   "(d_model / 2,), so pos / freq has shape (seq_len, d_model / 2).",
    ),
    Exercise(
        key="scaled_dot_product_attention", name="scaled_dot_product_attention", notebook="02_attention",
        kind="function", reference="encoder_course.attention.scaled_dot_product_attention", part=True,
        shape_hint="To swap only the last two dimensions use k.transpose(-2, -1) (k.T "
                   "and k.t() do something else for more than 2 dimensions).",
        mask_hint="The mask already lines up with the scores (..., L_q, L_k), keys last: use it "
                  "as given, without transposing or reshaping it, in "
                  "scores.masked_fill(~mask, ...), which broadcasts it (indexing with "
                  "scores[~mask] does not).",
    ),
    Exercise(
        key="padding_mask", name="padding_mask", notebook="03_masks",
        kind="function", reference="encoder_course.masks.padding_mask", part=True,
        shape_hint="Check which dimension each operation works on.",
    ),
    Exercise(
        key="causal_mask", name="causal_mask", notebook="03_masks",
        kind="function", reference="encoder_course.masks.causal_mask", part=True,
        shape_hint="Check which dimension each operation works on.",
    ),
    Exercise(
        key="multi_head_attention", name="MultiHeadAttention", notebook="04_multi_head",
        kind="class", reference="encoder_course.multi_head.MultiHeadAttention", part=True,
        uses=("scaled_dot_product_attention",),
        shape_hint="Take B and L from x.shape (never fixed numbers); split (B, L, d_model) into "
                   "(B, L, H, d_head) and transpose to (B, H, L, d_head); merge back with transpose(1, 2) "
                   "and reshape(B, L, d_model); use k.transpose(-2, -1) for the scores.",
        mask_hint="The mask may be any shape that broadcasts to (B, H, L, L), such as (B, 1, 1, L) or "
                  "(L, L): pass it on as given.",
    ),
    Exercise(
        key="layer_norm", name="LayerNorm", notebook="05_residual_and_layernorm",
        kind="class", reference="encoder_course.layer_norm.LayerNorm", part=True,
        shape_hint="Normalise over the last dimension whatever the rank of x (dim=-1, not a fixed number); "
                   "a mean or variance taken without keepdim=True no longer lines up with x: "
                   "x.mean(dim=-1, keepdim=True).",
    ),
    Exercise(
        key="feed_forward", name="FeedForward", notebook="06_feed_forward",
        kind="class", reference="encoder_course.feed_forward.FeedForward", part=True,
        shape_hint="The layer w1 maps d_model to d_ff and w2 maps d_ff back to d_model: apply w1 first, w2 last. "
                   "nn.Linear stores its weight as (out_features, in_features), so by hand it is "
                   "x @ w1.weight.T + w1.bias; simplest is to call self.w1(x).",
    ),
    Exercise(
        key="encoder_block", name="EncoderBlock", notebook="07_encoder_block",
        kind="class", reference="encoder_course.block.EncoderBlock", part=True,
        uses=("multi_head_attention", "layer_norm", "feed_forward"),
        shape_hint="The sublayers self.attn(x, mask) and self.ffn(x) both take and return (B, L, d_model); "
                   "check what you pass to each.",
        mask_hint="Pass the block's mask on to self.attn as given (no squeeze, view or transpose): the "
                  "attention broadcasts it.",
    ),
    Exercise(
        key="embeddings", name="Embeddings", notebook="08_stacking",
        kind="class", reference="encoder_course.encoder.Embeddings", part=True,
        uses=("sinusoidal_positions", "layer_norm"),
        shape_hint="self.token(token_ids) is (B, L, d_model). The position table has max_len rows and a "
                   "sequence of L = token_ids.shape[1] tokens takes its first L, table[:L], (L, d_model), which "
                   "broadcasts over the batch; the token types are (B, L, d_model) like the tokens.",
    ),
    Exercise(
        key="encoder_stack", name="Encoder", notebook="08_stacking",
        kind="class", reference="encoder_course.encoder.Encoder", part=True,
        uses=("embeddings", "encoder_block", "layer_norm"),
        shape_hint="self.embeddings(token_ids, token_type_ids) gives x (B, L, d_model), and every layer(x, mask) "
                   "takes and returns (B, L, d_model).",
        mask_hint="A (B, L) padding mask becomes (B, 1, 1, L), mask[:, None, None, :], once, before the layers; "
                  "a mask with 4 dimensions already lines up with the scores (B, H, L, L): pass it to every "
                  "layer as given.",
    ),
    Exercise(
        key="parameter_count", name="parameter_count", notebook="08_stacking",
        kind="function", reference="encoder_course.measure.counting.parameter_count", part=True,
        locked=("encoder_course.measure.counting.analytic_parameter_counts",
                "encoder_course.measure.counting.count_parameters", "encoder_course.encoder.Encoder"),
        shape_hint="Count with plain Python ints from the config's fields (config.d_model, config.d_ff, "
                   "config.n_layers, ...): no tensors are needed.",
    ),
    Exercise(
        key="online_softmax_attention", name="online_softmax_attention", notebook="09_cost",
        kind="function", reference="encoder_course.blockwise.online_softmax_attention", part=True,
        shape_hint="Take one block of keys and values at a time, k[..., start:start + block_size, :] and "
                   "v[..., start:start + block_size, :]; keep the running max and sum with keepdim=True, "
                   "(..., L_q, 1), so they line up with the block's scores (..., L_q, block) and with the "
                   "output (..., L_q, d_v).",
        mask_hint="The mask broadcasts to the scores (..., L_q, L_k), keys last: slice its last axis per "
                  "block, mask[..., start:start + block_size] (expand it to the scores' shape first if you "
                  "like; never transpose it).",
    ),
    Exercise(
        key="mean_pool", name="mean_pool", notebook="10_training",
        kind="function", reference="encoder_course.pooling.mean_pool", part=True,
        shape_hint="hidden is (B, L, d) and mask (B, L): give the mask a trailing axis, mask[..., None] "
                   "(B, L, 1), so it lines up with hidden; sum over the tokens (dim=1) and divide by each "
                   "sequence's number of real tokens, kept as (B, 1) (keepdim=True).",
    ),
    Exercise(
        key="masked_token_loss", name="masked_token_loss", notebook="10_training",
        kind="function", reference="encoder_course.measure.training.masked_token_loss", part=True,
        shape_hint="F.cross_entropy wants the classes on dim 1: pick the real tokens with logits[mask] "
                   "(N, C) and labels[mask] (N,), or flatten to (B * L, C) and (B * L,).",
    ),
    Exercise(
        key="rename_key", name="rename_key", notebook="11_pretrained",
        kind="function", reference="encoder_course.interop.rename_key", part=True,
        locked=("encoder_course.interop.name_map", "encoder_course.interop.checkpoint_state_dict"),
        shape_hint="key.split('.') gives the parts of a name: ['encoder', 'layer', '11', 'attention', "
                   "'self', 'query', 'weight']; the layer number is the third part.",
    ),
    Exercise(
        key="mask_tokens", name="mask_tokens", notebook="12_real_text",
        kind="function", reference="encoder_course.measure.masked_lm.mask_tokens", part=True,
        shape_hint="Draw one random number per position, torch.rand(token_ids.shape, generator=generator) (B, L), "
                   "and compare it with p to choose; a second draw of the same shape splits the chosen ones "
                   "80/10/10; torch.randint(vocab_size, token_ids.shape, generator=generator) gives the random ids.",
    ),
    Exercise(
        key="contrastive_loss", name="contrastive_loss", notebook="12_real_text",
        kind="function", reference="encoder_course.measure.contrastive.contrastive_loss", part=True,
        shape_hint="queries (B, d) and passages (P, d): normalise both over d (dim=-1), then "
                   "queries @ passages.T is (B, P), one row of scores per query; the right column of row i "
                   "is i, torch.arange(B).",
    ),
    Exercise(
        key="apply_rotary", name="apply_rotary", notebook="13_modern_encoder",
        kind="function", reference="encoder_course.positions.apply_rotary", part=True,
        shape_hint="x[..., 0::2] and x[..., 1::2] are the pairs' two halves, (..., L, d/2) each; the angles "
                   "positions[:, None] * inv_freq are (L, d/2) and broadcast over the leading dimensions.",
    ),
    Exercise(
        key="sliding_window_mask", name="sliding_window_mask", notebook="13_modern_encoder",
        kind="function", reference="encoder_course.masks.sliding_window_mask", part=True,
        shape_hint="torch.arange(length) as a column minus itself as a row, i[:, None] - i[None, :], gives "
                   "every (query, key) offset, an (L, L) table.",
    ),
)


def _index(declared) -> dict[str, Exercise]:
    """By key, in course order; a key or a name declared twice is an error."""
    by_key: dict[str, Exercise] = {}
    names: set[str] = set()
    for ex in declared:
        if ex.key in by_key or ex.name in names:
            raise ValueError(f"exercise {ex.key!r} ({ex.name}) is declared twice")
        by_key[ex.key] = ex
        names.add(ex.name)
    return by_key


#: Every exercise, by key, in course order.
EXERCISES: dict[str, Exercise] = _index(_DECLARED)


def exercise(key: str) -> Exercise:
    """The exercise declared under ``key``; an unknown key raises KeyError."""
    try:
        return EXERCISES[key]
    except KeyError:
        raise KeyError(f"no exercise {key!r} is declared in checks/registry.py; known: "
                       f"{', '.join(EXERCISES)}") from None


def exercise_named(name: str) -> Exercise:
    """The exercise whose learner-facing name (what messages say) is ``name``; unknown raises KeyError."""
    for ex in EXERCISES.values():
        if ex.name == name:
            return ex
    raise KeyError(f"no exercise named {name!r} is declared in checks/registry.py; known: "
                   f"{', '.join(ex.name for ex in EXERCISES.values())}")
