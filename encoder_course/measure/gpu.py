"""The GPU script: notebook 09's attention sweep and notebook 13's unpadding speed-up, measured in one command.

Run on a machine with a CUDA GPU (``--allow-cpu`` tries it on a CPU)::

    python -m encoder_course.measure.gpu --out encoder_course/data/gpu_results.json

It writes the JSON notebook 09 shows, the unpadding rows under ``"unpadding"`` (padded, unpadded and
``nn.TransformerEncoder``'s nested tensors on batches of real passages) and a PNG of both next to it. The
options are :func:`~encoder_course.measure.timing.main`'s, and ``--unpadding-batches``.
"""

from __future__ import annotations

from .bench import unpadding_benchmark
from .timing import main as _sweep_main


def main(argv=None) -> int:
    return _sweep_main(argv, unpadding=unpadding_benchmark)


if __name__ == "__main__":
    raise SystemExit(main())
