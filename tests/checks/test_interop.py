"""The checker of ``rename_key`` (notebook 11): every wrong answer named, every right one passing."""

from __future__ import annotations

import re

from encoder_course import checks, interop

from .catalogue import Catalogue

C_RK = checks.check_rename_key

CATALOGUE = Catalogue(C_RK)
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right

EMBEDDINGS = {
    "embeddings.word_embeddings.weight": "embeddings.token.weight",
    "embeddings.position_embeddings.weight": "embeddings.position.weight",
    "embeddings.token_type_embeddings.weight": "embeddings.token_type.weight",
    "embeddings.LayerNorm.weight": "embeddings.norm.weight",
    "embeddings.LayerNorm.bias": "embeddings.norm.bias",
}
PARTS = {
    "attention.self.query": "attn.w_q", "attention.self.key": "attn.w_k", "attention.self.value": "attn.w_v",
    "attention.output.dense": "attn.w_o", "attention.output.LayerNorm": "norm1",
    "intermediate.dense": "ffn.w1", "output.dense": "ffn.w2", "output.LayerNorm": "norm2",
}
UNUSED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")


def rename_with(key, *, parts=None, unused=UNUSED, shift=0, unknown="raise", layer_digits=r"\d+", prefix="layers",
                kind_swap=False):
    """A learner's map with one slip chosen by keyword (the defaults give the right answer)."""
    parts = PARTS if parts is None else parts
    if key in unused:
        return None
    if key in EMBEDDINGS:
        return EMBEDDINGS[key]
    m = re.match(rf"^encoder\.layer\.({layer_digits})\.(.+)\.(weight|bias)$", key)
    if m and m.group(2) in parts:
        kind = {"weight": "bias", "bias": "weight"}[m.group(3)] if kind_swap else m.group(3)
        return f"{prefix}.{int(m.group(1)) + shift}.{parts[m.group(2)]}.{kind}" if prefix else \
            f"{parts[m.group(2)]}.{kind}"
    if unknown == "none":
        return None
    if unknown == "same":
        return key
    if unknown == "keyerror":
        raise KeyError(key)
    if unknown == "nameless":
        raise ValueError("unknown key")
    if unknown == "exception":
        raise Exception(f"unknown key {key}")
    if unknown == "ours-kept" and key.startswith("layers."):
        return key
    raise ValueError(f"unknown key in the checkpoint: {key!r}")


def swapped(a, b):
    table = dict(PARTS)
    table[a], table[b] = PARTS[b], PARTS[a]
    return table


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("rk-package", C_RK, "the package's own function, passed as the answer", "calls the course's own rename_key")(
    interop.rename_key)
wrong("rk-name-map", C_RK, "interop.name_map(12)[key]: the course's whole map", "uses the course's own name_map")(
    lambda key: interop.name_map(12).get(key))
wrong("rk-plain-exception", C_RK, "raise Exception(...) for an unknown key", "the contract is ValueError, which")(
    lambda key: rename_with(key, unknown="exception"))
wrong("rk-our-names-kept", C_RK, "a key that looks like one of our names returned as it is ('already converted')",
      "loading a tensor under a made-up name")(lambda key: rename_with(key, unknown="ours-kept"))
@wrong("rk-probe-twelve-layers", C_RK, "a table of BERT-base's layers 0-11 only; any other layer raises ValueError",
       "Every key of layer 23 is wrong")
def rk_twelve_layers(key):
    layer = re.match(r"encoder\.layer\.(\d+)\.", key)
    if layer and int(layer.group(1)) > 11:
        raise ValueError(f"unknown key {key!r}")
    return rename_with(key)


wrong("rk-norms-swapped", C_RK, "attention.output.LayerNorm -> norm2 and output.LayerNorm -> norm1",
      "attention.output.LayerNorm and output.LayerNorm are swapped")(
    lambda key: rename_with(key, parts=swapped("attention.output.LayerNorm", "output.LayerNorm")))
wrong("rk-ffn-swapped", C_RK, "intermediate.dense -> ffn.w2, output.dense -> ffn.w1",
      "intermediate.dense and output.dense are swapped")(
    lambda key: rename_with(key, parts=swapped("intermediate.dense", "output.dense")))
wrong("rk-query-key-swapped", C_RK, "attention.self.query -> w_k and key -> w_q",
      "query, key and value are mixed up")(
    lambda key: rename_with(key, parts=swapped("attention.self.query", "attention.self.key")))
wrong("rk-key-value-swapped", C_RK, "attention.self.key -> w_v and value -> w_k",
      "query, key and value are mixed up")(
    lambda key: rename_with(key, parts=swapped("attention.self.key", "attention.self.value")))
