"""The probing toolkit of the class checkers: the learner's module and the reference, side by side.

A class checker builds a :class:`Pair` (the learner's class at one size, the contract's parameters random and
copied into the package's reference, built with ``implementation="eager"``: the step-by-step path) and then
reads as its exercise's cases, mistakes and probes::

    pair = Pair(name, cls, (d_model, d_ff), Reference(d_model, d_ff), PATHS, seed=31)
    for mode in pair.modes("eval", "train"):
        for label, x in cases:
            pair.check(f"{label}, in {mode}() mode", (x,), MISTAKES, (x, pair.params()), HINT,
                       probes=[pair.settings_probe(label, (x,), SETTINGS)])
    pair.gradients(label, x)

Each check is ``_compare_output``'s, in order: shape, dtype, randomness, state kept between calls (a newly
built copy with the same weights), the listed mistakes, the probes, then where the numbers differ. A probe
varies one thing (:meth:`Pair.setting`: some parameters set, in both modules or in the learner's alone, and
given back afterwards) and returns its diagnosis or "".
"""

from __future__ import annotations

import contextlib
import functools
import math
import weakref

import torch

from ._compare import _check_gradients, _close, _compare_output, _identical
from ._run import ExerciseError, _check_unchanged, _expect_tensor, _gen, _invoke, _randn, _shape, _snapshot

# ----------------------------------------------------------------------------------------------
# Building and filling the learner's module


# The tensors each built module (and submodule) holds right after __init__, by attribute name: a
# tensor that appears later was stored during a forward call.
_BUILT: "weakref.WeakKeyDictionary[torch.nn.Module, frozenset]" = weakref.WeakKeyDictionary()


def _tensor_attributes(module: torch.nn.Module) -> frozenset:
    plain = {k for k, v in vars(module).items() if isinstance(v, torch.Tensor)}
    return frozenset(plain | {k for k, v in module._buffers.items() if v is not None})


def _build(name: str, cls, *args, **kwargs):
    shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    cls_name = getattr(cls, "__name__", type(cls).__name__)
    what = f"when built as {cls_name}({shown})"
    module = _invoke(name, what, cls, *args, **kwargs)
    if not isinstance(module, torch.nn.Module):
        raise ExerciseError(f"{cls_name}({shown}) did not give an nn.Module; your class should "
                            "subclass torch.nn.Module.")
    for sub in module.modules():
        _BUILT[sub] = _tensor_attributes(sub)
    return module


def _kept_state(module: torch.nn.Module) -> list[str]:
    """Tensors the module stored on itself (or on a submodule) during its forward calls: `self.mask`."""
    kept = []
    for path, sub in module.named_modules():
        before = _BUILT.get(sub)
        if before is None:
            continue
        prefix = f"self.{path}." if path else "self."
        kept += [prefix + k for k in sorted(_tensor_attributes(sub) - before)]
    return kept


def _sub(name: str, module, path: str, shape=None):
    obj = module
    parts = path.split(".")
    for i, part in enumerate(parts):
        if not hasattr(obj, part):
            missing = ".".join(parts[: i + 1])
            raise ExerciseError(
                f"Your {name} has no `{missing}`. Keep the names the exercise's __init__ gives "
                "(the checker copies the same weights into the reference through them)."
            )
        obj = getattr(obj, part)
    if shape is not None:
        if not isinstance(obj, torch.Tensor) or tuple(obj.shape) != tuple(shape):
            got = _shape(obj) if isinstance(obj, torch.Tensor) else type(obj).__name__
            raise ExerciseError(f"Your {name}'s `{path}` has shape {got}, expected {tuple(shape)}; keep "
                                "the __init__ the exercise gives.")
        _require_float32(name, path, obj)
    return obj


