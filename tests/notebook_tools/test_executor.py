"""The notebook runner: the course's one executor (`encoder-course execute`, budgets, the self-check, the tests).

A kernel can die at start when one of the ports jupyter_client picked is taken before the kernel
binds it (CI saw "Address already in use" once with two test workers). The runner must start a new
kernel on fresh ports instead of reporting the notebook as broken.

It also stores what `encoder-course execute` keeps: every widget's state (the website edition draws
widgets from it), and notebooks written by `notebook_tools.write_notebook` that a re-run leaves as they
were, but for outputs that really change.
"""

from __future__ import annotations

import io
import re
import socket

import jupyter_client.manager
import nbformat
import pytest

from encoder_course.notebook_tools import executor

pytestmark = pytest.mark.notebooks


def tiny_notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 6 * 7"), nbformat.v4.new_code_cell("print(x)")]
    return nb


@pytest.fixture
def busy_port():
    """A TCP port on 127.0.0.1 held open for the whole test, so a kernel told to use it cannot bind it."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def colliding_manager(busy_port: int, collisions: int):
    """A KernelManager whose first ``collisions`` kernels are given a port that is already taken."""

    class Colliding(jupyter_client.manager.KernelManager):
        starts = 0

        def start_kernel(self, **kwargs):
            if Colliding.starts < collisions:
                self.cache_ports = False  # otherwise the provisioner replaces every port with its own pick
                self.stdin_port = busy_port
            Colliding.starts += 1
            return super().start_kernel(**kwargs)

    return Colliding


def test_a_kernel_that_dies_at_start_is_started_again(busy_port, monkeypatch, tmp_path):
    manager = colliding_manager(busy_port, collisions=1)
    monkeypatch.setattr(jupyter_client.manager, "KernelManager", manager)
    nb = tiny_notebook()
    run = executor.run_notebook(nb, timeout=120, cwd=tmp_path)
    assert manager.starts == 2
    assert run.stop_reason is None and run.executed == [0, 1]
    assert nb.cells[1].outputs[0]["text"] == "42\n"


def test_a_kernel_that_never_starts_is_reported_as_dead(busy_port, monkeypatch, tmp_path):
    manager = colliding_manager(busy_port, collisions=99)
    monkeypatch.setattr(jupyter_client.manager, "KernelManager", manager)
    run = executor.run_notebook(tiny_notebook(), timeout=120, cwd=tmp_path)
    assert manager.starts == executor.START_ATTEMPTS
    assert (run.stop_reason, run.stopped_at, run.executed) == ("kernel died", 0, [])


def test_the_run_returns_seconds_after_its_last_cell(tmp_path):
    """No waiting after the last cell: the kernel is shut down at once, even with a busy core."""
    import time

    start = time.monotonic()
    run = executor.run_notebook(tiny_notebook(), timeout=120, cwd=tmp_path)
    after_last_cell = (time.monotonic() - start) - run.seconds
    assert run.stop_reason is None
    assert after_last_cell < 10, f"{after_last_cell:.1f} s between the last cell and the end of the run"


def test_the_first_output_is_timed_at_the_end_of_the_first_cell_that_shows_something(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import time\ntime.sleep(1.0)"), nbformat.v4.new_code_cell("print('hi')"),
                nbformat.v4.new_code_cell("time.sleep(1.0)\nprint('later')")]
    run = executor.run_notebook(nb, timeout=120, cwd=tmp_path)
    assert run.first_output_s is not None and 1.0 <= run.first_output_s <= run.seconds - 1.0
    quiet = executor.run_notebook(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), timeout=120,
                                  cwd=tmp_path)
    assert quiet.first_output_s is None


# --- what `encoder-course execute` stores: widget state, and a notebook that a re-run leaves as it was -------

SLIDER = "import ipywidgets as W\nslider = W.IntSlider(value=3, min=0, max=9, description='n')\nslider"
OUTPUT = "out = W.Output()\nwith out:\n    print('drawn inside the widget')\nout"
CLOCK = "import time\nprint(time.time())"


def widget_notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Widgets"), nbformat.v4.new_code_cell(SLIDER),
                nbformat.v4.new_code_cell(OUTPUT), nbformat.v4.new_code_cell(CLOCK)]
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index}"
    return nb


def widget_state(nb) -> dict:
    return nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]


def test_the_run_stores_each_widgets_state_as_nbclient_does(tmp_path):
    from encoder_course.site.outputs import WIDGET_VIEW, widget_outputs

    nb = widget_notebook()
    run = executor.run_notebook(nb, timeout=120, cwd=tmp_path, cell_timeout=60)
    assert run.stop_reason is None and run.executed == [1, 2, 3]
    assert [c.get("execution_count") for c in nb.cells[1:]] == [1, 2, 3]
    state = widget_state(nb)
    slider_id = nb.cells[1].outputs[0]["data"][WIDGET_VIEW]["model_id"]
    slider = state[slider_id]
    assert (slider["model_name"], slider["model_module"]) == ("IntSliderModel", "@jupyter-widgets/controls")
    assert slider["state"]["value"] == 3 and slider["state"]["description"] == "n"
    assert slider["state"]["layout"].removeprefix("IPY_MODEL_") in state  # its layout model is stored too
    # what the Output widget displayed is in its state, not in the cell's outputs
    output_view = nb.cells[2].outputs[0]["data"]
    shown = state[output_view[WIDGET_VIEW]["model_id"]]["state"]["outputs"]
    assert [(o["output_type"], o["text"]) for o in shown] == [("stream", "drawn inside the widget\n")]
    # the website edition finds the widget's first picture (here its text) and its control in that state
    assert widget_outputs(output_view, state).has_picture
    note = widget_outputs(nb.cells[1].outputs[0]["data"], state).outputs[-1]["data"]["text/html"]
    assert "<strong>n</strong> (0 to 9)" in note


def test_a_cell_past_its_time_limit_stops_the_run(tmp_path):
    nb = tiny_notebook()
    nb.cells.insert(1, nbformat.v4.new_code_cell("import time\ntime.sleep(60)"))
    run = executor.run_notebook(nb, timeout=120, cwd=tmp_path, cell_timeout=2)
    assert (run.stop_reason, run.stopped_at, run.executed) == ("timed out", 1, [0])
    assert run.seconds < 60


def test_a_cell_tagged_raises_exception_does_not_stop_the_run(tmp_path):
    nb = tiny_notebook()
    nb.cells.insert(1, nbformat.v4.new_code_cell("1 / 0", metadata={"tags": ["raises-exception"]}))
    run = executor.run_notebook(nb, timeout=120, cwd=tmp_path, stop_on_error=True)
    assert run.stop_reason is None and run.executed == [0, 1, 2]
    assert nb.cells[1].outputs[0]["ename"] == "ZeroDivisionError"
    nb.cells[1].metadata = {}
    run = executor.run_notebook(nb, timeout=120, cwd=tmp_path, stop_on_error=True)
    assert (run.stop_reason, run.stopped_at) == ("error", 1)


def test_a_rerun_changes_only_what_changed(tmp_path):
    """Run twice and written with write_notebook: the same file but for the one line that prints the time."""
    from encoder_course.notebook_tools.files import write_notebook

    texts = []
    for name in ("first", "second"):
        nb = widget_notebook()
        del nb.cells[0]["id"]  # a cell stored without an id gets one made from its place and text
        nb.cells[3].metadata["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00Z"}  # a timestamp: dropped
        run = executor.run_notebook(nb, timeout=120, cwd=tmp_path)
        assert run.stop_reason is None
        write_notebook(nb, tmp_path / f"{name}.ipynb")
        texts.append((tmp_path / f"{name}.ipynb").read_text(encoding="utf-8").splitlines())
    first, second = texts
    assert len(first) == len(second)
    differ = [(a, b) for a, b in zip(first, second) if a != b]
    assert len(differ) == 1 and all(re.fullmatch(r'\s*"\d+\.\d+\\n"', line) for line in differ[0]), differ
    stored = nbformat.reads("\n".join(first), as_version=4)
    assert [c["id"] for c in stored.cells[1:]] == ["cell-1", "cell-2", "cell-3"]  # ids kept
    assert all("execution" not in c.metadata for c in stored.cells)
    assert sorted(widget_state(stored)) == [f"{n:032x}" for n in range(1, len(widget_state(stored)) + 1)]
    assert not write_notebook(stored, tmp_path / "first.ipynb")  # already in the stable form: not written again


def test_execute_stores_the_notebook_and_leaves_a_failing_one_as_it_was(tmp_path):
    from encoder_course.notebook_tools import execute

    good, bad = tmp_path / "01_good.ipynb", tmp_path / "02_bad.ipynb"
    nbformat.write(tiny_notebook(), good)
    broken = tiny_notebook()
    broken.cells.append(nbformat.v4.new_code_cell("raise ValueError('on purpose')"))
    nbformat.write(broken, bad)
    before = bad.read_bytes()
    with pytest.raises(execute.ExecutionFailed, match="02_bad.ipynb, cell 2 raised an error") as failure:
        execute.execute([good, bad], timeout=60, out=io.StringIO())
    assert "ValueError: on purpose" in str(failure.value) and "\x1b[" not in str(failure.value)  # plain traceback
    assert bad.read_bytes() == before
    assert nbformat.read(good, as_version=4).cells[1].outputs[0]["text"] == "42\n"


def test_execute_asked_for_one_notebook_runs_the_earlier_ones_first_and_stores_only_it(tmp_path):
    # A later notebook uses the parts the earlier ones saved in the workspace: run alone, in an empty one, it
    # would store what a learner who did the earlier notebooks never sees.
    from encoder_course.notebook_tools import execute

    first, second = tmp_path / "01_saves.ipynb", tmp_path / "02_uses.ipynb"
    saves = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, pathlib\nw = pathlib.Path(os.environ['ENCODER_COURSE_WORKSPACE'])\nw.mkdir(parents=True)\n"
        "(w / 'part.txt').write_text('mine')")])
    uses = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, pathlib\nprint((pathlib.Path(os.environ['ENCODER_COURSE_WORKSPACE']) / 'part.txt').read_text())")])
    nbformat.write(saves, first)
    nbformat.write(uses, second)
    before = first.read_bytes()
    log = io.StringIO()
    execute.execute([first, second], timeout=60, out=log, store={second})
    assert first.read_bytes() == before and "not stored" in log.getvalue()
    assert nbformat.read(second, as_version=4).cells[0].outputs[0]["text"] == "mine\n"


def test_the_execute_command_for_one_notebook_runs_the_course_up_to_it(monkeypatch):
    from encoder_course.notebook_tools import execute

    seen = {}

    def stop(paths, timeout, store):  # records what would run, then stops the command before it writes
        seen.update(paths=[p.name[:2] for p in paths], store=sorted(p.name[:2] for p in store))
        raise execute.ExecutionFailed("stopped by the test")

    monkeypatch.setattr(execute, "execute", stop)
    assert execute.main(["12_real"]) == 1
    assert seen == {"paths": [f"{n:02d}" for n in range(13)], "store": ["12"]}
    assert execute.main(["02_att", "05_res"]) == 1
    assert seen == {"paths": [f"{n:02d}" for n in range(6)], "store": ["02", "05"]}


# --- the stable form, without a kernel ----------------------------------------------------------------------

def test_widget_models_are_numbered_in_the_order_they_appear():
    from encoder_course.notebook_tools.files import WIDGET_STATE, WIDGET_VIEW, stable_notebook

    def model(name, **state):
        return {"model_name": name, "model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0",
                "state": {"_model_name": name, **state}}

    nb = nbformat.v4.new_notebook()
    view = {WIDGET_VIEW: {"model_id": "f00d", "version_major": 2, "version_minor": 0}, "text/plain": "VBox()"}
    nb.cells = [nbformat.v4.new_code_cell("box", outputs=[nbformat.v4.new_output("display_data", data=view)])]
    nb.cells[0]["id"] = "box"
    nb.metadata["widgets"] = {WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": {
        "aaaa": model("LayoutModel"),  # stored first, but nothing shows it: numbered last
        "cafe": model("IntSliderModel", layout="IPY_MODEL_beef"),
        "beef": model("LayoutModel"),
        "f00d": model("VBoxModel", children=["IPY_MODEL_cafe"], layout="IPY_MODEL_beef"),
    }}}
    stable = stable_notebook(nb)
    ids = [f"{n:032x}" for n in range(1, 5)]
    assert stable.cells[0].outputs[0]["data"][WIDGET_VIEW]["model_id"] == ids[0]
    state = stable.metadata["widgets"][WIDGET_STATE]["state"]
    assert {k: v["model_name"] for k, v in state.items()} == {
        ids[0]: "VBoxModel", ids[1]: "IntSliderModel", ids[2]: "LayoutModel", ids[3]: "LayoutModel"}
    assert state[ids[0]]["state"]["children"] == [f"IPY_MODEL_{ids[1]}"]
    assert state[ids[1]]["state"]["layout"] == state[ids[0]]["state"]["layout"] == f"IPY_MODEL_{ids[2]}"
    assert stable_notebook(stable) == stable  # numbered once, kept


def test_cells_read_without_ids_get_the_same_ids_every_time(tmp_path):
    from encoder_course.notebook_tools.files import notebook_text, read_notebook

    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = 4  # before cell ids: nbformat would give each cell a random one when reading it
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell("x = 1")]
    for cell in nb.cells:
        del cell["id"]
    path = tmp_path / "old.ipynb"
    path.write_text(nbformat.writes(nb, version=4), encoding="utf-8")
    first, second = notebook_text(read_notebook(path)), notebook_text(read_notebook(path))
    assert first == second
    ids = [c["id"] for c in nbformat.reads(first, as_version=4).cells]
    assert len(set(ids)) == 3  # two identical cells still get two ids
