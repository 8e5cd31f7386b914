"""The learner's modules: building them, reaching their parameters, randomising them, calling them.

The class checkers build the learner's class at several sizes, give the contract's parameters random
values, copy those into the package's reference module (built with ``implementation="eager"``: the step-by-step
path), and call both on the same inputs.
"""

from __future__ import annotations

import math
import weakref

import torch

from ._compare import _check_gradients, _close, _identical
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


def _call_module(name, module, label, *args):
    inputs = {"x": args[0]}
    if len(args) > 1 and args[1] is not None:
        inputs["mask"] = args[1]
    return _call_inputs(name, module, label, inputs, "the output tensor")


def _call_inputs(name, module, label, inputs: dict, what: str, rehint=None):
    """Call ``module(*inputs.values())`` as the learner's: a failure that comes from something kept on ``self``
    says so, other failures go through ``rehint`` (a hint for this exercise), the inputs must come back
    unchanged, and the result must be a tensor (``what`` says which)."""
    before = _snapshot(inputs)
    try:
        got = _invoke(name, label, module, *inputs.values())
    except ExerciseError as exc:
        kept = _kept_state(module)
        if not kept:
            raise (exc if rehint is None else rehint(exc)) from exc.__cause__
        shown = ", ".join(f"`{k}`" for k in kept)
        raise ExerciseError(
            f"Your {name} keeps {shown} from one call to the next {label}, and this call fails with it "
            f"({str(exc).splitlines()[0].split(': ', 1)[-1]}).\nHint: do not store results on self inside "
            "forward (a mask, statistics, keys and values); compute everything from the inputs of this call."
        ) from exc.__cause__
    _check_unchanged(name, before, inputs)
    return _expect_tensor(name, got, label, what)


def _check_repeatable(name, module, label, got, *args) -> None:
    """In eval() mode a module must give the same output twice: catch dropout left switched on."""
    again = _call_module(name, module, label, *args)
    if not _identical(again, got):
        kept = _kept_state(module)
        if kept:
            raise ExerciseError(
                f"Your {name} gives a different output each time {label}: it keeps "
                f"{', '.join(f'`{k}`' for k in kept)} from one call to the next.\nHint: do not store results "
                "on self inside forward (running statistics, a mask, keys and values); compute everything "
                "from the inputs of this call."
            )
        raise ExerciseError(
            f"Your {name} gives a different output each time {label}: dropout is active in eval mode, or "
            "something is kept from one call to the next.\nHint: use nn.Dropout modules, which switch off "
            "in eval(); F.dropout(x, p) needs training=self.training. Do not store results (statistics, "
            "a mask, keys) on self during forward."
        )


def _fresh_output(name, rebuild, cand, label, *inputs):
    """The output of a newly built copy of the learner's module, with the same weights and mode."""
    fresh = rebuild()
    fresh.load_state_dict(cand.state_dict(), strict=False)
    fresh.train(cand.training)
    return _call_module(name, fresh, label, *inputs)


def _module_gradients(name, cand, ref, paths, label, x, *extra) -> None:
    """Compare the gradients for x and the contract's parameters (both modules in eval mode)."""
    cand.eval()
    _check_gradients(name, label, lambda x: _call_module(name, cand, label, x, *extra),
                     lambda x: ref(x, *[e for e in extra if e is not None]), {"x": x},
                     {path: _sub(name, cand, path) for path in paths},
                     {path: _sub(name, ref, path) for path in paths})


# ----------------------------------------------------------------------------------------------
# Probing it: set one parameter at a time, in both modules, and see whether the answer comes right


def _setting_probe(name, cand, ref, label, inputs, settings, factor=1.0) -> str:
    """The first setting (``{path: value}``, given to both modules) under which the learner's output is right.

    ``settings`` is a list of (``{path: value}``, diagnosis): a value is a number (every entry) or
    "identity" (an identity matrix). With the setting, a mistake in what it switches off disappears,
    which localises it. Both modules get their parameters back afterwards. Returns the diagnosis, or "".
    """
    paths = sorted({path for values, _ in settings for path in values})
    saved = {path: (_sub(name, cand, path).detach().clone(), _sub(name, ref, path).detach().clone())
             for path in paths}
    try:
        for values, diagnosis in settings:
            for path, (mine, theirs) in saved.items():
                _sub(name, cand, path).data.copy_(mine)
                _sub(name, ref, path).data.copy_(theirs)
            for path, value in values.items():
                for module in (cand, ref):
                    p = _sub(name, module, path)
                    if value == "identity":
                        p.data.copy_(torch.eye(*p.shape, dtype=p.dtype))
                    else:
                        p.data.fill_(value)
            with torch.no_grad():
                try:
                    got = _call_module(name, cand, label, *inputs)
                except ExerciseError:
                    continue
                want = ref(*[i for i in inputs if i is not None])
            if got.shape == want.shape and _close(got, want, factor):
                return diagnosis
    finally:
        for path, (mine, theirs) in saved.items():
            _sub(name, cand, path).data.copy_(mine)
            _sub(name, ref, path).data.copy_(theirs)
    return ""
