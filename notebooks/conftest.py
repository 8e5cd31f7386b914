"""The learner's self-check: `pytest --nbval-lax notebooks/NN_name.ipynb` (or `encoder-course check NN`).

pytest reads this file before nbval starts a kernel. It asks the exercise checkers to treat an
exercise that is still a stub as a failure (in JupyterLab they only say "not attempted yet", so that
Run All reaches the end), and it gives the kernel plain tracebacks without colour codes.
"""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

os.environ["ENCODER_COURSE_SELF_CHECK"] = "1"

if "IPYTHONDIR" not in os.environ:
    _ipython_dir = Path(tempfile.mkdtemp(prefix="encoder-course-ipython-"))
    atexit.register(shutil.rmtree, _ipython_dir, ignore_errors=True)
    (_ipython_dir / "profile_default").mkdir()
    (_ipython_dir / "profile_default" / "ipython_config.py").write_text('c.InteractiveShell.colors = "nocolor"\n')
    os.environ["IPYTHONDIR"] = str(_ipython_dir)
