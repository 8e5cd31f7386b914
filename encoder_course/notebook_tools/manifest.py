"""The course manifest: every notebook once, with the one name its files share.

Notebook ``NN`` named ``name`` is ``notebooks/solutions/NN_name.ipynb`` (the solution, with stored
outputs) and ``notebooks/NN_name.ipynb`` (the learner version made from it); its figures are in
``encoder_course/plots/name.py``, its explorers in ``encoder_course/widgets/name.py`` and its quiz in
``encoder_course/quizzes/bank/name.py``, where it has them. Its exercises are the registry's
(``checks/registry.py``) whose ``notebook`` is ``NN_name``.

README's course map (``encoder-course execute`` and ``encoder-course learner`` rewrite it between its
markers), the website, the budgets and the command line all read this list: a new notebook is one entry
here beside its files (the maintainers' guide, "Adding something").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .files import BRANCH, REPO_SLUG

PACKAGE = Path(__file__).resolve().parents[1]  # encoder_course/


@dataclass(frozen=True)
class Notebook:
    number: str  # "03"
    name: str  # "masks": the name every file of the notebook shares
    title: str  # "Masks": the notebook's first heading is "03 · Masks"
    teaches: str  # README's "what it teaches" (markdown)
    reading_min: int  # minutes a learner needs to read and do it
    budget_s: float = 60.0  # wall seconds the notebook may take on a 2-core machine (a benchmark's budget)

    def __post_init__(self):
        if not re.fullmatch(r"\d\d", self.number) or not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"notebook {self.number!r} {self.name!r}: a two-digit number and a snake_case name")

    @property
    def stem(self) -> str:
        """``"03_masks"``: the file name of both versions, without ``.ipynb``."""
        return f"{self.number}_{self.name}"

    @property
    def heading(self) -> str:
        """``"03 · Masks"``: the notebook's first heading."""
        return f"{self.number} · {self.title}"

    def solution(self, root: Path) -> Path:
        return Path(root) / "notebooks" / "solutions" / f"{self.stem}.ipynb"

    def learner(self, root: Path) -> Path:
        return Path(root) / "notebooks" / f"{self.stem}.ipynb"

    def module(self, kind: str) -> str | None:
        """The notebook's module of ``kind`` (``"plots"``, ``"widgets"`` or ``"quiz_bank"``), None if it has none:
        ``encoder_course.plots.masks`` for 03's figures."""
        folder = {"plots": PACKAGE / "plots", "widgets": PACKAGE / "widgets",
                  "quiz_bank": PACKAGE / "quizzes" / "bank"}[kind]
        if not (folder / f"{self.name}.py").is_file():
            return None
        package = "encoder_course.quizzes.bank" if kind == "quiz_bank" else f"encoder_course.{kind}"
        return f"{package}.{self.name}"

    @property
    def exercises(self) -> tuple:
        """The notebook's exercises, from the registry, in course order."""
        from ..checks.registry import EXERCISES

        return tuple(ex for ex in EXERCISES.values() if ex.notebook == self.stem)


NOTEBOOKS: tuple[Notebook, ...] = (
    Notebook("00", "start_here", "Start here",
             "How the course works: cells, widgets, exercises and their checks, your own encoder, self-check, "
             "quizzes, GPU cells; the map of the encoder", 20),
    Notebook("01", "tokens_and_positions", "Tokens and positions",
             "Token ids, embedding lookup, permutation equivariance, sinusoidal and learned positions, their "
             "wavelengths, √d_model scaling, relative and rotary positions", 30),
    Notebook("02", "attention", "Attention",
             "Q, K, V from one X; softmax(QKᵀ/√d_k)V step by step on \"The bank approved it\"; attention as a "
             "soft lookup; why √d_k, measured down to the gradient on q", 35),
    Notebook("03", "masks", "Masks",
             "Padding and causal masks, the two mask conventions of PyTorch, why encoders are bidirectional, "
             "the 3-vs-124-pads bug reproduced (identical pads too) and fixed, fully masked rows", 30),
    Notebook("04", "multi_head", "Multi-head attention",
             "Splitting into heads (view/transpose and einops), the 4 × 512 / 8-head shape table, W_O as a sum "
             "over heads, equality with `nn.MultiheadAttention`, heads vs one big head", 30),
    Notebook("05", "residual_and_layernorm", "Residual connections and LayerNorm",
             "Residual paths and gradients, LayerNorm per token (not across the sequence), LayerNorm vs "
             "BatchNorm, the Annotated Transformer's LayerNorm vs `nn.LayerNorm`", 30),
    Notebook("06", "feed_forward", "The feed-forward network",
             "The position-wise FFN, ReLU / GELU / SwiGLU, 2.10 M vs 1.05 M weights, the 4× ratio as a "
             "convention, the FFN as a key-value memory", 30),
    Notebook("07", "encoder_block", "The encoder block",
             "Post-LN vs pre-LN side by side, what matches a published gradient analysis and what does not, "
             "dropout in train vs eval, equality with `nn.TransformerEncoderLayer`", 30),
    Notebook("08", "stacking", "Stacking layers into an encoder",
             "N blocks with their own weights, the final LayerNorm of pre-LN, your own embeddings and stack "
             "(the last parts of your encoder), BERT-base counted exactly (108,891,648), the pooler and the "
             "quoted 110M/340M", 50),
    Notebook("09", "cost", "The cost of attention",
             "FLOPs and memory measured against formulas (on the CPU too), the 2N/6N rules, the attention/FFN "
             "crossover at 6 × d_model, attention timed on CPU and an H200", 40),
    Notebook("10", "training", "Training a small encoder",
             "A small encoder (yours, when it is complete) trained on a task that needs attention: the padding "
             "mask in training, post-LN vs pre-LN, warmup, a learning-rate table over three seeds", 30,
             budget_s=120.0),
    Notebook("11", "pretrained", "A real pretrained encoder",
             "Real all-MiniLM-L6-v2 weights in our encoder and in yours, equal to sentence-transformers; [CLS] "
             "vs mean pooling; similarity and real attention maps", 40),
    Notebook("12", "real_text", "Your encoder on real text",
             "Python's own docs as a corpus: your encoder pretrained as a masked language model (BERT's 80/10/10 "
             "rule) against the unigram baseline, a semantic search against BM25, and contrastive fine-tuning "
             "measured on held-out modules over three seeds", 45, budget_s=180.0),
    Notebook("13", "modern_encoder", "What changed since BERT: a modern encoder",
             "ModernBERT's changes as small edits to your parts: rotary positions and length extrapolation, "
             "GeGLU without biases, local and global attention, unpadding timed against the padded path and "
             "PyTorch's nested tensors, and both designs pretrained for the same time", 45, budget_s=180.0),
    Notebook("14", "review", "Review: the questions they ask next",
             "The questions interviewers ask next, answered with the course's measurements; a ten-question "
             "quiz", 30),
)


