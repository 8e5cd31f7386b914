"""The course as a learner meets it: JupyterLab in headless Chromium, Run All, real widget controls.

Needs Debian's chromium at /usr/bin/chromium and the playwright package (it never downloads a
browser). `.ci/run` installs chromium; elsewhere the test is skipped with the reason.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]

pytestmark = pytest.mark.browser
CONTROLS = "input, select, button, .widget-slider"  # ipywidgets 8 sliders are not <input>s

if not Path(CHROMIUM).exists():
    pytest.skip("Chromium is not installed at /usr/bin/chromium (apt-get install chromium)",
                allow_module_level=True)
playwright_sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 over a scratch copy of the notebooks; stopped afterwards."""
    work = tmp_path_factory.mktemp("lab")
    for name in ("07_encoder_block.ipynb", "03_masks.ipynb"):
        shutil.copy(ROOT / "notebooks" / "solutions" / name, work / name)
    shutil.copy(ROOT / "notebooks" / "02_attention.ipynb", work / "learner_02_attention.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
           "--ServerApp.disable_check_xsrf=False", "--LabApp.news_url=",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    # Render every cell (no windowing), so the test can see every prompt and output.
    state = tmp_path_factory.mktemp("lab-state")
    settings = state / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    env = dict(os.environ, JUPYTER_PLATFORM_DIRS="1", JUPYTERLAB_SETTINGS_DIR=str(state / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"))
    log = open(work / "server.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_it_answers(f"{base}/api/status?token={token}", proc, work / "server.log", "JupyterLab", 90)
        yield {"base": base, "token": token, "dir": work}
    finally:
        stop_server(proc, log, 20)  # the server and every kernel it started


def wait_until_it_answers(url: str, proc, log_path: Path, what: str, timeout_s: float) -> None:
    """Wait until ``url`` answers; raise with the end of the server's log if ``proc`` dies or time runs out."""
    deadline = time.time() + timeout_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"{what} did not start:\n" + log_path.read_text()[-3000:]) from None
            time.sleep(0.5)


def stop_server(proc, log, timeout_s: float) -> None:
    """Stop ``proc`` and everything in its session (SIGTERM, then SIGKILL), and close its log."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


@pytest.fixture(scope="module")
def browser():
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    yield pg
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()


def open_and_run_all(page, lab, name: str, timeout_s: float = 240) -> None:
    # A workspace of its own, reset, so only this notebook is open.
    workspace = Path(name).stem.replace("_", "-")
    page.goto(f"{lab['base']}/lab/workspaces/{workspace}/tree/{name}?reset&token={lab['token']}")
    run_all(page, timeout_s)


def run_all(page, timeout_s: float) -> None:
    """Run All from the menu of the notebook open in ``page``, and wait until every cell has run."""
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    # The status bar says "| Idle" once the kernel has started and connected.
    page.locator(".jp-StatusBar-Widget", has_text="Idle").first.wait_for(timeout=120_000)
    for _ in range(3):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
        if started(page, 30):
            break
    wait_until_done(page, timeout_s)


def started(page, timeout_s: float) -> bool:
    """True once some cell is queued, running or numbered after Run All."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        prompts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
        if any("*" in p or any(ch.isdigit() for ch in p) for p in prompts):
            return True
        time.sleep(0.5)
    return False


def wait_until_done(page, timeout_s: float) -> None:
    """Wait until no cell is queued or running and every code cell has an execution count."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        prompts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
        if prompts and not any("*" in p for p in prompts) and all(any(ch.isdigit() for ch in p) for p in prompts):
            return
        time.sleep(1)
    raise AssertionError(f"Run All did not finish in {timeout_s} s; prompts: {prompts}")


def assert_no_errors(page) -> None:
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                          has_text="Traceback")
    assert errors.count() == 0, errors.first.inner_text()[:2000]
    text = page.locator(".jp-Notebook").first.inner_text()
    assert "Traceback (most recent call last)" not in text
    assert "interactive(children=" not in text, "widgets rendered as text, not as controls"


def figure_of(widget) -> str:
    img = widget.locator("img").first
    img.wait_for(timeout=30_000)
    return img.get_attribute("src")


def change_first_toggle(widget) -> None:
    """Flip the widget's first two-state control: a select, a checkbox or toggle buttons."""
    select = widget.locator("select")
    checkbox = widget.locator("input[type='checkbox']")
    toggles = widget.locator(".widget-toggle-buttons button")
    if checkbox.count():
        checkbox.first.click()
    elif toggles.count():
        _click_inactive(toggles)
    elif select.count():
        options = select.first.locator("option").all_inner_texts()
        current = select.first.evaluate("s => s.options[s.selectedIndex].text")
        select.first.select_option(label=next(o for o in options if o != current))
    else:
        raise AssertionError("no toggle control (checkbox, toggle buttons or select) in the widget")


def _click_inactive(toggles) -> None:
    for i in range(toggles.count()):
        button = toggles.nth(i)
        if "mod-active" not in (button.get_attribute("class") or ""):
            button.click()
            return
    raise AssertionError("every toggle button is already active")


def wait_for_new_figure(widget, before: str, timeout_s: float = 30) -> str:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        src = widget.locator("img").first.get_attribute("src")
        if src and src != before:
            return src
        time.sleep(0.5)
    raise AssertionError("the figure did not change after the control was changed")


def widget_with(page, needle: str):
    """The outermost widget box (an interact or a box of controls) with a control, a figure and ``needle``."""
    boxes = page.locator(".widget-interact, .widget-vbox, .widget-hbox, .widget-box")
    assert boxes.count() > 0, "no ipywidgets rendered (only text?)"
    for i in range(boxes.count()):
        box = boxes.nth(i)
        if (box.locator("input, select, button").count() and box.locator("img").count()
                and needle.lower() in box.inner_text().lower()):
            return box
    raise AssertionError(f"no widget with controls, a figure and the text {needle!r}")


def assert_toggle_changes_figure(page, lab, notebook: str, needle: str) -> None:
    """Run All, find the widget, flip its two-state control and see its figure redrawn."""
    open_and_run_all(page, lab, notebook)
    assert_no_errors(page)
    widget = widget_with(page, needle)
    assert widget.locator(CONTROLS).count() >= 2, "the widget has no real controls"
    before = figure_of(widget)
    change_first_toggle(widget)
    wait_for_new_figure(widget, before)


def test_encoder_block_widget_toggles_norm_placement(lab, page):
    assert_toggle_changes_figure(page, lab, "07_encoder_block.ipynb", "LN")


def test_masks_widget_toggles_padding_mask(lab, page):
    assert_toggle_changes_figure(page, lab, "03_masks.ipynb", "mask")


def test_fresh_learner_notebook_runs_to_the_end(lab, page):
    open_and_run_all(page, lab, "learner_02_attention.ipynb")
    assert_no_errors(page)
    text = page.locator(".jp-Notebook").first.inner_text()
    assert "not attempted yet" in text
