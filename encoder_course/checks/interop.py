"""Checker of ``rename_key(key) -> str | None`` (notebook 11): a Hugging Face BERT key to this package's name.

Every key of a real BERT-base checkpoint is asked for (12 layers, so the layer numbers 10 and 11 have
two digits), without the ``bert.`` prefix (the loader strips it first): the embeddings, every layer's
16 tensors, and the keys the encoder does not use (``embeddings.position_ids`` and the pooler), which
must give None. Keys the map does not know must raise ``ValueError``, the error the loader catches
to list them: ``KeyError`` is refused (a plain dict lookup raises it, and the loader would stop at the
first unknown key instead of reporting them all), and so is a made-up name or None.

A wrong map is compared with the usual slips on all keys at once (norm1 and norm2 swapped, w1 and w2
swapped, q, k and v mixed up, the layer number shifted or cut to one digit, weight and bias mixed,
the pooler or position_ids mapped, the ``layers.`` prefix missing or renamed, the ``.weight`` or
``.bias`` missing or doubled, '' for the unused keys ...) and the slip that explains what differs is
named, or the first key that differs is shown with where the wrong keys lie (a str.replace chain that
renames 'output.dense' inside 'attention.output.dense' is named). An unknown key answered with a known
key's name (gamma/beta, TensorFlow's kernel, encoder.layers) is told from a made-up name.
"""

from __future__ import annotations

import itertools
import os
import re

from ._compare import _note
from ._run import ExerciseError, _checker, _invoke
from .registry import exercise

_UNKNOWN = (
    "cls.predictions.bias",  # the masked-language-model head of BertForPreTraining
    "encoder.layer.0.attention.self.query.kernel",  # a TensorFlow name
    "embeddings.LayerNorm.gamma",  # the old LayerNorm names
    "encoder.layer.3.crossattention.self.query.weight",  # a decoder's cross-attention
    "encoder.layer.2.attention.self.query",  # no .weight or .bias
    "encoder.layers.0.attention.self.query.weight",  # layers, not layer
    "encoder.layer.x.output.dense.weight",  # no layer number
    "embeddings.word_embeddings",
    "encoder.layer.0.attention.self.query.weight_g",  # weight normalisation's name: starts like a known key
    "model.encoder.layer.0.output.dense.weight",  # a wrapper's prefix, which the loader does not strip
    "encoder_layer_0.attention.self.query.weight",  # underscores where a known key has dots
    "pooler.dense.kernel",  # TensorFlow's name: only the pooler's weight and bias are unused
    "layers.0.attn.w_q.weight",  # already one of our names: the checkpoint's keys are Hugging Face's
)


def _answer(name, fn, key, label=None):
    """What the learner's function does with one key: ("value", str | None) or ("raise", exception type, error)."""
    try:
        return ("value", _invoke(name, label or f"for the key {key!r}", fn, key))
    except ExerciseError as exc:
        if exc.__cause__ is None:  # the checker's own verdict (time limit, the reference used): it stands
            raise
        return ("raise", type(exc.__cause__), exc)


def _layer_and_part(key: str):
    m = re.match(r"^encoder\.layer\.(\d+)\.(.+)$", key)
    return (int(m.group(1)), m.group(2)) if m else (None, key)


def _shift(ours, by):
    m = re.match(r"^layers\.(\d+)\.(.+)$", ours or "")
    return f"layers.{int(m.group(1)) + by}.{m.group(2)}" if m else ours


def _swap(ours, a, b):
    """``a`` in the name turned into ``b``, or else ``b`` into ``a`` (None stays None)."""
    return ours and (ours.replace(a, b) if a in ours else ours.replace(b, a))


_QKV = ("w_q", "w_k", "w_v")


def _renamed_heads(perm):
    """The slip that names w_q, w_k and w_v's weights as ``perm`` does."""
    table = dict(zip(_QKV, perm))
    return lambda key, ours: ours and re.sub(r"\.attn\.(w_[qkv])\.", lambda m: f".attn.{table[m.group(1)]}.", ours)


_SHIFTED = ("the layer number is shifted by one: BERT counts its layers from 0, as layers.0, layers.1, ... do; "
            "keep the number as it is.")
_KINDS = ("weight and bias are mixed up: a key ending in .weight maps to a name ending in .weight, and .bias to "
          ".bias.")

