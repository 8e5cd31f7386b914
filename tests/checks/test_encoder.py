"""The checker of ``Encoder``, the stack (notebook 08): every wrong answer named, every right one passing."""

from __future__ import annotations

import functools

import torch
from torch import nn

import encoder_course as ec
from encoder_course import checks

from .catalogue import SS, Catalogue
from .test_block import BlockRight
from .test_embeddings import EmbArange

C_ENC = checks.check_encoder_stack

CATALOGUE = Catalogue(C_ENC)
WRONG, RIGHT = CATALOGUE.wrong, CATALOGUE.right
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


class StackRight(SS):  # correct: the exercise's solution
    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = self.embeddings(token_ids, token_type_ids)  # (B, L, d_model)
        if mask is not None and mask.dim() == 2:
            mask = mask[:, None, None, :]  # (B, 1, 1, L)
        for layer in self.layers:
            x = layer(x, mask)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return x


def make_stack(kind):
    """The solution with one slip, chosen by ``kind``."""
    class Stack(SS):
        def forward(self, token_ids, mask=None, token_type_ids=None):
            x = self.embeddings(token_ids, None if kind == "no_types" else token_type_ids)
            if mask is not None and mask.dim() == 2:
                mask = mask[:, None, :, None] if kind == "mask_queries" else mask[:, None, None, :]
            if kind == "mask_inverted" and mask is not None:
                mask = ~mask
            layers = {"reversed": list(self.layers)[::-1], "first_only": [self.layers[0]] * len(self.layers),
                      "one_layer": list(self.layers)[:1], "no_layers": []}.get(kind, list(self.layers))
            if kind == "norm_first_of_all" and self.final_norm is not None:
                x = self.final_norm(x)
            first = x
            for layer in layers:
                x = layer(first if kind == "last_only" else x, None if kind == "no_mask" else mask)
                if kind == "norm_each_layer" and self.final_norm is not None:
                    x = self.final_norm(x)
            if self.final_norm is not None and kind not in ("no_final_norm", "norm_each_layer", "norm_first_of_all"):
                x = self.final_norm(x)
            return x

    Stack.__name__ = Stack.__qualname__ = f"Stack_{kind}"
    return Stack


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("enc-no-mask", C_ENC, "layer(x) without the mask", "the mask is not passed to the layers")(
    make_stack("no_mask"))
wrong("enc-mask-inverted", C_ENC, "layer(x, ~mask)", "the mask is inverted before the layers get it")(
    make_stack("mask_inverted"))
wrong("enc-mask-queries", C_ENC, "a (B, L) mask turned into (B, 1, L, 1)", "masks queries (rows) instead of keys")(
    make_stack("mask_queries"))
wrong("enc-reversed", C_ENC, "reversed(self.layers)", "the layers run in reverse order")(make_stack("reversed"))
wrong("enc-first-layer-only", C_ENC, "self.layers[0] applied N times", "the first layer is applied N times")(
    make_stack("first_only"))
wrong("enc-each-reads-embeddings", C_ENC, "every layer applied to the embeddings",
      "only the last layer's work reaches the output")(make_stack("last_only"))
wrong("enc-one-layer", C_ENC, "only self.layers[0]", "only the first layer runs")(make_stack("one_layer"))
wrong("enc-no-layers", C_ENC, "the embeddings returned", "your Encoder returns the embeddings")(
    make_stack("no_layers"))
wrong("enc-no-final-norm", C_ENC, "pre-LN without the final norm", "the final LayerNorm is missing")(
    make_stack("no_final_norm"))
wrong("enc-final-norm-each-layer", C_ENC, "final_norm after every layer", "applied after every layer")(
    make_stack("norm_each_layer"))
wrong("enc-final-norm-first", C_ENC, "final_norm on the embeddings", "applied to the embeddings, before the layers")(
    make_stack("norm_first_of_all"))
wrong("enc-no-types", C_ENC, "self.embeddings(token_ids): the token types dropped",
      "the token types do not reach the embeddings")(make_stack("no_types"))


