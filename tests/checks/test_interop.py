"""The checker of ``rename_key`` (notebook 11): every wrong answer named, every right one passing."""

from __future__ import annotations

import functools
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



# The name's ending, the layer prefix and the unused keys, each slip on all keys at once.
wrong("rk-no-suffix", C_RK, "layers.<n>.attn.w_q without .weight or .bias (the embeddings right)",
      "the .weight or .bias at the end of the name is missing")(
    lambda key: (lambda ours: ours.rsplit(".", 1)[0] if ours and ours.startswith("layers.") else ours)(
        rename_with(key)))
wrong("rk-suffix-twice", C_RK, "f'layers.{n}.{module}.{kind}.{kind}': the ending added twice",
      "the .weight or .bias is added twice")(
    lambda key: (lambda ours: f"{ours}.{key.rsplit('.', 1)[1]}" if ours else ours)(rename_with(key)))
wrong("rk-layers-no-dot", C_RK, "f'layers{n}.{module}.{kind}': no dot after layers",
      "the dot after layers is missing")(lambda key: rename_with(key, prefix="layers").replace("layers.", "layers", 1)
                                         if rename_with(key) else None)
wrong("rk-empty-string-unused", C_RK, "'' for position_ids and the pooler instead of None",
      "give '' (an empty string)")(lambda key: "" if key in UNUSED else rename_with(key))
wrong("rk-emb-norm-final", C_RK, "embeddings.LayerNorm -> final_norm (taken for the encoder's last LayerNorm)",
      "embeddings.LayerNorm is mapped to final_norm")(
    lambda key: "final_norm." + key.rsplit(".", 1)[1] if key.startswith("embeddings.LayerNorm.") else rename_with(key))


def rk_replace_chain(order):
    """Each part renamed by str.replace, in ``order``, on the whole key (checked against the known parts first)."""
    def rename(key):
        if key in UNUSED:
            return None
        if key in EMBEDDINGS:
            return EMBEDDINGS[key]
        m = re.fullmatch(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)", key)
        if not m or m.group(2) not in PARTS:
            raise ValueError(f"unknown key: {key!r}")
        name = key.replace("encoder.layer.", "layers.")
        for theirs in order:
            name = name.replace(theirs, PARTS[theirs])
        return name
    return rename


wrong("rk-probe-replace-output-dense-first", C_RK,
      "a str.replace chain renaming 'output.dense' before 'attention.output.dense' ('layers.0.attention.ffn.w2')",
      "ran before the longer name's")(
    rk_replace_chain(["output.dense", *[p for p in PARTS if p != "output.dense"]]))
wrong("rk-probe-replace-output-norm-first", C_RK,
      "a str.replace chain renaming 'output.LayerNorm' before 'attention.output.LayerNorm'",
      "ran before the longer name's")(
    rk_replace_chain(["output.LayerNorm", *[p for p in PARTS if p != "output.LayerNorm"]]))
wrong("rk-probe-embeddings-swapped", C_RK, "position_embeddings -> token_type and token_type_embeddings -> position",
      "is the one 'embeddings.token_type_embeddings.weight' should get")(
    lambda key: {"embeddings.position_embeddings.weight": "embeddings.token_type.weight",
                 "embeddings.token_type_embeddings.weight": "embeddings.position.weight"}.get(key) or rename_with(key))
wrong("rk-embedding-name", C_RK, "word_embeddings -> embeddings.tokens.weight (a name of its own)",
      "the embeddings' names are those of Embeddings' state_dict()")(
    lambda key: "embeddings.tokens.weight" if key == "embeddings.word_embeddings.weight" else rename_with(key))
wrong("rk-layer-module-name", C_RK, "attention.output.dense -> attn.out (a name of its own)",
      "the modules named as in EncoderBlock's state_dict()")(
    lambda key: rename_with(key, parts={**PARTS, "attention.output.dense": "attn.out"}))
wrong("rk-layernorm-none", C_RK, "None for every LayerNorm inside the layers",
      "None is only for the three keys the encoder does not use")(
    lambda key: None if "LayerNorm" in key and key.startswith("encoder.") else rename_with(key))
wrong("rk-position-by-prefix", C_RK, "key.startswith('embeddings.position') -> None: position_embeddings dropped too",
      "catches it too")(lambda key: None if key.startswith("embeddings.position") else rename_with(key))