#: The usual slips, in the order they are tried: (message, what the slip gives for ``key``, whose right name is
#: ``ours``). Besides a name or None, a slip gives "raise" (an error), "pooler" or "position_ids" (any name at
#: all where None is due) or ("renamed", ours) (the same name under another prefix than layers.).
_SLIPS = [
    ("attention.output.LayerNorm and output.LayerNorm are swapped: the LayerNorm after the attention "
     "(attention.output.LayerNorm) is norm1, the one after the feed-forward network (output.LayerNorm) "
     "is norm2.",
     lambda key, ours: _swap(ours, ".norm1.", ".norm2.")),
    ("intermediate.dense and output.dense are swapped: intermediate.dense is the first feed-forward layer "
     "(d_model -> d_ff), ffn.w1; the layer's output.dense is the second (d_ff -> d_model), ffn.w2.",
     lambda key, ours: _swap(ours, ".ffn.w1.", ".ffn.w2.")),
    (_SHIFTED, lambda key, ours: _shift(ours, 1)),
    (_SHIFTED, lambda key, ours: _shift(ours, -1)),
    ("the layer number is cut to its first digit, so layers 10 and 11 become 1: take the whole number, "
     "key.split('.')[2] (or the regex \\d+).",
     lambda key, ours: ours and re.sub(r"^layers\.(\d)\d+\.", r"layers.\1.", ours)),
    (_KINDS, lambda key, ours: _swap(ours, ".weight", ".bias")),
    (_KINDS, lambda key, ours: _swap(ours, ".weight", ".bias") if _layer_and_part(key)[0] is not None else ours),
    ("the pooler is mapped to a name: the encoder has no pooler (BERT's dense + tanh on [CLS], trained for "
     "next-sentence prediction), so pooler.dense.weight and pooler.dense.bias give None.",
     lambda key, ours: "pooler" if key.startswith("pooler.") else ours),
    ("embeddings.position_ids is mapped to a name: it is a constant buffer (0, 1, ..., 511), not a weight, "
     "so it gives None.",
     lambda key, ours: "position_ids" if key == "embeddings.position_ids" else ours),
    ("the ignored keys raise: embeddings.position_ids and the pooler are keys the encoder does not use, "
     "and give None; only keys the map does not know raise ValueError.",
     lambda key, ours: "raise" if ours is None else ours),
    ("the layer prefix is missing: a layer's parameters live under layers.<number>., e.g. "
     "encoder.layer.3.attention.self.query.weight -> layers.3.attn.w_q.weight.",
     lambda key, ours: ours and re.sub(r"^layers\.\d+\.", "", ours)),
    ("the layers are named differently: Encoder keeps its blocks in self.layers, so a layer's parameters "
     "are layers.<number>.<name> (layers.3.attn.w_q.weight), not encoder.layer, blocks or layer.",
     lambda key, ours: ("renamed", ours) if (ours or "").startswith("layers.") else ours),
    *[("query, key and value are mixed up: attention.self.query is attn.w_q, attention.self.key is "
       "attn.w_k and attention.self.value is attn.w_v.", _renamed_heads(perm))
      for perm in itertools.permutations(_QKV) if perm != _QKV],
    ("our names keep the key's ending, but the .weight or .bias at the end of the name is missing: a module "
     "holds two tensors, layers.3.attn.w_q.weight and layers.3.attn.w_q.bias (keep the key's last part).",
     lambda key, ours: ours and ours.rsplit(".", 1)[0]),
    ("our names keep the key's ending once, but the .weight or .bias is added twice: layers.3.attn.w_q.weight, "
     "not layers.3.attn.w_q.weight.weight (add the key's last part once).",
     lambda key, ours: ours and f"{ours}.{ours.rsplit('.', 1)[1]}"),
    ("the dot after layers is missing: a layer's parameters are layers.<number>.<name>, layers.3.attn.w_q.weight, "
     "not layers3.attn.w_q.weight.",
     lambda key, ours: ours and re.sub(r"^layers\.", "layers", ours)),
    ("the keys the encoder does not use give '' (an empty string): return None itself. The loader tells an "
     "unused key by `is None`, and '' is a name to it.",
     lambda key, ours: "" if ours is None else ours),
    ("embeddings.LayerNorm is mapped to final_norm: it is the embeddings' own LayerNorm, embeddings.norm (BERT "
     "is post-LN and has no final LayerNorm; final_norm exists only in a pre-LN encoder).",
     lambda key, ours: ours and re.sub(r"^embeddings\.norm\.", "final_norm.", ours)),
]