@wrong("enc-layer-residual", C_ENC, "x = x + layer(x, mask)", "a residual is added around each layer")
class StackResidual(SS):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = self.embeddings(token_ids, token_type_ids)
        if mask is not None and mask.dim() == 2:
            mask = mask[:, None, None, :]
        for layer in self.layers:
            x = x + layer(x, mask)
        return x if self.final_norm is None else self.final_norm(x)


@wrong("enc-mask-2d-as-given", C_ENC, "a (B, L) mask passed to the layers as it is", "becomes (B, 1, 1, L)")
class StackMask2d(SS):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = self.embeddings(token_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.final_norm is None else self.final_norm(x)


@wrong("enc-mask-one-axis", C_ENC, "a (B, L) mask turned into (B, 1, L)", "becomes (B, 1, 1, L)")
class StackMaskOneAxis(StackMask2d):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        if mask is not None and mask.dim() == 2:
            mask = mask.unsqueeze(1)
        return super().forward(token_ids, mask, token_type_ids)


@wrong("enc-mask-float", C_ENC, "mask.float() before the layers", "reached the attention as numbers")
class StackMaskFloat(StackRight):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        return super().forward(token_ids, None if mask is None else mask.float(), token_type_ids)


@wrong("enc-mask-in-place", C_ENC, "mask.unsqueeze_(1).unsqueeze_(1) changes the caller's mask",
       "changed its input `mask` in place")
class StackMaskInPlace(StackMask2d):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        if mask is not None and mask.dim() == 2:
            mask.unsqueeze_(1).unsqueeze_(1)
        return super().forward(token_ids, mask, token_type_ids)


@wrong("enc-if-mask", C_ENC, "`if mask:` to test whether a mask was given", "asks whether a whole tensor is true")
class StackIfMask(StackMask2d):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        if mask and mask.dim() == 2:
            mask = mask[:, None, None, :]
        return super().forward(token_ids, mask, token_type_ids)


@wrong("enc-final-norm-always", C_ENC, "self.final_norm(x) in post-LN too",
       "a part the configuration leaves out is None")
class StackNormAlways(StackMask2d):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = self.embeddings(token_ids, token_type_ids)
        if mask is not None and mask.dim() == 2:
            mask = mask[:, None, None, :]
        for layer in self.layers:
            x = layer(x, mask)
        return self.final_norm(x)


@wrong("enc-shared-layers", C_ENC, "one block object listed n_layers times", "one block object listed 3 times shares")
class StackShared(StackRight):
    def __init__(self, config):
        super().__init__(config)
        self.layers = nn.ModuleList([self.layers[0]] * config.n_layers)


@wrong("enc-no-final-norm-built", C_ENC, "__init__ without the final norm",
       "`final_norm.weight` in its state dict")
class StackNoNormBuilt(StackRight):
    def __init__(self, config):
        super().__init__(config)
        self.final_norm = None


@wrong("enc-returns-tuple", C_ENC, "return x, mask", "tuple of 2 values")
class StackTuple(StackRight):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        return super().forward(token_ids, mask, token_type_ids), mask


@wrong("enc-returns-every-layer", C_ENC, "a list of every layer's output", "returned a Python list")
class StackList(SS):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = self.embeddings(token_ids, token_type_ids)
        if mask is not None and mask.dim() == 2:
            mask = mask[:, None, None, :]
        outs = []
        for layer in self.layers:
            x = layer(x, mask)
            outs.append(x)
        return outs


@wrong("enc-detached-embeddings", C_ENC, "self.embeddings(...).detach()", "cuts the gradient")
class StackDetached(StackRight):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = self.embeddings(token_ids, token_type_ids).detach()
        if mask is not None and mask.dim() == 2:
            mask = mask[:, None, None, :]
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.final_norm is None else self.final_norm(x)


@wrong("enc-eval-inside", C_ENC, "self.eval() inside forward", "no dropout happens during training")
class StackEval(StackRight):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        self.eval()
        return super().forward(token_ids, mask, token_type_ids)


@wrong("enc-kept-mask", C_ENC, "the first call's mask kept on self", "from one call to the next")
class StackKeptMask(StackRight):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        if mask is not None and not hasattr(self, "mask"):
            self.mask = mask if mask.dim() == 4 else mask[:, None, None, :]
        return super().forward(token_ids, getattr(self, "mask", None), token_type_ids)


wrong("enc-package", C_ENC, "the package's own class, passed as the answer", "calls the course's own Encoder")(
    type("Encoder", (ec.Encoder,), {}))


# Written unlike any listed slip: a probe names each.


def stack_with(*, embed=None, layers=None, finish=None):
    """The solution with its embedding step, its layers or its ending replaced (each a function of self)."""
    class Stack(StackRight):
        def forward(self, token_ids, mask=None, token_type_ids=None):
            x = embed(self, token_ids, mask, token_type_ids) if embed else self.embeddings(token_ids, token_type_ids)
            if mask is not None and mask.dim() == 2:
                mask = mask[:, None, None, :]
            for layer in layers(self) if layers else self.layers:
                x = layer(x, mask)
            return finish(self, x) if finish else x if self.final_norm is None else self.final_norm(x)

    return Stack


@wrong("enc-own-dropout-each-layer", C_ENC, "an nn.Dropout of the stack's own after every block",
       "a dropout of the stack's own drops on top of theirs")
class StackOwnDropout(StackRight):
    def __init__(self, config):
        super().__init__(config)
        self.drop = torch.nn.Dropout(config.dropout)

    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = self.drop(self.embeddings(token_ids, token_type_ids))
        if mask is not None and mask.dim() == 2:
            mask = mask[:, None, None, :]
        for layer in self.layers:
            x = self.drop(layer(x, mask))
        return x if self.final_norm is None else self.final_norm(x)


wrong("enc-own-functional-dropout", C_ENC, "F.dropout(embeddings, config.dropout, self.training) in the stack",
      "a dropout of the stack's own drops on top of theirs")(
    stack_with(embed=lambda self, ids, mask, types: torch.nn.functional.dropout(
        self.embeddings(ids, types), self.config.dropout, self.training)))
wrong("enc-train-rescaled", C_ENC, "the output divided by 1 - dropout when self.training",
      "something of the stack's own acts in train() mode")(
    stack_with(finish=lambda self, x: (x if self.final_norm is None else self.final_norm(x))
               / (1 - self.config.dropout if self.training else 1.0)))
@wrong("enc-probe-padding-zeroed", C_ENC, "the output multiplied by the padding mask at the end",
       "your output is right at the real tokens and 0 at the padding")
class StackPaddingZeroed(StackRight):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = super().forward(token_ids, mask, token_type_ids)
        if mask is None or mask.dim() != 4 or mask.shape[-2] != 1:
            return x
        return x * mask[:, 0, 0, :, None]


@wrong("enc-probe-post-ln-final-norm", C_ENC, "a final LayerNorm built and applied for post-LN too",
       "your output is the right one normalised once more")
class StackPostFinalNorm(StackRight):
    def __init__(self, config):
        super().__init__(config)
        if self.final_norm is None:
            self.final_norm = torch.nn.LayerNorm(config.d_model, eps=config.eps)


wrong("enc-probe-one-short", C_ENC, "for layer in self.layers[:-1]", "after 2 of its 3 layers")(
    stack_with(layers=lambda self: self.layers[:-1]))
wrong("enc-probe-embeddings-scaled", C_ENC, "the embeddings' output times sqrt(d_model) again in the stack",
      "what reaches the first layer is scaled")(
    stack_with(embed=lambda self, ids, mask, types: self.embeddings(ids, types) * self.config.d_model ** 0.5))
wrong("enc-probe-final-residual", C_ENC, "pre-LN ends with x = x + self.final_norm(x)",
      "the final LayerNorm has no residual around it")(
    stack_with(finish=lambda self, x: x if self.final_norm is None else x + self.final_norm(x)))
@wrong("enc-mask-none-unchecked", C_ENC, "if mask.dim() == 2: without `mask is not None`: mask=None crashes",
       "an optional argument left at its default")
class StackMaskNoneUnchecked(StackRight):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        if mask.dim() == 2:
            mask = mask[:, None, None, :]  # (B, 1, 1, L)
        return super().forward(token_ids, mask, token_type_ids)


@wrong("enc-probe-embeddings-added", C_ENC, "returns x + the embeddings' output: a residual around the whole stack",
       "a residual around the whole stack")
class StackEmbeddingsAdded(StackRight):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        embedded = self.embeddings(token_ids, token_type_ids)  # (B, L, d_model)
        return super().forward(token_ids, mask, token_type_ids) + embedded


wrong("enc-mask-as-types", C_ENC, "self.embeddings(token_ids, mask): the mask where token_type_ids go",
      "reached the embeddings as token_type_ids")(
    stack_with(embed=lambda self, ids, mask, types: self.embeddings(ids, mask)))
wrong("enc-dropout-in-eval", C_ENC, "F.dropout(self.embeddings(...), config.dropout): training=True by default",
      "some dropout of your own stays on in eval() mode")(
    stack_with(embed=lambda self, ids, mask, types: torch.nn.functional.dropout(self.embeddings(ids, types),
                                                                                 self.config.dropout)))
wrong("enc-probe-skips-first", C_ENC, "for layer in self.layers[1:]: the first block never runs",
      "your forward never uses it")(stack_with(layers=lambda self: self.layers[1:]))
wrong("enc-probe-every-other", C_ENC, "for layer in self.layers[::2]", "built with n_layers=1 your Encoder is right")(
    stack_with(layers=lambda self: self.layers[::2]))


@wrong("enc-probe-causal-too", C_ENC, "a causal mask added to whatever mask is given",
       "the mistake is in what reaches the attention")
class StackCausal(StackRight):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        length = token_ids.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool).tril()[None, None]  # (1, 1, L, L)
        if mask is not None and mask.dim() == 2:
            mask = mask[:, None, None, :]
        return super().forward(token_ids, causal if mask is None else mask & causal, token_type_ids)