# Unknown keys answered with a known key's name.
wrong("rk-gamma-beta", C_RK, "gamma and beta translated to weight and bias first (the old LayerNorm names)",
      "your map translates the old LayerNorm names")(
    lambda key: rename_with(re.sub(r"\.gamma$", ".weight", re.sub(r"\.beta$", ".bias", key))))
wrong("rk-kernel", C_RK, "TensorFlow's kernel read as weight", "your map reads TensorFlow's kernel as weight")(
    lambda key: rename_with(re.sub(r"\.kernel$", ".weight", key)))
wrong("rk-layers-spelling", C_RK, "encoder.layers. accepted as encoder.layer.",
      "your map accepts more spellings than the checkpoint's keys")(
    lambda key: rename_with(key.replace("encoder.layers.", "encoder.layer.")))


def rk_split_any_number(key):
    """key.split('.') with the layer number copied without checking it is digits."""
    if key in UNUSED:
        return None
    if key in EMBEDDINGS:
        return EMBEDDINGS[key]
    parts = key.split(".")
    if parts[:2] == ["encoder", "layer"] and ".".join(parts[3:-1]) in PARTS and parts[-1] in ("weight", "bias"):
        return f"layers.{parts[2]}.{PARTS['.'.join(parts[3:-1])]}.{parts[-1]}"
    raise ValueError(f"unknown key: {key!r}")


wrong("rk-layer-number-unchecked", C_RK, "the third part copied as the layer number without .isdigit()",
      "is not a number, and your map copies it as it is")(rk_split_any_number)


def rk_lowercased(key):
    """The key lowercased before the lookup, and the lowercased key in the error message."""
    low = key.lower()
    table = {k.lower(): v for k, v in EMBEDDINGS.items()}
    if low in UNUSED:
        return None
    if low in table:
        return table[low]
    m = re.fullmatch(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)", low)
    parts = {k.lower(): v for k, v in PARTS.items()}
    if m and m.group(2) in parts:
        return f"layers.{m.group(1)}.{parts[m.group(2)]}.{m.group(3)}"
    raise ValueError(f"unknown key {low!r}")


wrong("rk-error-key-lowercased", C_RK, "the key lowercased, and the lowercased key in the ValueError",
      "names the key with its letters' case changed")(rk_lowercased)


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


@right("rk-lru-cache-named-groups", C_RK,
       "functools.lru_cache, a fullmatch with named groups, a table zipped from two lists")