def _matches(answer, expected) -> bool:
    """Whether the learner's answer is what a slip gives."""
    got = answer[1] if answer[0] == "value" else None
    if isinstance(expected, tuple):  # ("renamed", ours): the same name under another prefix than layers.
        return isinstance(got, str) and got.endswith(expected[1][len("layers"):]) and not got.startswith("layers.")
    if expected == "raise":
        return answer[0] == "raise"
    if expected in ("pooler", "position_ids"):  # any name at all where None is due
        return isinstance(got, str)
    return answer == ("value", expected)


def _shown(answer) -> str:
    return f"raise {answer[1].__name__}" if answer[0] == "raise" else repr(answer[1])


def _pattern(wrong: list[str], answers: dict, want: dict) -> str:
    """Where the wrong keys lie (which layers, which parts) and the first three as key / yours / expected."""
    place = {k: _layer_and_part(k) for k in want if _layer_and_part(k)[0] is not None}  # the layers' keys
    layers = sorted({n for n, _ in place.values()})
    bad_layers = sorted({place[k][0] for k in wrong if k in place})
    bad_parts = sorted({place[k][1] for k in wrong if k in place})
    where = ""
    if bad_layers and set(wrong) == {k for k in place if place[k][0] in bad_layers} and len(bad_layers) < len(layers):
        where = (f"Every key of layer{'s' if len(bad_layers) > 1 else ''} "
                 f"{', '.join(map(str, bad_layers))} is wrong, and no key of the other layers")
        if all(n >= 10 for n in bad_layers) and all(n < 10 for n in layers if n not in bad_layers):
            where += (": those are the layers with two-digit numbers. A pattern that reads one digit (\\d "
                      "instead of \\d+, or the layer number taken as one character) fails there")
        where += ". "
    elif bad_parts and set(wrong) == {k for k in place if place[k][1] in bad_parts}:
        where = (f"The keys of {', '.join(repr(p) for p in bad_parts)} are wrong in every layer, and no other "
                 "keys")
        first = wrong[0]
        mine = answers[first][1] if answers[first][0] == "value" else None
        owner = next((k for k in want if k != first and mine is not None and want[k] == mine), None)
        if owner is not None:
            part, other = place[first][1].rsplit(".", 1)[0], _layer_and_part(owner)[1].rsplit(".", 1)[0]
            where += (f": your name for {part!r} is the one {other!r} should get"
                      + (f", and {other!r} is inside {part!r}, so a substring test for {other!r} matches it "
                         "first: test the longer names first, or compare the whole part" if other in part else "")
                      )
        if owner is None:
            where += _replaced_first(first, mine, place[first])
        where += ". "
    if not where and wrong:  # one key's name given to another key (outside the layers' patterns above)
        first = wrong[0]
        mine = answers[first][1] if answers[first][0] == "value" else None
        owner = next((k for k in want if k != first and mine is not None and want[k] == mine), None)
        if owner is not None:
            where = f"Your name for {first!r} is the one {owner!r} should get. "
    rows = "\n".join(f"  {k}  ->  yours {_shown(answers[k])}, expected {want[k]!r}" for k in wrong[:3])
    return f"{_note(where)}The first wrong keys:\n{rows}\n"


def _replaced_first(key: str, mine, place) -> str:
    """Where ``mine`` is the layer key's part with a shorter known part inside it renamed (a str.replace chain
    that renames 'output.dense' before 'attention.output.dense'), say so ("" otherwise)."""
    from ..interop import LAYER_NAMES

    n, part = place
    part, kind = part.rsplit(".", 1)
    for other, ours in LAYER_NAMES.items():
        if other != part and other in part and mine == f"layers.{n}.{part.replace(other, ours)}.{kind}":
            return (f": your name for {part!r} is {part!r} with {other!r} in it renamed to {ours!r}. A "
                    f"str.replace of {other!r}, which is inside {part!r}, ran before the longer name's: replace "
                    "the longer names first, or look the whole part up in a table")
    return ""


