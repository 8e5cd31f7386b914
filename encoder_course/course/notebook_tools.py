"""Facts shared by every notebook: the repository URL and the Colab set-up cell."""

from __future__ import annotations

# The one place the repository's address is kept (README's badges and the Colab cell use it).
REPO_URL = "https://github.com/encoder-course/encoder-course"
REPO_SLUG = "encoder-course/encoder-course"
BRANCH = "main"
COLAB_SOURCE = f"git+{REPO_URL}@{BRANCH}"

_COLAB_TEMPLATE = '''# Colab only: install the course, keeping Colab's own torch and widgets (does nothing elsewhere).
import sys
if "google.colab" in sys.modules:
    import subprocess
    from importlib.metadata import version
    keep = [f"{{name}}=={{version(name)}}" for name in ("torch", "ipywidgets")]  # never replace Colab's own
    course = "encoder-course[pretrained] @ {source}"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", course, *keep],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("Installing the course failed, so the cells below would fail too:\\n"
                           + done.stderr[-1500:] + "\\nCheck that this runtime reaches the internet, "
                           "then run this cell again.")'''


def colab_cell(source: str = COLAB_SOURCE) -> str:
    """The first cell of every notebook, installing the course from ``source`` (a pip URL) on Colab."""
    return _COLAB_TEMPLATE.format(source=source)


COLAB_CELL = colab_cell()
