"""How long the grader takes for a class: 30 submissions of notebook 03, graded as a teacher would.

``python -m encoder_course.grading.bench [--jobs N] [--students 30]`` writes a class into a
temporary folder (learner notebooks, most answered right, some wrong, some untouched, one whose
answer raises), grades it with ``encoder-course grade`` and prints the wall time, the seconds per
submission, the peak memory (the grader's own, and of all its processes together, sampled every 0.2 s),
how the time per submission changed from the first to the last third of the class, and the machine. A
benchmark, not a test: the teachers' guide quotes its figures.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import tempfile
import threading
import time
from pathlib import Path

from .grade import grade

ANSWERS = {
    "right": {
        "padding_mask": "def padding_mask(token_ids, pad_id):\n    return (token_ids != pad_id)[:, None, None, :]\n",
        "causal_mask": "def causal_mask(length):\n    return torch.ones(length, length, dtype=torch.bool).tril()\n",
    },
    "wrong": {
        "padding_mask": "def padding_mask(token_ids, pad_id):\n    return (token_ids > pad_id)[:, None, None, :]\n",
        "causal_mask": "def causal_mask(length):\n    return torch.ones(length, length, dtype=torch.bool).triu()\n",
    },
    "raises": {
        "padding_mask": "def padding_mask(token_ids, pad_id):\n    return token_ids.view(-1, 1, 1)[pad_id]\n",
        "causal_mask": "def causal_mask(length):\n    return torch.tril(length)\n",
    },
}
#: The class: what each share of the students handed in (the rest hand in the notebook untouched).
MIX = (("right", 0.6), ("wrong", 0.2), ("raises", 0.05))


def _learner_notebook(root: Path) -> dict:
    return json.loads((root / "notebooks" / "03_masks.ipynb").read_text(encoding="utf-8"))


def _answered(nb: dict, answers: dict) -> dict:
    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        meta = cell.get("metadata", {}).get("encoder_course", {})
        if meta.get("role") == "exercise" and meta.get("exercise") in answers:
            cell["source"] = answers[meta["exercise"]]
    return nb


def write_class(folder: Path, root: Path, students: int) -> dict:
    """``students`` submissions in ``folder``/<student>/03_masks.ipynb; returns how many of each kind."""
    stub = _learner_notebook(root)
    kinds = []
    for kind, share in MIX:
        kinds += [kind] * round(share * students)
    kinds += ["untouched"] * (students - len(kinds))
    for i, kind in enumerate(kinds):
        nb = stub if kind == "untouched" else _answered(stub, ANSWERS[kind])
        path = folder / f"student{i:02d}" / "03_masks.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(nb), encoding="utf-8")
    return {kind: kinds.count(kind) for kind in dict.fromkeys(kinds)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=0, help="submissions graded at once (default: the cores)")
    parser.add_argument("--students", type=int, default=30)
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        made = write_class(folder, root, args.students)
        log = io.StringIO()
        peak, done = [0.0], threading.Event()
        sampler = threading.Thread(target=_sample_memory, args=(peak, done), daemon=True)
        sampler.start()
        start = time.perf_counter()
        results, code = grade([folder], csv_path=Path(tmp) / "grades.csv",
                              solutions_dir=root / "notebooks" / "solutions", out=log, jobs=args.jobs)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
    if code != 0 or len(results) != args.students:
        print(log.getvalue())
        return 1
    jobs = args.jobs or os.cpu_count() or 1
    print(f"class: {args.students} submissions of notebook 03 ({', '.join(f'{n} {k}' for k, n in made.items())})")
    print(f"graded in {wall:.1f} s with {jobs} job(s): {wall / args.students:.2f} s per submission")
    third = max(1, len(results) // 3)
    first, last = (statistics.mean(r.seconds for r in part) for part in (results[:third], results[-third:]))
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory: the grader {own:.0f} MB, all its processes together {peak[0]:.0f} MB (PSS); each submission "
          f"took {first:.2f} s in the first third of the class and {last:.2f} s in the last")
    print(next(line for line in log.getvalue().splitlines() if line.startswith("verdict processes:")))
    from ..measure.timing import machine

    print(f"machine: {machine()}")
    return 0


def _sample_memory(peak: list, done) -> None:
    """The largest memory of this process and all its descendants together, until ``done`` is set: each one's
    proportional set size (a page shared by n processes counts 1/n in each, so the fork server's torch is
    counted once), or its resident size where the system gives no PSS."""
    import psutil

    me = psutil.Process()
    while not done.wait(0.2):
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                info = p.memory_full_info()
                total += getattr(info, "pss", info.rss)
            except psutil.Error:
                pass
        peak[0] = max(peak[0], total / 2**20)


if __name__ == "__main__":
    raise SystemExit(main())
