"""The code style is declared in pyproject.toml ([tool.ruff]) and checked here, so CI runs it."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed (requirements-test.txt has it)")
def test_ruff_finds_nothing():
    result = subprocess.run(["ruff", "check", "encoder_course", "tests", "--output-format", "concise"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]