@functools.lru_cache(maxsize=None)
def rk_cached(key):
    emb = {f"embeddings.{a}": f"embeddings.{b}" for a, b in (("word_embeddings.weight", "token.weight"),
           ("position_embeddings.weight", "position.weight"), ("token_type_embeddings.weight", "token_type.weight"),
           ("LayerNorm.weight", "norm.weight"), ("LayerNorm.bias", "norm.bias"))}
    if key in {"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"}:
        return None
    if key in emb:
        return emb[key]
    m = re.fullmatch(r"encoder\.layer\.(?P<n>[0-9]+)\.(?P<mod>[A-Za-z.]+)\.(?P<kind>weight|bias)", key)
    table = dict(zip(["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                      "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"],
                     ["attn.w_q", "attn.w_k", "attn.w_v", "attn.w_o", "norm1", "ffn.w1", "ffn.w2", "norm2"]))
    if m is None or m["mod"] not in table:
        raise ValueError("cannot map " + key)
    return "layers." + m["n"] + "." + table[m["mod"]] + "." + m["kind"]

@right("rk-partition", C_RK, "str.partition and rpartition, .get lookups, isdecimal for the layer number")
def rk_partitioned(key):
    if key == "embeddings.position_ids" or key in ("pooler.dense.weight", "pooler.dense.bias"):
        return None
    head, _, rest = key.partition(".")
    if head == "embeddings":
        name = {"word_embeddings.weight": "token.weight", "position_embeddings.weight": "position.weight",
                "token_type_embeddings.weight": "token_type.weight", "LayerNorm.weight": "norm.weight",
                "LayerNorm.bias": "norm.bias"}.get(rest)
        if name:
            return "embeddings." + name
    elif head == "encoder":
        layer_word, _, rest = rest.partition(".")
        number, _, rest = rest.partition(".")
        module, _, kind = rest.rpartition(".")
        ours = {"attention.self.query": "attn.w_q", "attention.self.key": "attn.w_k",
                "attention.self.value": "attn.w_v", "attention.output.dense": "attn.w_o",
                "attention.output.LayerNorm": "norm1", "intermediate.dense": "ffn.w1", "output.dense": "ffn.w2",
                "output.LayerNorm": "norm2"}.get(module)
        if layer_word == "layer" and number.isdecimal() and ours and kind in ("weight", "bias"):
            return f"layers.{number}.{ours}.{kind}"
    raise ValueError(f"{key!r} is not a BERT key I know")

RK_TREE = {"attention": {"self": {"query": "attn.w_q", "key": "attn.w_k", "value": "attn.w_v"},
                      "output": {"dense": "attn.w_o", "LayerNorm": "norm1"}},
        "intermediate": {"dense": "ffn.w1"}, "output": {"dense": "ffn.w2", "LayerNorm": "norm2"}}

@right("rk-nested-table", C_RK, "the module name walked down a nested dict, one part of the key at a time")
def rk_tree_walk(key):
    parts = key.split(".")
    if parts in (["embeddings", "position_ids"], ["pooler", "dense", "weight"], ["pooler", "dense", "bias"]):
        return None
    if parts[0] == "embeddings" and len(parts) == 3 and parts[2] in ("weight", "bias"):
        emb = {"word_embeddings": "token", "position_embeddings": "position", "token_type_embeddings": "token_type",
               "LayerNorm": "norm"}
        if parts[1] in emb and (parts[1] == "LayerNorm" or parts[2] == "weight"):
            return f"embeddings.{emb[parts[1]]}.{parts[2]}"
    if len(parts) >= 5 and parts[0] == "encoder" and parts[1] == "layer" and parts[2].isdigit() \
            and parts[-1] in ("weight", "bias"):
        node = RK_TREE
        for p in parts[3:-1]:
            node = node.get(p) if isinstance(node, dict) else None
            if node is None:
                break
        if isinstance(node, str):
            return f"layers.{parts[2]}.{node}.{parts[-1]}"
    raise ValueError(f"unknown key {key}")

@right("rk-replace-longest-first", C_RK, "a fullmatch of every known key, then str.replace longest names first")
def rk_longest_first_replace(key):
    if key in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"):
        return None
    ok = re.fullmatch(r"embeddings\.((word|position|token_type)_embeddings\.weight|LayerNorm\.(weight|bias))"
                      r"|encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|attention\.output\.(dense|LayerNorm)"
                      r"|intermediate\.dense|output\.(dense|LayerNorm))\.(weight|bias)", key)
    if not ok:
        raise ValueError(f"unknown key: {key}")
    table = {"encoder.layer.": "layers.", "attention.self.query": "attn.w_q", "attention.self.key": "attn.w_k",
             "attention.self.value": "attn.w_v", "attention.output.dense": "attn.w_o",
             "attention.output.LayerNorm": "norm1", "intermediate.dense": "ffn.w1", "output.dense": "ffn.w2",
             "output.LayerNorm": "norm2", "word_embeddings": "token", "token_type_embeddings": "token_type",
             "position_embeddings": "position", "embeddings.LayerNorm": "embeddings.norm"}
    for old in sorted(table, key=len, reverse=True):
        if old in key:
            key = key.replace(old, table[old])
    return key

@right("rk-try-except", C_RK, "a table lookup, then an unpacking split; every failure turned into ValueError")
def rk_try_except(key):
    table = {"embeddings.word_embeddings.weight": "embeddings.token.weight",
             "embeddings.position_embeddings.weight": "embeddings.position.weight",
             "embeddings.token_type_embeddings.weight": "embeddings.token_type.weight",
             "embeddings.LayerNorm.weight": "embeddings.norm.weight",
             "embeddings.LayerNorm.bias": "embeddings.norm.bias",
             "embeddings.position_ids": None, "pooler.dense.weight": None, "pooler.dense.bias": None}
    parts = {"attention.self.query": "attn.w_q", "attention.self.key": "attn.w_k", "attention.self.value": "attn.w_v",
             "attention.output.dense": "attn.w_o", "attention.output.LayerNorm": "norm1",
             "intermediate.dense": "ffn.w1", "output.dense": "ffn.w2", "output.LayerNorm": "norm2"}
    try:
        return table[key]
    except KeyError:
        pass
    try:
        prefix, word, n, *mid, kind = key.split(".")
        if prefix != "encoder" or word != "layer" or kind not in ("weight", "bias") or not n.isdigit():
            raise KeyError(key)
        return f"layers.{int(n)}.{parts['.'.join(mid)]}.{kind}"
    except (KeyError, ValueError) as exc:
        raise ValueError(f"unexpected key {key!r}") from exc

@right("rk-re-sub-callback", C_RK, "re.sub with a callback on the whole key, after a fullmatch")
def rk_resub_callback(key):
    if key in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"):
        return None
    names = {"attention.self.query": "attn.w_q", "attention.self.key": "attn.w_k", "attention.self.value": "attn.w_v",
             "attention.output.dense": "attn.w_o", "attention.output.LayerNorm": "norm1",
             "intermediate.dense": "ffn.w1", "output.dense": "ffn.w2", "output.LayerNorm": "norm2"}
    emb = {"word_embeddings": "token", "position_embeddings": "position", "token_type_embeddings": "token_type"}
    if re.fullmatch(r"embeddings\.(word_embeddings|position_embeddings|token_type_embeddings)\.weight", key):
        return re.sub(r"^embeddings\.(\w+)\.", lambda m: f"embeddings.{emb[m[1]]}.", key)
    if re.fullmatch(r"embeddings\.LayerNorm\.(weight|bias)", key):
        return key.replace("LayerNorm", "norm")
    alt = "|".join(re.escape(k) for k in names)
    if re.fullmatch(rf"encoder\.layer\.\d+\.({alt})\.(weight|bias)", key):
        return re.sub(rf"^encoder\.layer\.(\d+)\.({alt})\.", lambda m: f"layers.{m[1]}.{names[m[2]]}.", key)
    raise ValueError(key + " is unknown")

@right("rk-percent-format", C_RK, "a frozenset of unused keys, a list of pairs, % formatting of int(n)")
def rk_int_number_and_set(key):
    unused = frozenset({"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"})
    if key in unused:
        return None
    pieces = key.split(".")
    if pieces[0] == "encoder" and len(pieces) > 4 and pieces[1] == "layer" and pieces[2].isdigit():
        n = int(pieces[2])
        mid, kind = ".".join(pieces[3:-1]), pieces[-1]
        mods = [("attention.self.query", "attn.w_q"), ("attention.self.key", "attn.w_k"),
                ("attention.self.value", "attn.w_v"), ("attention.output.dense", "attn.w_o"),
                ("attention.output.LayerNorm", "norm1"), ("intermediate.dense", "ffn.w1"),
                ("output.dense", "ffn.w2"), ("output.LayerNorm", "norm2")]
        for theirs, ours in mods:
            if mid == theirs and kind in {"weight", "bias"}:
                return "layers.%d.%s.%s" % (n, ours, kind)
    elif pieces[0] == "embeddings":
        for theirs, ours in (("word_embeddings.weight", "token.weight"),
                             ("position_embeddings.weight", "position.weight"),
                             ("token_type_embeddings.weight", "token_type.weight"),
                             ("LayerNorm.weight", "norm.weight"), ("LayerNorm.bias", "norm.bias")):
            if key == "embeddings." + theirs:
                return "embeddings." + ours
    raise ValueError("rename_key: no name for %r" % key)

@right("rk-if-chain", C_RK, "one if per name, the w_q / w_k / w_v letter taken from the module name")
def rk_if_chain(key):
    if key == "embeddings.position_ids":
        return None
    if key == "pooler.dense.weight" or key == "pooler.dense.bias":
        return None
    if key == "embeddings.word_embeddings.weight":
        return "embeddings.token.weight"
    if key == "embeddings.position_embeddings.weight":
        return "embeddings.position.weight"
    if key == "embeddings.token_type_embeddings.weight":
        return "embeddings.token_type.weight"
    if key.startswith("embeddings.LayerNorm.") and key.split(".")[-1] in ("weight", "bias") and key.count(".") == 2:
        return "embeddings.norm." + key.split(".")[-1]
    m = re.match(r"encoder\.layer\.(\d+)\.(.*)\.(weight|bias)\Z", key)
    if m:
        n, mid, kind = m.groups()
        if mid.startswith("attention.self.") and mid[len("attention.self."):] in ("query", "key", "value"):
            return f"layers.{n}.attn.w_{mid[len('attention.self.')][0]}.{kind}"
        if mid == "attention.output.dense":
            return f"layers.{n}.attn.w_o.{kind}"
        if mid == "attention.output.LayerNorm":
            return f"layers.{n}.norm1.{kind}"
        if mid == "intermediate.dense":
            return f"layers.{n}.ffn.w1.{kind}"
        if mid == "output.dense":
            return f"layers.{n}.ffn.w2.{kind}"
        if mid == "output.LayerNorm":
            return f"layers.{n}.norm2.{kind}"
    raise ValueError(f"Unknown checkpoint key: {key}")


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