def _require_own_parameters(name: str, module: torch.nn.Module, paths) -> None:
    """Each of the contract's tensors is a parameter of the module (what an optimizer is given), and none is
    another's: a plain tensor or a buffer never learns, and one module kept under two names learns one set of
    weights for both (the forward can still be right, so only the gradients would show it, as something else)."""
    registered = {id(p) for p in module.parameters()}
    seen = {}
    for path in paths:
        tensor = _sub(name, module, path)
        if not isinstance(tensor, torch.nn.Parameter) or id(tensor) not in registered:
            kind = "a buffer" if path in dict(module.named_buffers()) else "a plain tensor"
            raise ExerciseError(
                f"Your {name}'s `{path}` is {kind}, not a parameter: module.parameters() does not list it, so an "
                "optimizer is never given it and it never learns.\nHint: wrap it in nn.Parameter(...) in "
                "__init__ (self.weight = nn.Parameter(torch.ones(d_model)), say); nn.Linear's weights already are.")
        if id(tensor) in seen:
            raise ExerciseError(
                f"Your {name}'s `{path}` and `{seen[id(tensor)]}` are the same tensor: one module (or parameter) is "
                "kept under two names, so both would learn one set of weights.\nHint: build each part of its own "
                "in __init__ (a new nn.Linear or LayerNorm for each), not self.b = self.a.")
        seen[id(tensor)] = path


def _require_float32(name: str, path: str, tensor: torch.Tensor) -> None:
    """The contract's parameters are float32, as nn.Linear and nn.Parameter make them: the checker's random
    weights would not survive another dtype (in int8 they are all 0), so another dtype is a failure."""
    if tensor.dtype != torch.float32:
        raise ExerciseError(f"Your {name}'s `{path}` is {str(tensor.dtype).replace('torch.', '')}; the exercise's "
                            "parameters are float32 (nn.Linear's and nn.Parameter's default): keep the __init__ "
                            "the exercise gives, without a dtype of your own.")


def _contract_eps(name: str, module, path: str):
    """The eps a LayerNorm of the learner's keeps, when it keeps one: a finite number in (0, 1e-3], as a
    LayerNorm's eps is (1e-5 by default, 1e-12 in BERT). Anything else is a failure named here, never a value
    the reference takes over (a NaN eps would make the reference NaN too). None when the module keeps no eps."""
    eps = getattr(_sub(name, module, path) if path else module, "eps", None)
    if eps is None:
        return None
    where = f"`{path}.eps`" if path else "`eps`"
    if isinstance(eps, torch.Tensor) and eps.requires_grad:
        raise ExerciseError(f"Your {name}'s {where} is a tensor that learns (an nn.Parameter): eps is a fixed small "
                            "number, not a weight. Keep it a plain float, self.eps = eps.")
    if isinstance(eps, torch.Tensor) and eps.numel() == 1 and eps.dtype.is_floating_point:
        eps = eps.item()
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or not 0 < eps <= 1e-3:
        raise ExerciseError(f"Your {name}'s {where} is {eps!r}; a LayerNorm's eps is a small positive number "
                            "(1e-5 by default): keep the eps the exercise gives.")
    return float(eps)


def _randomise(name: str, module: torch.nn.Module, paths, seed: int) -> None:
    """Give the contract's parameters random values (norm gains around 1 and -1, biases around 0).

    Only ``paths`` change: a learner's own extra parameters (a frozen scale, say) keep their values.
    """
    g = _gen(seed)
    for path in paths:
        p = _sub(name, module, path)
        _require_float32(name, path, p)
        if path.endswith("bias"):
            value = _randn(g, *p.shape, scale=0.3)
        elif p.dim() == 1:  # a norm's gain, some of it negative (an abs() or a clamp of gamma shows)
            value = 1.0 + _randn(g, *p.shape, scale=0.3)
            value[1::4] *= -1
        else:
            value = _randn(g, *p.shape, scale=1.0 / math.sqrt(p.shape[-1]))
        p.data.copy_(value.to(p.dtype))


def _copy_params(name: str, cand, ref, paths) -> None:
    for path in paths:
        src = _sub(name, cand, path, shape=tuple(_sub(name, ref, path).shape))
        _sub(name, ref, path).data.copy_(src.detach())


# ----------------------------------------------------------------------------------------------
# Calling it


