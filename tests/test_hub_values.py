"""The Zero to JupyterHub values (``binder/jupyterhub-values.yaml``) use only options the chart has.

Helm and a cluster are not available here: the file is checked against the option paths below, taken from
the chart's ``values.schema.yaml`` (chart version 4); ``hub.config`` is free-form there (traitlets config).
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHART_OPTIONS = {
    "singleuser.image.name", "singleuser.image.tag", "singleuser.image.pullPolicy", "singleuser.defaultUrl",
    "singleuser.memory.limit", "singleuser.memory.guarantee", "singleuser.cpu.limit", "singleuser.cpu.guarantee",
    "singleuser.storage.capacity", "singleuser.storage.type", "singleuser.startTimeout", "singleuser.extraEnv",
    "singleuser.cmd", "hub.config", "cull.enabled", "cull.timeout", "cull.every", "cull.users", "cull.maxAge",
    "prePuller.hook.enabled", "prePuller.continuous.enabled", "proxy.https.enabled", "proxy.https.hosts",
    "ingress.enabled", "ingress.hosts",
}


def _paths(tree: dict, prefix: str = ""):
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if path == "hub.config" or not isinstance(value, dict):
            yield path
        else:
            yield from _paths(value, path + ".")


def test_the_hub_values_use_only_the_chart_s_options():
    yaml = pytest.importorskip("yaml")
    values = yaml.safe_load((ROOT / "binder" / "jupyterhub-values.yaml").read_text(encoding="utf-8"))
    unknown = sorted(set(_paths(values)) - CHART_OPTIONS)
    assert not unknown, unknown
    assert values["singleuser"]["defaultUrl"] == "/lab" and values["cull"]["enabled"] is True
    auth = values["hub"]["config"]
    assert set(auth) <= {"JupyterHub", "Authenticator", "DummyAuthenticator"}


def test_the_learners_image_can_follow_the_links():
    """The image built from binder/ has nbgitpuller, which the links of `encoder-course link` need."""
    post = (ROOT / "binder" / "postBuild").read_text(encoding="utf-8")
    hub = (ROOT / "requirements-hub.txt").read_text(encoding="utf-8")
    pinned = next(line for line in hub.splitlines() if line.startswith("nbgitpuller=="))
    assert pinned in post
