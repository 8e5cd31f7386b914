"""The learner's self-check: `pytest --nbval-lax notebooks/NN_name.ipynb` (or `encoder-course check NN`).

pytest reads this file before nbval starts a kernel. It asks the exercise checkers to treat an
exercise that is still a stub as a failure (in JupyterLab they only say "not attempted yet", so that
Run All reaches the end), and it gives the kernel plain tracebacks without colour codes.
"""

import os
import tempfile
from pathlib import Path

os.environ["ENCODER_COURSE_SELF_CHECK"] = "1"

_profile = Path(tempfile.mkdtemp(prefix="encoder-course-ipython-")) / "profile_default"
_profile.mkdir(parents=True)
(_profile / "ipython_config.py").write_text('c.InteractiveShell.colors = "nocolor"\n')
os.environ.setdefault("IPYTHONDIR", str(_profile.parent))