wrong("rk-layers-from-1", C_RK, "layer n -> layers.n+1 (counting from 1)", "the layer number is shifted by one")(
    lambda key: rename_with(key, shift=1))
wrong("rk-single-digit", C_RK, r"regex encoder\.layer\.(\d)\. : layers 10 and 11 read as 1",
      "the layer number is cut to its first digit")(
    lambda key: rename_with(key, layer_digits=r"\d") if not re.match(r"^encoder\.layer\.\d\d", key)
    else rename_with(key.replace(key.split(".")[2], key.split(".")[2][0], 1)))
wrong("rk-weight-bias-swapped", C_RK, ".weight -> .bias and .bias -> .weight inside the layers",
      "weight and bias are mixed up")(lambda key: rename_with(key, kind_swap=True))
wrong("rk-pooler-mapped", C_RK, "pooler.dense -> pooler.dense (kept under its own name)",
      "the pooler is mapped to a name")(
    lambda key: key if key.startswith("pooler.") else rename_with(key))
wrong("rk-position-ids-mapped", C_RK, "embeddings.position_ids -> embeddings.position.ids",
      "embeddings.position_ids is mapped to a name")(
    lambda key: "embeddings.position.ids" if key == "embeddings.position_ids" else rename_with(key))
wrong("rk-ignored-raise", C_RK, "position_ids and the pooler raise ValueError like unknown keys",
      "the ignored keys raise")(lambda key: rename_with(key, unused=()))
wrong("rk-unknown-none", C_RK, "unknown keys give None (silently dropped)", "a key the map does not know must raise "
      "ValueError")(lambda key: rename_with(key, unknown="none"))
wrong("rk-unknown-same", C_RK, "unknown keys come back unchanged (a made-up name)", "loading a tensor under a "
      "made-up name")(lambda key: rename_with(key, unknown="same"))
wrong("rk-keyerror", C_RK, "a plain dict lookup: unknown keys raise KeyError", "raises KeyError")(
    lambda key: rename_with(key, unknown="keyerror"))
wrong("rk-nameless-error", C_RK, "raise ValueError('unknown key'): the right error, the key not named",
      "does not name the key")(lambda key: rename_with(key, unknown="nameless"))
wrong("rk-no-layers-prefix", C_RK, "attn.w_q.weight without layers.<n>.", "the layer prefix is missing")(
    lambda key: rename_with(key, prefix=""))
wrong("rk-blocks-prefix", C_RK, "blocks.<n>. instead of layers.<n>.", "the layers are named differently")(
    lambda key: rename_with(key, prefix="blocks"))
wrong("rk-missing-token-types", C_RK, "the token-type table left out of the embeddings map (raises ValueError)",
      "a key of the checkpoint that maps to 'embeddings.token_type.weight'")(
    lambda key: rename_with(key) if key != "embeddings.token_type_embeddings.weight" else rename_with("x.y"))
wrong("rk-returns-tuple", C_RK, "returns (name, kind)", "returned a tuple")(
    lambda key: (rename_with(key), "weight") if rename_with(key) else None)


# Mistakes unlike the listed slips: where the wrong keys lie must be named.
wrong("rk-probe-one-digit", C_RK, r"encoder\.layer\.(\d)\.: layers 10 and 11 do not match",
      "layers with two-digit numbers")(lambda key: rename_with(key, layer_digits=r"\d"))


def rk_substring_first(key):
    """Substring tests in the wrong order: 'output.dense' is tested before 'attention.output.dense'."""
    if key in UNUSED:
        return None
    if key in EMBEDDINGS:
        return EMBEDDINGS[key]
    m = re.match(r"^encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$", key)
    order = ["output.dense", *[p for p in PARTS if p != "output.dense"]]
    for part in order:
        if m and part in m.group(2):
            return f"layers.{m.group(1)}.{PARTS[part]}.{m.group(3)}"
    raise ValueError(f"unknown key: {key!r}")


wrong("rk-probe-substring-order", C_RK, "'output.dense' in key tested before 'attention.output.dense'",
      "a substring test for 'output.dense' matches it first")(rk_substring_first)


def rk_pattern(pattern: str, search=False, unused=lambda key: key in UNUSED):
    """A learner's map with the layer keys matched by ``pattern`` (``re.search`` if ``search``, else ``re.match``)."""
    def rename(key):
        if unused(key):
            return None
        if key in EMBEDDINGS:
            return EMBEDDINGS[key]
        m = (re.search if search else re.match)(pattern, key)
        if m and m.group(2) in PARTS:
            return f"layers.{m.group(1)}.{PARTS[m.group(2)]}.{m.group(3)}"
        raise ValueError(f"unknown key: {key!r}")
    return rename


