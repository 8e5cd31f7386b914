"""The course on a real JupyterHub: a learner logs in, follows the nbgitpuller link to notebook 00, runs it,
and its checked cell gives the output the course stored.

JupyterHub (a dummy authenticator, local processes for the learners' servers, configurable-http-proxy from
npm) serves a learner whose server clones the course from a local git folder through ``encoder-course link``'s
link. Slow and with its own dependencies (``requirements-hub.txt``, ``npm install -g configurable-http-proxy``),
it runs as its own step of ``.ci/run`` (``ENCODER_COURSE_HUB_TEST=1``), and is skipped elsewhere with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from encoder_course.notebook_tools.manifest import hub_url

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.browser
if os.environ.get("ENCODER_COURSE_HUB_TEST") != "1":
    pytest.skip("the JupyterHub test runs as its own step of .ci/run (ENCODER_COURSE_HUB_TEST=1)",
                allow_module_level=True)
for needed, why in ((shutil.which("jupyterhub"), "jupyterhub (pip install -r requirements-hub.txt)"),
                    (shutil.which("configurable-http-proxy"), "configurable-http-proxy (npm install -g "
                                                               "configurable-http-proxy)"),
                    (Path(CHROMIUM).exists(), "chromium (apt-get install chromium)")):
    if not needed:
        pytest.fail(f"ENCODER_COURSE_HUB_TEST=1 but {why} is missing")
pytest.importorskip("nbgitpuller", reason="nbgitpuller is not installed (pip install -r requirements-hub.txt)")
from test_browser import (  # noqa: E402
    CHROME_ARGS,
    assert_no_errors,
    free_port,
    run_all,
    stop_server,
    wait_until_it_answers,
)

CONFIG = """
c = get_config()  # noqa
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.JupyterHub.db_url = "sqlite:///{work}/hub.sqlite"
c.JupyterHub.cookie_secret_file = "{work}/cookie_secret"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "learner-password"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{work}/homes/{{username}}"
c.Spawner.cmd = [{python!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.args = {args!r}
c.Spawner.environment = {{"JUPYTERLAB_SETTINGS_DIR": "{work}/lab-settings"}}
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A JupyterHub on 127.0.0.1 and a git folder holding the course; stopped afterwards."""
    work = tmp_path_factory.mktemp("hub")
    repo = work / "git" / "encoder-course"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(repo)], check=True)
    branch = subprocess.run(["git", "-C", str(repo), "rev-parse", "--abbrev-ref", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    # The learner's copy starts without outputs, so what the test reads afterwards is what ran on the hub.
    notebook = repo / "notebooks" / "00_start_here.ipynb"
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=test", "-c", "user.email=test@example.org", "commit",
                    "-q", "-am", "notebook 00 without outputs"], check=True)
    settings = work / "lab-settings" / "@jupyterlab" / "notebook-extension"  # every cell rendered (no windowing)
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    (work / "homes").mkdir()
    port, hub_port, proxy_port = free_port(), free_port(), free_port()
    args = ["--allow-root"] if os.geteuid() == 0 else []
    (work / "jupyterhub_config.py").write_text(CONFIG.format(port=port, hub_port=hub_port, proxy_port=proxy_port,
                                                            work=work, python=sys.executable, args=args))
    log = open(work / "hub.log", "w")
    proc = subprocess.Popen(["jupyterhub", "-f", str(work / "jupyterhub_config.py")], cwd=work, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_it_answers(f"{base}/hub/health", proc, work / "hub.log", "JupyterHub", 120)
        yield {"base": base, "repo": str(repo), "branch": branch, "work": work}
    finally:
        stop_server(proc, log, 30)  # the hub, its proxy and the learners' servers


def test_a_learner_follows_the_link_to_notebook_00_runs_it_and_its_check_passes(hub):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    link = hub_url("00_start_here", hub["base"], repo=hub["repo"], branch=hub["branch"])
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{hub['base']}/hub/login")
            page.fill("#username_input", "learner")
            page.fill("#password_input", "learner-password")
            page.click("#login_submit")
            page.wait_for_url("**/user/learner/**", timeout=180_000)
            page.goto(link)  # nbgitpuller clones the course, then opens the notebook in JupyterLab
            page.wait_for_url("**/lab/tree/encoder-course/notebooks/00_start_here.ipynb*", timeout=180_000)
            run_all(page, 300)
            assert_no_errors(page)
            page.keyboard.press("Control+s")
            time.sleep(3)
        finally:
            browser.close()
    # The notebook the learner ran, as saved in their home: the cell nbval checks gives the stored output.
    ran = json.loads((hub["work"] / "homes" / "learner" / "encoder-course" / "notebooks" / "00_start_here.ipynb")
                     .read_text(encoding="utf-8"))
    stored = json.loads((ROOT / "notebooks" / "00_start_here.ipynb").read_text(encoding="utf-8"))

    def checked(nb):
        return [("".join(c["outputs"][0].get("text", "")) if c["outputs"] else None)
                for c in nb["cells"] if c["cell_type"] == "code" and "# NBVAL_CHECK_OUTPUT" in "".join(c["source"])]

    assert all(c.get("execution_count") for c in ran["cells"] if c["cell_type"] == "code")
    assert not [o for c in ran["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert checked(ran) and checked(ran) == checked(stored), (checked(ran), checked(stored))
