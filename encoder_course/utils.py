"""Small helpers for the notebooks: seeding, showing the package's source, environment facts."""

from __future__ import annotations

import inspect
import platform
import random

import torch


def seed_everything(seed: int = 0) -> None:
    """Seed Python's and torch's random generators so a notebook gives the same numbers each run."""
    random.seed(seed)
    torch.manual_seed(seed)


def source_of(obj) -> str:
    """The source code of a function, class or method of the package, as text."""
    return inspect.getsource(obj)


def show_source(obj) -> None:
    """Display the source of ``obj`` with syntax highlighting in a notebook (plain text elsewhere)."""
    code = source_of(obj)
    try:
        from IPython.display import Code, display
    except ImportError:  # outside IPython
        import sys

        sys.stdout.write(code)
        return
    display(Code(code, language="python"))


def environment() -> dict[str, str]:
    """Versions and hardware the course is running on (no paths)."""
    info = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "not available (CPU only)",
        "cpu threads": str(torch.get_num_threads()),
    }
    for name in ("einops", "matplotlib", "ipywidgets"):
        try:
            module = __import__(name)
            info[name] = getattr(module, "__version__", "?")
        except ImportError:
            info[name] = "not installed"
    return info