# Patterns that accept more than the checkpoint's keys: a key that only starts or ends like a known one, or has
# other characters where a known one has dots, is loaded under a known name.
wrong("rk-unanchored-end", C_RK, r"re.match(r'encoder\.layer\.(\d+)\.(.+)\.(weight|bias)', key): no $ at the end",
      "not tied to the whole key")(rk_pattern(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)"))
wrong("rk-search", C_RK, r"re.search(r'encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$', key): no ^ at the start",
      "not tied to the whole key")(rk_pattern(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$", search=True))
wrong("rk-unescaped-dots", C_RK, r"r'^encoder.layer.(\d+).(.+).(weight|bias)$': the dots not escaped",
      "Escape the dots")(rk_pattern(r"^encoder.layer.(\d+).(.+).(weight|bias)$"))
wrong("rk-unused-by-prefix", C_RK, "key.startswith('pooler') -> None: every pooler key dropped, known or not",
      "Compare whole keys")(rk_pattern(r"^encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$",
                                       unused=lambda key: key.startswith("pooler") or key == "embeddings.position_ids"))


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


right("rk-regex", C_RK, "a regex for the layer keys, two dicts")(rename_with)


@right("rk-split", C_RK, "key.split('.'), the layer number the third part, the rest joined back")
def rk_split(key):
    if key in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"):
        return None
    if key in EMBEDDINGS:
        return EMBEDDINGS[key]
    parts = key.split(".")
    if len(parts) > 4 and parts[:2] == ["encoder", "layer"] and parts[2].isdigit() and parts[-1] in ("weight", "bias"):
        inner = ".".join(parts[3:-1])
        if inner in PARTS:
            return f"layers.{parts[2]}.{PARTS[inner]}.{parts[-1]}"
    raise ValueError(f"I do not know the key {key!r}")


@right("rk-replacements", C_RK, "a chain of str.replace calls on the layer keys, checked against a fixed pattern")
def rk_replace(key):
    if key == "embeddings.position_ids" or key.startswith("pooler."):
        if key in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"):
            return None
    if key in EMBEDDINGS:
        return EMBEDDINGS[key]
    if not re.fullmatch(r"encoder\.layer\.\d+\.(attention\.(self\.(query|key|value)|output\.(dense|LayerNorm))"
                        r"|intermediate\.dense|output\.(dense|LayerNorm))\.(weight|bias)", key):
        raise ValueError(key)
    name = key.replace("encoder.layer.", "layers.")
    for theirs, ours in (("attention.self.query", "attn.w_q"), ("attention.self.key", "attn.w_k"),
                         ("attention.self.value", "attn.w_v"), ("attention.output.dense", "attn.w_o"),
                         ("attention.output.LayerNorm", "norm1"), ("intermediate.dense", "ffn.w1"),
                         ("output.dense", "ffn.w2"), ("output.LayerNorm", "norm2")):
        if theirs in name:
            return name.replace(theirs, ours)
    raise ValueError(key)


@right("rk-match-statement", C_RK, "a match statement on the split key")
def rk_match(key):
    match key.split("."):
        case ["embeddings", "position_ids"] | ["pooler", "dense", ("weight" | "bias")]:
            return None
        case ["embeddings", _, _] if key in EMBEDDINGS:
            return EMBEDDINGS[key]
        case ["encoder", "layer", n, *inner, ("weight" | "bias") as kind] if n.isdigit() and ".".join(inner) in PARTS:
            return f"layers.{n}.{PARTS['.'.join(inner)]}.{kind}"
        case _:
            raise ValueError(f"unknown key {key}")


@right("rk-accepts-bert-prefix", C_RK, "also strips a 'bert.' prefix itself; a ValueError subclass for unknown keys")
def rk_prefix(key):
    class UnknownKey(ValueError):
        pass

    key = key.removeprefix("bert.")
    try:
        return rename_with(key)
    except ValueError:
        raise UnknownKey(key) from None


_TABLE: dict = {}


@right("rk-full-table", C_RK, "a table of every key of 24 layers built once; a lookup, then a ValueError")
def rk_table(key, _table=_TABLE):
    if not _table:
        _table.update(EMBEDDINGS)
        _table.update({k: None for k in UNUSED})
        for n in range(24):
            for theirs, ours in PARTS.items():
                for kind in ("weight", "bias"):
                    _table[f"encoder.layer.{n}.{theirs}.{kind}"] = f"layers.{n}.{ours}.{kind}"
    if key not in _table:
        raise ValueError(f"unexpected key {key!r}")
    return _table[key]


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
