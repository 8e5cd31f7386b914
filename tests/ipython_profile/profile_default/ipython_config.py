# Plain tracebacks under nbval and the tests (no ANSI colour codes).
c.InteractiveShell.colors = "nocolor"

# The notebook tests share a training notebook's expensive calls between its two versions' runs
# (tests/notebook_tools/notebook_replay.py); only a kernel they start with ENCODER_COURSE_REPLAY set loads it.
import os  # noqa: E402

if os.environ.get("ENCODER_COURSE_REPLAY"):
    _replay = os.path.join(os.path.dirname(__file__), "..", "..", "notebook_tools", "notebook_replay.py")
    c.InteractiveShellApp.exec_lines = [
        "import runpy as _runpy; _runpy.run_path(%r)['install'](); del _runpy" % os.path.abspath(_replay)]
