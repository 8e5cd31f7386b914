"""Exercise checkers: compare a learner's code with the package's reference and name the mistake.

``verdict(key, candidate)`` returns the result as a :class:`Verdict` (status "passed", "failed" or
"not attempted", and the message), printing and raising nothing: the grader uses it. While the
candidate runs, the course's own answer to that exercise is out of reach (calling it fails the check),
and so is whatever else in the package computes the same answer (the registry's ``locked``: building
``Encoder`` or calling ``count_parameters`` for ``parameter_count``, ``name_map`` for ``rename_key``).

Each ``check_<name>(candidate)``, what the notebooks call, either

* prints one line starting with "✓" (the code is right) and, in a notebook, saves the answer as a
  part of the learner's own encoder (``encoder_course.yours``), saying where,
* prints one line "… <name>: not attempted yet (…)" when the candidate still raises
  ``NotImplementedError`` (the exercise stub), and returns without raising so Run All goes on (under
  the self-check, ``ENCODER_COURSE_SELF_CHECK=1``, it raises instead), or
* raises :class:`ExerciseError` (an ``AssertionError``) whose message says what is wrong in plain
  words and how to look for it. If the learner's code itself raised, that exception is chained.

How the checks work. The candidate runs on small, fixed, randomised inputs (batched and multi-head
shapes, padding masks, ``d_v != d_k``, tiny (1e-3) and large magnitudes) and, for classes, with
every parameter (norms included) set to random values that are copied into the package's reference
module. Where the result differs from the reference, the checker computes the usual mistakes
(softmax over the wrong axis, missing scaling, inverted mask, heads split without the transpose,
unbiased variance, ...) on the same inputs and names the one the learner's result matches. Where no
listed slip explains it, every checker probes the answer as a teaching assistant would, varying one
thing at a time, and names what the answer responds to wrongly, with the measured difference:
each row of a position table looked up among the positions; a pad_id that appears nowhere and the
sequences reversed (masks); out against the learner's own weights, v set to zeros and to the identity,
every key shifted by one vector (attention); one parameter of a module set at a time (a bias to
zero, a layer to the identity, the queries to zero, a sublayer switched off), one head against several,
gamma doubled, x shifted or scaled, the activation shown alone; a config field (``parameter_count``);
one block, blocks of one key and small scores (online softmax); one table at a time set to zero and the
position rows each token gets (``Embeddings``); the output after fewer layers, the attention switched off,
one layer alone (``Encoder``); the padding moved or changed (``mean_pool``, ``masked_token_loss``); which
layers and parts go wrong (``rename_key``). When no probe finds a cause, the message still localises the
difference (entries in the wrong order, one factor or one offset for every value, which sequences,
positions or features differ); it never says only that the numbers differ. A NaN or infinite gradient,
also through fully masked rows and all-padding sequences, is a named mistake everywhere gradients are
checked. The tests count who named each catalogued mistake (``_compare.probe`` records every probe's
diagnosis).

Design decisions (documented for teachers and maintainers):

* **Fully masked query rows are not tested** by the attention, multi-head and block checkers. The
  package returns zero weights there; a ``-inf`` fill gives NaN and a ``torch.finfo(dtype).min`` fill
  gives uniform weights. Those exercises do not ask for that case, so every mask they use leaves at
  least one key per query row, and all three behaviours are accepted. The online softmax
  (notebook 09) is where the case is taught: there fully masked rows must give zeros, as the package
  does, and NaN or the mean of v is named. Likewise ``mean_pool`` must give zeros for a sequence with
  no real token.
* **Accepted although unusual**: ``log_softmax`` before ``cross_entropy`` (a shift per row, which
  cross-entropy ignores); a two-pass blockwise softmax; a ``ValueError`` subclass from ``rename_key``.
  Refused with a reason: ``KeyError`` from ``rename_key`` (the loader catches ``ValueError`` to list
  every unknown key), a float or tensor from ``parameter_count``, a LayerNorm variance computed as
  ``E[x^2] - E[x]^2`` (right in exact arithmetic, it loses every digit of the variance when the mean is
  large next to the spread: a float64 input of 1e8 + values of about 1 is checked), and a module whose
  weights are plain tensors or buffers, or one part kept under two names (``self.w_k = self.w_q``).
* **Tolerance.** Float32 results are compared element-wise with
  ``|got - want| <= 2e-5 * max|want| + 1e-4 * |want|`` (a tolerance relative to the size of the
  numbers, so the 1e-3 and the large inputs are judged alike), which accepts every correct order of
  operations (einsum, pre-scaled queries, ``F.layer_norm``, ...) and rejects every mistake we know.
* **Time.** Each call of the candidate on the tiny inputs may use :data:`TIME_LIMIT` seconds of
  processor time (``ENCODER_COURSE_TIME_LIMIT`` sets it; 30 times that by the clock for code that
  waits). A timer signal stops it where possible, in the learner's own code only (``_timer.py``): never
  half-way through an import or the course's code, so a time-out leaves the kernel healthy.
* The global random state is saved and restored, so a check cell never changes the numbers of the
  cells after it.
* What the learner's code prints or warns while it is checked is held back, so a passing check cell
  shows only its pass line (what nbval compares); a failure message ends with the last lines printed.
* **What the learner sees.** A message names the mistake in the learner's words; the hint after an
  error of their code points to its cause (a missing import names the import to add, a mask routed
  to the wrong head or sequence says so), and the mask part of a shape hint appears only when the
  failing call had a mask. In IPython the traceback shows the learner's frames only (no checker or
  ``nn.Module`` frames). Every catalogue entry in ``tests/checks`` asserts the phrase that diagnoses
  its mistake; a generic phrase ("different numbers", a case label) fails the tests.

Where things are (one file per exercise, named like the model file it checks):

* ``registry.py``: every exercise declared once (key, name, notebook, kind, reference, shape hint);
* ``mistakes.py``: the stable id of each mistake a message names (``data/mistakes.json``), for the grader;
* ``positions.py``, ``attention.py``, ``masks.py``, ``multi_head.py``, ``layer_norm.py``,
  ``feed_forward.py``, ``block.py``, ``embeddings.py``, ``encoder.py``, ``counting.py``, ``blockwise.py``,
  ``pooling.py``, ``training.py``, ``interop.py``, ``masked_lm.py``, ``contrastive.py``: each exercise's checker
  (named like the package module it checks), its inputs and its catalogue of mistakes;
* ``_run.py``: running the learner's code safely (error hints, the verdict wrapper); ``_timer.py``: the time limit;
* ``_compare.py``: comparing numbers (tolerance, mistakes matched, gradients, randomness probes);
* ``_modules.py``: the probing toolkit of the class checkers: ``Pair``, the learner's module and the
  reference side by side with the same random weights (each case checked, one setting probed at a time).

A new exercise is one entry in ``registry.py`` and a ``check_<key>`` wrapped by ``@_checker("<key>")`` in
one of the checker files: the files are found and the checkers exported here by themselves.
"""