@wrong("enc-probe-double-final-norm", C_ENC, "final_norm applied twice at the end",
       "so the mistake is in the final LayerNorm")
class StackNormTwice(StackRight):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = super().forward(token_ids, mask, token_type_ids)
        return x if self.final_norm is None else self.final_norm(x)


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


right("enc-right", C_ENC, "the exercise's solution")(StackRight)


@right("enc-enumerate-keywords", C_ENC, "enumerate over the layers, keyword arguments, unsqueeze twice")
class StackEnumerate(SS):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        hidden = self.embeddings(token_ids, token_type_ids=token_type_ids)
        if mask is not None and mask.ndim == 2:
            mask = mask.unsqueeze(1).unsqueeze(2)
        for _, layer in enumerate(self.layers):
            hidden = layer(hidden, mask=mask)
        if self.config.norm_first:
            hidden = self.final_norm(hidden)
        return hidden


@right("enc-reduce-view", C_ENC, "functools.reduce over the layers, mask.view(B, 1, 1, L)")
class StackReduce(SS):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        if mask is not None and mask.dim() == 2:
            mask = mask.view(mask.shape[0], 1, 1, mask.shape[1])
        x = functools.reduce(lambda h, layer: layer(h, mask), self.layers,
                             self.embeddings(token_ids, token_type_ids))
        return self.final_norm(x) if self.final_norm else x


@right("enc-while-index", C_ENC, "a while loop with an index into self.layers")
class StackWhile(SS):
    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = self.embeddings(token_ids, token_type_ids)
        m = mask[:, None, None] if mask is not None and len(mask.shape) == 2 else mask
        i = 0
        while i < len(self.layers):
            x = self.layers[i](x, m)
            i += 1
        return x if self.final_norm is None else self.final_norm(x)


@right("enc-own-parts", C_ENC, "the learner's own Embeddings and blocks, torch's LayerNorm at the end")
class StackOwn(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = EmbArange(config)
        self.layers = nn.ModuleList(
            BlockRight(config.d_model, config.n_heads, config.d_ff, dropout=config.dropout,
                       norm_first=config.norm_first, eps=config.eps) for _ in range(config.n_layers))
        self.final_norm = nn.LayerNorm(config.d_model, eps=config.eps) if config.norm_first else None

    def forward(self, token_ids, mask=None, token_type_ids=None):
        x = self.embeddings(token_ids, token_type_ids)
        if mask is not None and mask.dim() == 2:
            mask = mask[:, None, None, :]
        for layer in self.layers:
            x = layer(x, mask)
        return self.final_norm(x) if self.final_norm is not None else x


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