def _call_inputs(name, module, label, inputs: dict, what: str | None, rehint=None):
    """Call ``module(*inputs.values())`` (a module or a function) as the learner's: a failure that comes from
    something kept on ``self`` says so, other failures go through ``rehint`` (a hint for this exercise), the
    inputs must come back unchanged, and the result must be a tensor (``what`` says which; None: any result)."""
    before = _snapshot(inputs)
    try:
        got = _invoke(name, label, module, *inputs.values())
    except ExerciseError as exc:
        kept = _kept_state(module) if isinstance(module, torch.nn.Module) else []
        if not kept:
            raise (exc if rehint is None else rehint(exc)) from exc.__cause__
        shown = ", ".join(f"`{k}`" for k in kept)
        raise ExerciseError(
            f"Your {name} keeps {shown} from one call to the next {label}, and this call fails with it "
            f"({str(exc).splitlines()[0].split(': ', 1)[-1]}).\nHint: do not store results on self inside "
            "forward (a mask, statistics, keys and values); compute everything from the inputs of this call."
        ) from exc.__cause__
    _check_unchanged(name, before, inputs)
    return got if what is None else _expect_tensor(name, got, label, what)


# ----------------------------------------------------------------------------------------------
# The pair: the learner's module and the reference, side by side


_KEPT_HINT = ("\nHint: do not store results on self inside forward (running statistics, a mask, keys and values); "
              "compute everything from the inputs of this call.")
_DROPOUT_HINT = ("dropout is active in eval mode, something is kept from one call to the next, or a layer is built "
                 "inside forward (new random weights at every call).\nHint: use nn.Dropout modules, which switch off "
                 "in eval(); F.dropout(x, p) needs training=self.training. Build every layer in __init__, and do not "
                 "store results (statistics, a mask, keys) on self during forward.")


def _trimmed(values) -> tuple:
    """The inputs without the trailing ``None``s: an input left out is an input not given."""
    values = list(values)
    while values and values[-1] is None:
        values.pop()
    return tuple(values)


def _covering_prefixes(chosen: list, among: list) -> list:
    """The shortest dotted prefixes under which every path of ``among`` is in ``chosen``, covering ``chosen``."""
    found = []
    for path in chosen:
        parts = path.split(".")
        for n in range(1, len(parts) + 1):
            prefix = ".".join(parts[:n])
            under = [p for p in among if p == prefix or p.startswith(prefix + ".")]
            if all(p in chosen for p in under):
                if prefix not in found:
                    found.append(prefix)
                break
    return found


def _attribute(path: str) -> str:
    """``layers.0.attn.w_q`` as the learner writes it, ``self.layers[0].attn.w_q``."""
    out = "self"
    for part in path.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