def _index(notebooks) -> dict[str, Notebook]:
    by_number: dict[str, Notebook] = {}
    for nb in notebooks:
        if nb.number in by_number or any(nb.name == other.name for other in by_number.values()):
            raise ValueError(f"notebook {nb.stem} is listed twice")
        by_number[nb.number] = nb
    if list(by_number) != sorted(by_number):
        raise ValueError("the notebooks must be listed in course order")
    return by_number


BY_NUMBER: dict[str, Notebook] = _index(NOTEBOOKS)


def notebook(which: str) -> Notebook:
    """A notebook by number (``"3"``, ``"03"``), stem (``"03_masks"``), name (``"masks"``) or file name."""
    text = Path(str(which)).name.removesuffix(".ipynb")
    for nb in NOTEBOOKS:
        if text in (nb.stem, nb.name) or (text.isdigit() and text.zfill(2) == nb.number):
            return nb
    raise KeyError(f"no notebook {which!r} in the course; the notebooks are {', '.join(nb.stem for nb in NOTEBOOKS)}")


def select(names) -> list[Notebook]:
    """The notebooks whose stem contains one of ``names`` (all of them for none), in course order."""
    return [nb for nb in NOTEBOOKS if not names or any(str(n) in nb.stem for n in names)]


# -- README's course map ------------------------------------------------------------------------------

MAP_BEGIN, MAP_END = "<!-- course-map:begin -->", "<!-- course-map:end -->"


def colab_url(stem: str) -> str:
    """The learner version of notebook ``stem`` opened in Colab."""
    return f"https://colab.research.google.com/github/{REPO_SLUG}/blob/{BRANCH}/notebooks/{stem}.ipynb"


def binder_url(stem: str) -> str:
    """The learner version of notebook ``stem`` opened in JupyterLab on Binder."""
    return f"https://mybinder.org/v2/gh/{REPO_SLUG}/{BRANCH}?urlpath=lab/tree/notebooks/{stem}.ipynb"


def hub_url(stem: str, hub: str, *, repo: str | None = None, branch: str = BRANCH) -> str:
    """The learner version of notebook ``stem`` on the JupyterHub at ``hub``: an nbgitpuller link, which clones
    ``repo`` into the learner's home on first use (later clicks pull, keeping the learner's changes) and opens
    the notebook in JupyterLab."""
    from urllib.parse import urlencode

    repo = repo or f"https://github.com/{REPO_SLUG}"
    folder = repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    query = urlencode({"repo": repo, "branch": branch, "urlpath": f"lab/tree/{folder}/notebooks/{stem}.ipynb"})
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def readme_map() -> str:
    """README's course map table, made from the manifest and the registry."""
    rows = ["| # | notebook | what it teaches | reading | exercises | open |", "|---|---|---|---|---|---|"]
    for nb in NOTEBOOKS:
        exercises = ", ".join(f"`{ex.name}`" for ex in nb.exercises) or "—"
        badges = (f"[![Colab](https://colab.research.google.com/assets/colab-badge.svg)]({colab_url(nb.stem)}) "
                  f"[![Binder](https://mybinder.org/badge_logo.svg)]({binder_url(nb.stem)})")
        rows.append(f"| {nb.number} | [{nb.name}](notebooks/{nb.stem}.ipynb) | {nb.teaches} | {nb.reading_min} min "
                    f"| {exercises} | {badges} |")
    return "\n".join(rows)


def rewrite_readme(root: Path) -> bool:
    """Write the course map into README between its markers; True when README changed."""
    readme = Path(root) / "README.md"
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(MAP_BEGIN), text.find(MAP_END)
    if start < 0 or end < start:
        raise ValueError(f"README.md has no {MAP_BEGIN} ... {MAP_END} markers")
    new = text[:start] + MAP_BEGIN + "\n" + readme_map() + "\n" + text[end:]
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return new != text
