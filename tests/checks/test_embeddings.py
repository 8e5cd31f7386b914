"""The checker of ``Embeddings`` (notebook 08): every wrong answer named, every right one passing."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

import encoder_course as ec
from encoder_course import checks

from .catalogue import ES, Catalogue, from_cell

C_EMB = checks.check_embeddings

CATALOGUE = Catalogue(C_EMB)
WRONG, RIGHT = CATALOGUE.wrong, CATALOGUE.right
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


class EmbRight(ES):  # correct: the exercise's solution
    def forward(self, token_ids, token_type_ids=None):
        cfg = self.config
        length = token_ids.shape[1]
        x = self.token(token_ids)  # (B, L, d_model)
        if cfg.scale_embeddings:
            x = x * math.sqrt(cfg.d_model)
        x = x + self.table()[:length]
        if self.token_type is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(token_ids)
            x = x + self.token_type(token_type_ids)
        if self.norm is not None:
            x = self.norm(x)
        return self.dropout(x)


def make_emb(kind):
    """The solution with one slip, chosen by ``kind``."""
    class Emb(ES):
        def forward(self, token_ids, token_type_ids=None):
            cfg, given = self.config, token_type_ids is not None
            length = token_ids.shape[1]
            table = self.table()
            x = self.token(token_ids)
            scale = math.sqrt(cfg.d_model)
            if kind == "always_scale" or (cfg.scale_embeddings and kind != "no_scale"):
                x = {"scale_d": x * cfg.d_model, "scale_divided": x / scale}.get(kind, x * scale)
            pos = {"no_positions": 0.0, "position_zero": table[0], "from_one": table[1:length + 1],
                   "reversed": table[:length].flip(0), "by_token": self.position(token_ids)
                   if kind == "by_token" else None, "not_sliced": table,
                   "by_batch": table[:token_ids.shape[0]], "unsqueezed": table[:length].unsqueeze(1)}.get(
                       kind, table[:length])
            x = x + pos
            if kind == "norm_before_positions" and self.norm is not None:
                x = self.norm(self.token(token_ids))
                x = x + table[:length]
            if self.token_type is not None and kind != "no_types":
                if token_type_ids is None and kind not in ("types_only_given", "norm_only_with_types"):
                    token_type_ids = torch.zeros_like(token_ids)
                if token_type_ids is not None:
                    table_of_types = self.token if kind == "types_from_token_table" else self.token_type
                    if kind == "norm_before_types" and self.norm is not None:
                        x = self.norm(x)
                    x = x + table_of_types(token_type_ids)
            if kind == "scale_all" and cfg.scale_embeddings:
                x = (self.token(token_ids) + table[:length]
                     + (self.token_type(token_type_ids) if self.token_type is not None else 0)) * scale
            if self.norm is not None and kind not in ("no_norm", "norm_before_types", "norm_before_positions") \
                    and (kind != "norm_only_with_types" or given):
                x = self.norm(x)
            if kind == "norm_twice" and self.norm is not None:
                x = self.norm(x)
            return self.dropout(x)

    Emb.__name__ = Emb.__qualname__ = f"Emb_{kind}"
    return Emb


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("emb-no-positions", C_EMB, "no position vectors added", "the position vectors are not added")(
    make_emb("no_positions"))
wrong("emb-position-zero", C_EMB, "table[0] added to every token", "every token gets the vector of position 0")(
    make_emb("position_zero"))
wrong("emb-positions-from-one", C_EMB, "table[1:L + 1]", "the positions start at 1")(make_emb("from_one"))
wrong("emb-positions-reversed", C_EMB, "table[:L].flip(0)", "the positions are in reverse order")(
    make_emb("reversed"))
wrong("emb-positions-by-token", C_EMB, "self.position(token_ids): positions looked up by token id",
      "Positions are not looked up by token id")(make_emb("by_token"))
wrong("emb-positions-not-sliced", C_EMB, "the whole table added, x + table",
      "the whole position table (max_len = 12 rows)")(make_emb("not_sliced"))
wrong("emb-positions-by-batch", C_EMB, "table[:token_ids.shape[0]]", "sliced with the batch size")(
    make_emb("by_batch"))
wrong("emb-positions-unsqueezed", C_EMB, "table[:L].unsqueeze(1): (L, 1, d) against (B, L, d)",
      "a size of B met a size of L")(make_emb("unsqueezed"))
wrong("emb-probe-norm-twice", C_EMB, "self.norm applied to the sum, then once more before the dropout",
      "the LayerNorm of the position rows applied twice")(make_emb("norm_twice"))
wrong("emb-probe-norm-only-with-types", C_EMB,
      "the types and self.norm indented under `if token_type_ids is not None:`",
      "must be applied whether or not token_type_ids is given")(make_emb("norm_only_with_types"))
wrong("emb-no-scale", C_EMB, "no sqrt(d_model) when scale_embeddings=True",
      "are not multiplied by sqrt(d_model) = 4")(make_emb("no_scale"))
wrong("emb-always-scale", C_EMB, "sqrt(d_model) whatever the config says",
      "but this config has scale_embeddings=False")(make_emb("always_scale"))
wrong("emb-scale-d", C_EMB, "tokens times d_model", "multiplied by d_model = 16, not by its square root")(
    make_emb("scale_d"))
wrong("emb-scale-divided", C_EMB, "tokens divided by sqrt(d_model)", "the 2017 paper multiplies them")(
    make_emb("scale_divided"))
wrong("emb-scale-all", C_EMB, "(tokens + positions + types) * sqrt(d_model)",
      "are multiplied by sqrt(d_model) too")(make_emb("scale_all"))
wrong("emb-no-types", C_EMB, "token types never added", "the token-type vectors are not added")(
    make_emb("no_types"))
wrong("emb-types-only-given", C_EMB, "no type vector when token_type_ids is None",
      "Every token is then in segment 0")(make_emb("types_only_given"))
wrong("emb-types-from-token-table", C_EMB, "self.token(token_type_ids)", "looked up in the token table")(
    make_emb("types_from_token_table"))
wrong("emb-no-norm", C_EMB, "the LayerNorm left out", "the LayerNorm is missing")(make_emb("no_norm"))
wrong("emb-norm-before-positions", C_EMB, "norm(tokens) + positions + types",
      "before the positions (and token types) are added")(make_emb("norm_before_positions"))
wrong("emb-norm-before-types", C_EMB, "norm(tokens + positions) + types",
      "the LayerNorm is applied before the token-type vectors are added")(make_emb("norm_before_types"))


@wrong("emb-dropout-in-eval", C_EMB, "F.dropout(x, p) without training=", "dropout is active in eval mode")
class EmbEvalDropout(EmbRight):
    def forward(self, token_ids, token_type_ids=None):
        self.dropout.eval()
        return F.dropout(super().forward(token_ids, token_type_ids), self.config.dropout)


@wrong("emb-no-dropout", C_EMB, "no dropout at all", "no dropout is happening during training")
class EmbNoDropout(EmbRight):
    def forward(self, token_ids, token_type_ids=None):
        self.dropout.eval()
        return super().forward(token_ids, token_type_ids)


@wrong("emb-dropout-before-norm", C_EMB, "self.norm(self.dropout(x))", "dropout is not the last step")
class EmbDropoutFirst(ES):
    def forward(self, token_ids, token_type_ids=None):
        x = self.token(token_ids) * (math.sqrt(self.config.d_model) if self.config.scale_embeddings else 1.0)
        x = self.dropout(x + self.table()[:token_ids.shape[1]])
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.norm(x) if self.norm is not None else x


@wrong("emb-dropout-keep-probability", C_EMB, "F.dropout(x, 1 - p, self.training)", "as if p were 1")
class EmbKeepProb(EmbRight):
    def forward(self, token_ids, token_type_ids=None):
        self.dropout.eval()
        x = super().forward(token_ids, token_type_ids)
        return F.dropout(x, 1 - self.config.dropout, self.training)


@wrong("emb-dropout-scaled-again", C_EMB, "dropout's output divided by (1 - p) once more in training",
       "keeps each value with probability 1 - p and scales it by")
class EmbScaledAgain(EmbRight):
    def forward(self, token_ids, token_type_ids=None):
        x = super().forward(token_ids, token_type_ids)
        return x / (1 - self.config.dropout) if self.training else x


@wrong("emb-norm-always", C_EMB, "self.norm(x) even when the config has no norm",
       "a part the configuration leaves out is None")
class EmbNormAlways(EmbRight):
    def forward(self, token_ids, token_type_ids=None):
        x = self.token(token_ids) * (math.sqrt(self.config.d_model) if self.config.scale_embeddings else 1.0)
        x = x + self.table()[:token_ids.shape[1]]
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.dropout(self.norm(x))


@wrong("emb-learned-table-always", C_EMB, "self.position.weight for sinusoidal configs too",
       "self.position exists only for learned positions")
class EmbLearnedAlways(ES):
    def forward(self, token_ids, token_type_ids=None):
        x = self.token(token_ids) * (math.sqrt(self.config.d_model) if self.config.scale_embeddings else 1.0)
        x = x + self.position.weight[:token_ids.shape[1]]
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.dropout(self.norm(x) if self.norm is not None else x)


@wrong("emb-returns-tuple", C_EMB, "return x, token_type_ids", "tuple of 2 values")
class EmbTuple(EmbRight):
    def forward(self, token_ids, token_type_ids=None):
        return super().forward(token_ids, token_type_ids), token_type_ids


@wrong("emb-numpy", C_EMB, "returns a NumPy array", "returned a NumPy ndarray")
class EmbNumpy(EmbRight):
    def forward(self, token_ids, token_type_ids=None):
        return super().forward(token_ids, token_type_ids).detach().numpy()


@wrong("emb-positions-detached", C_EMB, "table[:L].detach(): the positions never learn", "cuts the gradient")
class EmbDetached(ES):
    def forward(self, token_ids, token_type_ids=None):
        x = self.token(token_ids) * (math.sqrt(self.config.d_model) if self.config.scale_embeddings else 1.0)
        x = x + self.table()[:token_ids.shape[1]].detach()
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.dropout(self.norm(x) if self.norm is not None else x)


@wrong("emb-cached-positions", C_EMB, "the positions of the first call kept on self and reused",
       "from one call to the next")
class EmbCached(EmbRight):
    def table(self):
        if not hasattr(self, "kept"):
            self.kept = super().table()[:7]
        return self.kept


@wrong("emb-sinusoids-saved", C_EMB, "the sinusoids registered as a persistent buffer", "is not a weight")
class EmbPersistent(EmbRight):
    def __init__(self, config):
        super().__init__(config)
        if config.positions == "sinusoidal":
            self.register_buffer("sinusoids", ec.sinusoidal_positions(config.max_len, config.d_model))


wrong("emb-package", C_EMB, "the package's own class, passed as the answer", "calls the course's own")(
    type("Embeddings", (ec.Embeddings,), {}))

EMB_NO_MATH = '''
class Embeddings(ES):
    def forward(self, token_ids, token_type_ids=None):
        x = self.token(token_ids)
        if self.config.scale_embeddings:
            x = x * math.sqrt(self.config.d_model)
        x = x + self.table()[:token_ids.shape[1]]
        if self.token_type is not None:
            types = torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids
            x = x + self.token_type(types)
        return self.dropout(self.norm(x) if self.norm is not None else x)
'''
wrong("emb-math-not-imported", C_EMB, "math.sqrt in a cell whose notebook never imported math",
      "`math` is not imported")(from_cell(EMB_NO_MATH, ES=ES, torch=torch))


# Written unlike any listed slip: a probe names each.


@wrong("emb-probe-positions-shifted-two", C_EMB, "table[2:L + 2]", "position 0 gets row 2")
class EmbShifted(EmbRight):
    def table(self):
        return super().table()[2:]


@wrong("emb-probe-types-doubled", C_EMB, "2 * self.token_type(...)", "the mistake is in the token types")
class EmbTypesTwice(ES):
    def forward(self, token_ids, token_type_ids=None):
        x = self.token(token_ids) * (math.sqrt(self.config.d_model) if self.config.scale_embeddings else 1.0)
        x = x + self.table()[:token_ids.shape[1]]
        if self.token_type is not None:
            x = x + 2 * self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.dropout(self.norm(x) if self.norm is not None else x)


@wrong("emb-probe-scale-isqrt", C_EMB, "x * math.isqrt(d_model): the square root rounded down (4 for 24)",
       "the mistake is in the token vectors")
class EmbIsqrt(EmbRight):
    def forward(self, token_ids, token_type_ids=None):
        if not self.config.scale_embeddings:
            return super().forward(token_ids, token_type_ids)
        x = self.token(token_ids) * math.isqrt(self.config.d_model) + self.table()[:token_ids.shape[1]]
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.dropout(x if self.norm is None else self.norm(x))


@wrong("emb-probe-default-eps", C_EMB, "F.layer_norm(x, (d,), norm.weight, norm.bias): config.eps ignored",
       "what follows them (the LayerNorm) changes them")
class EmbDefaultEps(EmbRight):
    def forward(self, token_ids, token_type_ids=None):
        x = self.token(token_ids) * (math.sqrt(self.config.d_model) if self.config.scale_embeddings else 1.0)
        x = x + self.table()[:token_ids.shape[1]]
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        if self.norm is not None:
            x = F.layer_norm(x, x.shape[-1:], self.norm.weight, self.norm.bias)  # eps left at 1e-5
        return self.dropout(x)


@wrong("emb-probe-tokens-squared", C_EMB, "the token vectors squared before the sum",
       "the mistake is in the token vectors")
class EmbTokensSquared(ES):
    def forward(self, token_ids, token_type_ids=None):
        x = self.token(token_ids) ** 2 * (math.sqrt(self.config.d_model) if self.config.scale_embeddings else 1.0)
        x = x + self.table()[:token_ids.shape[1]]
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.dropout(self.norm(x) if self.norm is not None else x)


@wrong("emb-probe-sinusoids-halved", C_EMB, "half the sinusoidal table added",
       "the position vectors are changed before they are added")
class EmbHalfSinusoids(EmbRight):
    def table(self):
        table = super().table()
        return table if self.config.positions == "learned" else 0.5 * table


@wrong("emb-probe-sinusoids-shifted", C_EMB, "sinusoids[3:L + 3]", "position 0 gets row 3")
class EmbShiftedSinusoids(EmbRight):
    def table(self):
        table = super().table()
        return table if self.config.positions == "learned" else table[3:]


@wrong("emb-probe-scale-half-d", C_EMB, "tokens times sqrt(d_model / 2)",
       "your token vectors are multiplied by 2.828")
class EmbHalfD(ES):
    def forward(self, token_ids, token_type_ids=None):
        x = self.token(token_ids)
        if self.config.scale_embeddings:
            x = x * math.sqrt(self.config.d_model / 2)
        x = x + self.table()[:token_ids.shape[1]]
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.dropout(self.norm(x) if self.norm is not None else x)


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


right("emb-right", C_EMB, "the exercise's solution")(EmbRight)


@right("emb-arange-lookup", C_EMB, "positions looked up with torch.arange(L); types via new_zeros")
class EmbArange(ES):
    def forward(self, token_ids, token_type_ids=None):
        cfg = self.config
        positions = torch.arange(token_ids.shape[1])
        pos = self.position(positions) if cfg.positions == "learned" else self.sinusoids[positions]
        tok = self.token(token_ids)
        tok = tok * cfg.d_model ** 0.5 if cfg.scale_embeddings else tok
        x = tok + pos.unsqueeze(0)  # (1, L, d) broadcast over the batch
        if self.token_type is not None:
            x = x + self.token_type(token_ids.new_zeros(token_ids.shape) if token_type_ids is None else token_type_ids)
        return self.dropout(x if self.norm is None else self.norm(x))


@right("emb-functional", C_EMB, "F.embedding, expand, torch.stack(...).sum(0), F.dropout with training")
class EmbFunctional(ES):
    def forward(self, token_ids, token_type_ids=None):
        cfg = self.config
        batch, length = token_ids.shape
        parts = [F.embedding(token_ids, self.token.weight) * (math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1)]
        parts.append(self.table()[:length].expand(batch, length, cfg.d_model))
        if self.token_type is not None:
            types = token_type_ids if token_type_ids is not None else torch.zeros_like(token_ids)
            parts.append(F.embedding(types, self.token_type.weight))
        x = torch.stack(parts).sum(0)
        if self.norm is not None:
            x = self.norm(x)
        return F.dropout(x, cfg.dropout, self.training)


@right("emb-type-zero-row", C_EMB, "without token_type_ids, row 0 of the type table broadcast")
class EmbTypeRow(ES):
    def forward(self, token_ids, token_type_ids=None):
        cfg = self.config
        x = self.token(token_ids)
        if cfg.scale_embeddings:
            x = x * math.sqrt(cfg.d_model)
        x = x + self.table()[: token_ids.size(1)]
        if self.token_type is not None:
            x = x + (self.token_type.weight[0] if token_type_ids is None else self.token_type(token_type_ids))
        return self.dropout(self.norm(x) if self.norm is not None else x)


@right("emb-sinusoids-in-forward", C_EMB, "the sinusoids computed in forward, torch's LayerNorm in __init__")
class EmbOwn(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        d = config.d_model
        self.token = nn.Embedding(config.vocab_size, d)
        if config.positions == "learned":
            self.position = nn.Embedding(config.max_len, d)
        self.token_type = nn.Embedding(config.type_vocab_size, d) if config.type_vocab_size else None
        self.norm = nn.LayerNorm(d, eps=config.eps) if config.embedding_norm else None
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, token_ids, token_type_ids=None):
        cfg = self.config
        length = token_ids.shape[-1]
        if cfg.positions == "learned":
            pos = self.position.weight[:length]
        else:
            pos = ec.sinusoidal_positions(length, cfg.d_model)
        x = self.token(token_ids) * (math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0) + pos
        if self.token_type:
            x += self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.dropout(self.norm(x) if self.norm else x)


# Positions and padding: the padding is a token like the others here (the attention mask keeps it out later).
class EmbPositionIds(ES):
    """The solution with the position ids made by ``position_ids(token_ids)``."""

    def position_ids(self, token_ids):
        return torch.arange(token_ids.shape[1])

    def forward(self, token_ids, token_type_ids=None):
        cfg = self.config
        x = self.token(token_ids) * (math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0)
        ids = self.position_ids(token_ids)
        x = x + (self.position(ids) if cfg.positions == "learned" else self.sinusoids[ids])
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.dropout(self.norm(x) if self.norm is not None else x)


@wrong("emb-probe-positions-skip-padding", C_EMB, "position ids torch.cumsum(token_ids != pad_id, dim=1) - 1 "
       "(RoBERTa's count of real tokens)", "your positions count only the tokens that are not padding")
class EmbCumsum(EmbPositionIds):
    def position_ids(self, token_ids):
        return torch.cumsum(token_ids != self.config.pad_id, dim=1) - 1


@wrong("emb-probe-positions-skip-padding-clamped", C_EMB, "(torch.cumsum(token_ids != pad_id, dim=1) - 1).clamp(min=0)",
       "your positions count only the tokens that are not padding")
class EmbCumsumClamped(EmbPositionIds):
    def position_ids(self, token_ids):
        return (torch.cumsum(token_ids != self.config.pad_id, dim=1) - 1).clamp(min=0)


@wrong("emb-padding-zeroed", C_EMB, "the output multiplied by (token_ids != pad_id)", "come out as zeros")
class EmbPadZeroed(EmbRight):
    def forward(self, token_ids, token_type_ids=None):
        return super().forward(token_ids, token_type_ids) * (token_ids != self.config.pad_id)[..., None]


@wrong("emb-padding-no-token-vector", C_EMB, "self.token(token_ids) * (token_ids != pad_id)[..., None]",
       "get no token vector")
class EmbPadNoToken(ES):
    def forward(self, token_ids, token_type_ids=None):
        cfg = self.config
        x = self.token(token_ids) * (token_ids != cfg.pad_id)[..., None]  # as a padding_idx row of zeros would
        x = x * (math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0) + self.table()[:token_ids.shape[1]]
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
        return self.dropout(self.norm(x) if self.norm is not None else x)


@wrong("emb-probe-positions-across-batch", C_EMB, "position ids torch.arange(B * L).view(B, L) % max_len",
       "the positions go on counting from one sequence to the next")
class EmbAcrossBatch(EmbPositionIds):
    def position_ids(self, token_ids):
        return torch.arange(token_ids.numel()).view_as(token_ids) % self.config.max_len


right("emb-position-ids-arange", C_EMB, "position ids torch.arange(L), looked up with self.position(ids)")(
    EmbPositionIds)



test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