class Pair:
    """The learner's module (``cand``, built as ``cls(*args, **kwargs)``) and the package's ``ref``.

    The contract's parameters (``paths``; by default every parameter of the reference) must exist with the
    reference's shapes; they get random values (seeded by ``seed``) that are copied into the reference. The eps
    of each LayerNorm named in ``norms`` is taken over from the learner's when it is a valid one. Inputs are
    passed by the names in ``inputs`` (trailing ``None``s left out); ``what`` names the result for messages;
    ``rehint(error, *values)`` rewrites an error of the learner's code with this exercise's hint; ``before(cand,
    ref)`` runs first (a check of the module's layout, say).
    """

    def __init__(self, name, cls, args, ref, paths=None, *, seed: int, kwargs=None, norms=(),
                 inputs=("x", "mask"), what="the output tensor", rehint=None, before=None):
        self.name, self.ref, self.inputs, self.what, self.rehint = name, ref, inputs, what, rehint
        self.rebuild = functools.partial(_build, name, cls, *args, **(kwargs or {}))
        self.cand = cand = self.rebuild()
        if before is not None:
            before(cand, ref)
        self.paths = tuple(paths) if paths is not None else tuple(path for path, _ in ref.named_parameters())
        for path in self.paths:
            _sub(name, cand, path, shape=tuple(_sub(name, ref, path).shape))
        _require_own_parameters(name, cand, self.paths)
        _randomise(name, cand, self.paths, seed)
        _copy_params(name, cand, ref, self.paths)
        for norm in norms:
            eps = _contract_eps(name, cand, norm)
            if eps is not None:
                (_sub(name, ref, norm) if norm else ref).eps = eps
        ref.eval()

    # ------------------------------------------------------------------------------------------
    # Calling

    def modes(self, *modes):
        """Each mode in turn ("eval", "train"), the learner's module switched to it."""
        for mode in modes:
            getattr(self.cand, mode)()
            yield mode

    def params(self) -> dict:
        """The reference's values of the contract's parameters (what the listed mistakes compute with)."""
        return {path: _sub(self.name, self.ref, path).detach() for path in self.paths}

    def call(self, label, *values, module=None):
        """The learner's module (or another copy of it) on ``values``, checked as its answer to this exercise."""
        given = dict(zip(self.inputs, _trimmed(values)))
        rehint = None if self.rehint is None else (lambda exc: self.rehint(exc, *values))
        return _call_inputs(self.name, self.cand if module is None else module, label, given, self.what,
                            rehint=rehint)

    def want(self, *values):
        return self.ref(*_trimmed(values))

    def fresh(self, label, *values):
        """The output of a newly built copy with the same weights and mode: state kept between calls shows."""
        copy = self.rebuild()
        copy.load_state_dict(self.cand.state_dict(), strict=False)
        copy.train(self.cand.training)
        return self.call(label, *values, module=copy)

    def repeatable(self, label, got, *values, unrepeatable=_DROPOUT_HINT) -> None:
        """In eval() mode the module must give the same output twice (dropout left on, or state kept)."""
        if _identical(self.call(label, *values), got):
            return
        kept = _kept_state(self.cand)
        if kept:
            raise ExerciseError(f"Your {self.name} gives a different output each time {label}: it keeps "
                                f"{', '.join(f'`{k}`' for k in kept)} from one call to the next.{_KEPT_HINT}")
        raise ExerciseError(f"Your {self.name} gives a different output each time {label}: {unrepeatable}")

    def check(self, label, values, mistakes, variant_args, hint, *, repeat=None, unrepeatable=_DROPOUT_HINT,
              probes=(), **options):
        """One case: the learner's answer on ``values`` against the reference's (see ``_compare_output``).

        ``probes`` are called with no argument when no listed mistake fits; ``options`` go to
        ``_compare_output`` (``case_hint``, ``factor``, ``random_hint``, ``others``, ``axes``). The answer must come
        out the same twice in eval() mode (``repeat``: in train() mode too). Returns the answer.
        """
        got = self.call(label, *values)
        if (not self.cand.training) if repeat is None else repeat:
            self.repeatable(label, got, *values, unrepeatable=unrepeatable)
        options.setdefault("masked", len(values) > 1 and values[1] is not None)
        _compare_output(self.name, got, self.want(*values), label, mistakes, variant_args, hint,
                        rerun=functools.partial(self.call, label, *values),
                        fresh=functools.partial(self.fresh, label, *values),
                        probes=(*probes, self.unused_probe(label, values)), **options)
        return got

    def gradients(self, label, *values) -> None:
        """The gradients of the contract's parameters (and of a float input) against the reference's, in eval()."""
        self.cand.eval()
        first, rest = values[0], values[1:]
        grad_inputs = {"x": first} if first.is_floating_point() else {}

        def mine(**given):
            return self.call(label, given.get("x", first), *rest)

        def theirs(**given):
            return self.want(given.get("x", first), *rest)

        try:
            _check_gradients(self.name, label, mine, theirs, grad_inputs,
                             {path: _sub(self.name, self.cand, path) for path in self.paths},
                             {path: _sub(self.name, self.ref, path) for path in self.paths})
        except ExerciseError as exc:
            kept = _kept_state(self.cand)
            if not kept or "cuts the gradient" not in str(exc):
                raise
            said = str(exc).split("\nHint:")[0]
            raise ExerciseError(
                f"{said}\nYour forward keeps {', '.join(f'`{k}`' for k in kept)} from an earlier call: a tensor "
                "made from the weights then is a copy, which no gradient "
                "passes back through to the weights, and which does not follow them when they change (the next "
                "training step would use the old values)." + _KEPT_HINT) from None

    # ------------------------------------------------------------------------------------------
    # Probing: one thing varied at a time

    @contextlib.contextmanager
    def setting(self, values: dict, *, both: bool = True):
        """Parameters set (a number for every entry, or "identity") in the learner's module and, with ``both``, in
        the reference; every one given back afterwards."""
        modules = (self.cand, self.ref) if both else (self.cand,)
        saved = [(p, p.detach().clone()) for path in values for p in (_sub(self.name, m, path) for m in modules)]
        try:
            with torch.no_grad():
                for path, value in values.items():
                    for module in modules:
                        p = _sub(self.name, module, path)
                        if value == "identity":
                            p.copy_(torch.eye(*p.shape, dtype=p.dtype))
                        else:
                            p.fill_(value)
            yield
        finally:
            with torch.no_grad():
                for p, value in saved:
                    p.copy_(value)

    def unused_probe(self, label, values):
        """A probe, the last one: the contract's parameters the learner's output does not depend on (in eval()).

        Each parameter in turn is moved by the same random amount in both modules: where the reference's output
        changes and the learner's stays exactly the same, the learner's forward never uses that parameter (or
        undoes it)."""

        def probe() -> str:
            if self.cand.training:
                return ""
            first = values[0]
            # Inputs of about 1 as well: on large ones a saturating function (a clamp) hides what it reads.
            tried = [values] + ([(first / float(first.abs().max()), *values[1:])]
                                if first.is_floating_point() and float(first.abs().max()) > 1 else [])
            unused, inert = [], []  # not used by the learner; without effect in the reference either
            try:
                with torch.no_grad():
                    before = [(self.call(label, *given), self.want(*given)) for given in tried]
                    for path in self.paths:
                        delta = torch.randn(_sub(self.name, self.ref, path).shape, generator=_gen(0))
                        with self.moved(path, delta):
                            after = [(self.call(label, *given), self.want(*given)) for given in tried]
                        if all(_close(moved, want) for (_, want), (_, moved) in zip(before, after)):
                            inert.append(path)
                        elif all(got.shape == base.shape and torch.equal(got, base)
                                 for (base, _), (got, _) in zip(before, after)):
                            unused.append(path)
            except ExerciseError:
                return ""
            if not unused:
                return ""
            names = [_attribute(prefix) for prefix in _covering_prefixes(unused, [p for p in self.paths
                                                                                  if p not in inert])]
            many = len(names) > 1
            listed = ", ".join(names[:-1]) + " and " + names[-1] if many else names[0]
            return (f"your output stays exactly the same when {listed} {'change' if many else 'changes'} "
                    f"({'their' if many else 'its'} weights moved at random), while the reference's changes: "
                    "your forward never uses "
                    + ("them" if many else "it") + " (or undoes the effect). Each of the module's own "
                    "layers must enter the computation.")

        return probe

    @contextlib.contextmanager
    def moved(self, path: str, delta: torch.Tensor):
        """The parameter ``path`` moved by ``delta`` in both modules, given back afterwards."""
        params = [_sub(self.name, module, path) for module in (self.cand, self.ref)]
        saved = [p.detach().clone() for p in params]
        try:
            with torch.no_grad():
                for p in params:
                    p.add_(delta.to(p.dtype))
            yield
        finally:
            with torch.no_grad():
                for p, value in zip(params, saved):
                    p.copy_(value)

    def settings_probe(self, label, values, settings, factor: float = 1.0):
        """A probe: the first setting (``{path: value}``, given to both modules) under which the learner's answer
        on ``values`` is right, whose diagnosis (the pair's second item) then says where the mistake is."""

        def probe() -> str:
            for setting, diagnosis in settings:
                try:  # a module that cannot take the setting, or fails with it, says nothing here
                    with self.setting(setting), torch.no_grad():
                        got, want = self.call(label, *values), self.want(*values)
                except ExerciseError:
                    continue
                if got.shape == want.shape and _close(got, want, factor):
                    return diagnosis
            return ""

        return probe