from __future__ import annotations

import importlib
import pkgutil

from .registry import EXERCISES  # plain data: importing the registry loads neither torch nor a checker

_MACHINERY = ("CHECKERS", "TIME_LIMIT", "ExerciseError", "Verdict", "verdict")

__all__ = ["EXERCISES", "ExerciseError", "TIME_LIMIT", "Verdict", "verdict", *(f"check_{key}" for key in EXERCISES)]


def _load_checkers() -> None:
    """Import every checker file (each public module of this package registers its checkers)."""
    from . import _run

    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_") and module.name not in ("registry", "mistakes"):
            importlib.import_module(f"{__name__}.{module.name}")
    unchecked = [key for key in EXERCISES if key not in _run.CHECKERS]
    if unchecked:
        raise ImportError(f"no checker for the exercises {', '.join(unchecked)}: write check_<key> with "
                          "@_checker(\"<key>\") in a file of encoder_course/checks/")
    globals().update({name: getattr(_run, name) for name in _MACHINERY})
    globals().update({f"check_{key}": _run.CHECKERS[key] for key in EXERCISES})


def __getattr__(name: str):
    """The checkers and their machinery load on first use (PEP 562), so the registry alone stays light."""
    if name in _MACHINERY or (name.startswith("check_") and name[len("check_"):] in EXERCISES):
        _load_checkers()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