def _names_hint(key: str, answer, want: dict) -> str:
    """The names the key's kind of tensor gets (the embeddings', a layer's), or why None is wrong for it."""
    from ..interop import EMBEDDING_NAMES, IGNORED_KEYS, LAYER_NAMES

    if answer == ("value", None) and want[key] is not None:
        shared = max((os.path.commonprefix([key, unused]).rstrip("_") for unused in IGNORED_KEYS), key=len)
        start = shared.rsplit(".", 1)[0] + "." if "." in shared else ""
        alike = (f" {key!r} starts as {next(u for u in IGNORED_KEYS if u.startswith(shared))!r} does, "
                 f"{shared!r}: a test such as key.startswith({shared!r}) catches it too; compare whole keys, "
                 "key in {...}." if "." in shared and len(shared) - len(start) >= 3 else "")
        return ("None is only for the three keys the encoder does not use, embeddings.position_ids, "
                f"pooler.dense.weight and pooler.dense.bias; {key!r} holds a tensor the encoder loads." + alike)
    if key in EMBEDDING_NAMES:
        return ("the embeddings' names are those of Embeddings' state_dict(), under embeddings.: "
                + ", ".join(f"{theirs} -> {ours}" for theirs, ours in EMBEDDING_NAMES.items()) + ".")
    if _layer_and_part(key)[0] is not None:
        return ("inside layer N, encoder.layer.N.<module>.weight (or .bias) becomes layers.N.<our module>.weight "
                "(or .bias), the modules named as in EncoderBlock's state_dict(): "
                + ", ".join(f"{theirs} -> {ours}" for theirs, ours in LAYER_NAMES.items()) + ".")
    return ("our names are those of Encoder's state_dict(): embeddings.token.weight, ..., "
            "layers.<n>.attn.w_q.weight, ..., layers.<n>.norm2.bias.")


@_checker("rename_key")
def check_rename_key(fn):
    """Check ``rename_key(key) -> str | None`` on every key of a BERT-base checkpoint, the last layer of a 24-layer one,
    and unknown keys."""
    from ..interop import IGNORED_KEYS, name_map
    from ..interop import rename_key as reference

    name = exercise("rename_key").name
    # BERT-base's 12 layers, and the last layer of a 24-layer checkpoint (BERT-large's): no table of 12 layers
    keys = list(name_map(12)) + [key for key in name_map(24) if key.startswith("encoder.layer.23.")]
    keys += list(IGNORED_KEYS)
    answers = {key: _answer(name, fn, key) for key in keys}
    for key, value in answers.items():
        if value[0] == "value" and value[1] is not None and not isinstance(value[1], str):
            raise ExerciseError(f"Your {name} returned a {type(value[1]).__name__} for the key {key!r}; it "
                                "should return our parameter name (a str) or None.")
    want = {key: reference(key) for key in keys}
    wrong = [key for key in keys if answers[key] != ("value", want[key])]
    if wrong:
        raised = next((answers[key][2] for key in wrong if answers[key][0] == "raise"
                       and answers[key][1] is not ValueError and want[key] is not None), None)
        if raised is not None:  # the learner's code failed on a known key: its own error says most
            raise raised
        for message, slip in _SLIPS:  # a slip that explains every key
            if all(_matches(answers[key], slip(key, want[key])) for key in keys):
                raise ExerciseError(f"Your {name} is not right yet: {message}")
        key = wrong[0]
        found = next((message for message, slip in _SLIPS
                      if slip(key, want[key]) != want[key] and _matches(answers[key], slip(key, want[key]))), "")
        if answers[key][0] == "raise" and want[key] is not None:
            head = (f"raises {answers[key][1].__name__} for the key {key!r}, a key of the checkpoint that maps to "
                    f"{want[key]!r} ({len(wrong)} keys differ)")
            hint = ("the map has the 5 embedding keys and 16 keys per layer (encoder.layer.<n>.<part>.weight and "
                    ".bias); only keys outside it raise ValueError.")
        else:
            head = (f"gives {_shown(answers[key])} for the key {key!r}, but the right name is {want[key]!r}"
                    + (f" ({len(wrong)} keys differ)" if len(wrong) > 1 else ""))
            hint = (found if found[:1].islower() and "." in found.split(" ")[0] else found[:1].upper() + found[1:]) \
                if found else _names_hint(key, answers[key], want)
        raise ExerciseError(f"Your {name} {head}. {_pattern(wrong, answers, want)}Hint: {hint}")
    for key in _UNKNOWN:
        label = f"for the unknown key {key!r}"
        answer = _answer(name, fn, key, label)
        cause = answer[2].__cause__ if answer[0] == "raise" else None
        if isinstance(cause, ValueError) and key in str(cause):
            continue
        if isinstance(cause, ValueError) and key.lower() in str(cause).lower():
            raise ExerciseError(
                f"Your {name} raises ValueError {label}, as it should, but its message ({str(cause)[:80]!r}) names "
                "the key with its letters' case changed (lower() or upper()): the loader shows these messages, "
                "and the file's key is spelled as it is.\nHint: put the key itself in the message, as it came: "
                "raise ValueError(f\"unknown key: {key!r}\") (change the case of a copy only, if you need one)."
            ) from cause
        if isinstance(cause, ValueError):
            raise ExerciseError(
                f"Your {name} raises ValueError {label}, as it should, but its message "
                f"({str(cause)[:80]!r}) does not name the key: the loader shows these messages, "
                "and one without the key does not say which key of the file is unknown.\nHint: put the "
                "key in the message: raise ValueError(f\"unknown key: {key!r}\")."
            ) from cause
        if isinstance(cause, KeyError):
            raise ExerciseError(
                f"Your {name} raises KeyError {label}; the contract is ValueError. The loader catches "
                "ValueError to list every key it does not know (a KeyError would stop it at the first "
                f"one).\nHint: raise ValueError(f\"unknown key: {{key!r}}\") when the key is neither mapped "
                "nor ignored (a dict lookup raises KeyError: catch it, or test `key in table` first)."
            ) from cause
        if type(cause) in (Exception, LookupError, RuntimeError):  # raised on purpose, with another type
            raise ExerciseError(
                f"Your {name} raises {type(cause).__name__} {label}; the contract is ValueError, which the loader "
                "catches to list every key it does not know (any other exception stops it).\nHint: raise "
                "ValueError(f\"unknown key: {key!r}\") when the key is neither mapped nor ignored."
            ) from cause
        if cause is not None:  # another error of the learner's code: its own message says most
            raise answer[2]
        got = answer[1]
        why = _unknown_hint(key, got, want)  # a known key that explains the answer: said first
        owned = got is not None and got != key and got in want.values()  # another key's name, not a made-up one
        raise ExerciseError(
            f"Your {name} returns {'None' if got is None else repr(got)} {label}"
            + (f": {why}\nA" if why else "; a") + " key the map does not know must raise ValueError, so the loader "
            "can report it instead of "
            + ("silently dropping it (None means 'a key we do not use', which only position_ids and the pooler "
               "are)." if got is None else "loading its tensor where another key's belongs." if owned
               else "loading a tensor under a made-up name.")
            + ("" if why else "\nHint: after the known keys, end with raise ValueError(f\"unknown key: {key!r}\").")
        )


