"""Facts shared by every notebook: the repository URL and the Colab set-up cell."""

from __future__ import annotations

# The one place the repository's address is kept (README's badges and the Colab cell use it).
REPO_URL = "https://github.com/encoder-course/encoder-course"
REPO_SLUG = "encoder-course/encoder-course"
BRANCH = "main"

COLAB_CELL = f"""# Colab only: install the course package from its repository (does nothing elsewhere).
import sys
if "google.colab" in sys.modules:
    %pip install -q "encoder-course[pretrained] @ git+{REPO_URL}@{BRANCH}\""""