def _unknown_hint(key: str, got, known: dict) -> str:
    """Why a map answers for the unknown ``key`` as it does, where a known key (``known``: key -> our name) explains
    it; "" otherwise."""
    for theirs, ours in known.items():
        if ours is None or got != ours:
            continue
        if theirs in key:
            return (f"it holds the known key {theirs!r} with more around it, so your pattern is not tied to the "
                    "whole key (re.match checks only how the key starts, re.search finds it anywhere). Match the "
                    "whole key: re.fullmatch, or ^...$ around the pattern.")
        if re.fullmatch(re.escape(theirs).replace(r"\.", "."), key):
            return (f"it has other characters where {theirs!r} has dots, and in a regular expression '.' "
                    "matches any character. Escape the dots (\\.).")
    owner = next((theirs for theirs, ours in known.items() if ours is not None and got == ours), None)
    if owner is not None and got != key:
        last = key.rsplit(".", 1)[-1]
        if last in ("gamma", "beta"):
            return (f"it gives {got!r}, the name of {owner!r}: your map translates the old LayerNorm names (gamma "
                    "for weight, beta for bias). This map knows only the names of the checkpoints it loads, "
                    ".weight and .bias; a key with gamma or beta comes from another format and must stop the "
                    "loading.")
        if last == "kernel":
            return (f"it gives {got!r}, the name of {owner!r}: your map reads TensorFlow's kernel as weight. A "
                    "TensorFlow kernel is stored transposed, (in_features, out_features), so it cannot load as a "
                    "weight as it is; this map knows only PyTorch checkpoints' names.")
        return (f"it gives {got!r}, the name of the known key {owner!r}, though the key is not that one: your "
                "map accepts more spellings than the checkpoint's keys. Compare the whole key with the keys you "
                "know.")
    number = re.match(r"^layers\.([^.]+)\.", got or "")
    if number and not number.group(1).isdigit():
        return (f"the layer number {number.group(1)!r} is not a number, and your map copies it as it is: take a "
                "layer key only when its third part is digits (str.isdigit(), or the regex \\d+).")
    if got is None and (key.startswith("pooler") or "position_ids" in key):
        return ("only three keys are unused, embeddings.position_ids, pooler.dense.weight and pooler.dense.bias. "
                "Compare whole keys (key in {...}), not how they start or what they contain.")
    return ""
