"""encoder_course.tools: the notebooks' helpers (pick_device says what it picked and why)."""

import pytest
import torch

from encoder_course import tools


def test_pick_device_says_what_it_picked():
    device, reason = tools.pick_device()
    assert isinstance(device, torch.device) and reason
    if device.type == "cpu":
        assert "Runtime > Change runtime type > GPU" in reason
    assert tools.pick_device("cpu")[0].type == "cpu"
    with pytest.raises(ValueError, match="prefer must be"):
        tools.pick_device("tpu")


def _ticks(*readings, cores=4):
    """A stand-in for /proc/stat: each call gives the next (idle, total) reading, of ``cores`` cores."""
    it = iter(readings)
    return lambda cpus=None: (*next(it), cores)


@pytest.fixture
def four_cores(monkeypatch):
    monkeypatch.setattr(tools.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(tools.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)


@pytest.mark.parametrize("idle, free", [(400, 4), (380, 4), (300, 3), (260, 2), (100, 1), (0, 1)])
def test_free_cores_counts_the_cores_that_stood_idle(four_cores, idle, free):
    """Of 400 ticks (4 cores x 100), ``idle`` were idle: a core counts when three quarters of it was."""
    found = tools.free_cores(0.0, cpu_times=_ticks((1000, 5000), (1000 + idle, 5400)), cpu_quota=lambda: None)
    assert found == free


def test_free_cores_keeps_within_the_container_s_quota_and_the_process_s_cores(four_cores, monkeypatch):
    quiet = (1000, 5000), (1400, 5400)
    assert tools.free_cores(0.0, cpu_times=_ticks(*quiet), cpu_quota=lambda: 2.0) == 2
    assert tools.free_cores(0.0, cpu_times=_ticks(*quiet), cpu_quota=lambda: 0.5) == 1
    monkeypatch.setattr(tools.os, "sched_getaffinity", lambda pid: {2, 3}, raising=False)
    assert tools.free_cores(0.0, cpu_times=_ticks(*quiet), cpu_quota=lambda: None) == 2
    # The idle cores counted are the process's own: two busy allowed cores are not helped by idle others
    asked = []
    busy = iter([(1000, 5000, 2), (1000, 5200, 2)])  # cpu2 and cpu3 busy through the sample
    assert tools.free_cores(0.0, cpu_times=lambda cpus: asked.append(cpus) or next(busy), cpu_quota=lambda: None) == 1
    assert asked == [[2, 3], [2, 3]]


def test_free_cores_reads_the_load_average_where_there_is_no_proc_stat(four_cores, monkeypatch):
    monkeypatch.setattr(tools.os, "getloadavg", lambda: (2.9, 1.0, 1.0), raising=False)
    assert tools.free_cores(0.0, cpu_times=lambda cpus: None, cpu_quota=lambda: None) == 1
    monkeypatch.setattr(tools.os, "getloadavg", lambda: (1.3, 1.0, 1.0), raising=False)
    assert tools.free_cores(0.0, cpu_times=lambda cpus: None, cpu_quota=lambda: None) == 2
    monkeypatch.setattr(tools.os, "getloadavg", lambda: (0.1, 1.0, 1.0), raising=False)
    assert tools.free_cores(0.0, cpu_times=lambda cpus: None, cpu_quota=lambda: None) == 4


def test_the_reader_of_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  10 1 5 100 4 1 1 2 0 0\n"
                    "cpu0 5 0 2 50 2 0 0 1 0 0\n"
                    "cpu1 5 1 3 50 2 1 1 1 0 0\n"
                    "intr 1 2 3\n")
    assert tools._cpu_times(None, str(stat)) == (104, 124, 2)  # idle + iowait; user to steal; 2 cores
    assert tools._cpu_times([1], str(stat)) == (52, 64, 1)  # cpu1 alone
    assert tools._cpu_times([0, 1], str(stat)) == (104, 124, 2)
    assert tools._cpu_times([5], str(stat)) is None  # not in the file
    assert tools._cpu_times(None, str(tmp_path / "missing")) is None


def test_the_cpu_quota_of_cgroup_v2_and_v1_own_cgroup_and_root(tmp_path):
    root, own = tmp_path / "cgroup", tmp_path / "self_cgroup"
    root.mkdir()
    own.write_text("0::/\n")
    assert tools._cpu_quota(str(root), str(own)) is None  # nothing to read: no quota
    for text, cores in (("max 100000\n", None), ("150000 100000\n", 1.5), ("junk", None)):
        (root / "cpu.max").write_text(text)
        assert tools._cpu_quota(str(root), str(own)) == cores
    # A process in a cgroup of its own (cgroup v2): its cpu.max counts, and the smaller of it and the root's
    (root / "class" / "alice").mkdir(parents=True)
    (root / "class" / "alice" / "cpu.max").write_text("50000 100000\n")
    own.write_text("0::/class/alice\n")
    assert tools._cpu_quota(str(root), str(own)) == 0.5
    (root / "cpu.max").write_text("25000 100000\n")
    assert tools._cpu_quota(str(root), str(own)) == 0.25
    # cgroup v1: cpu.cfs_quota_us over cpu.cfs_period_us in the cpu controller's folder, -1 for no quota
    (root / "cpu.max").unlink()
    own.write_text("4:memory:/other\n3:cpu,cpuacct:/job\n1:name=systemd:/\n")
    job = root / "cpu" / "job"
    job.mkdir(parents=True)
    (job / "cpu.cfs_period_us").write_text("100000\n")
    for quota, cores in (("200000\n", 2.0), ("50000\n", 0.5), ("-1\n", None), ("junk", None)):
        (job / "cpu.cfs_quota_us").write_text(quota)
        assert tools._cpu_quota(str(root), str(own)) == cores
    assert tools._cpu_quota(str(tmp_path / "none"), str(tmp_path / "missing")) is None


def test_use_free_cores_sets_torch_s_threads_no_higher_than_at_the_start(monkeypatch):
    threads = torch.get_num_threads()
    monkeypatch.setattr(tools, "_THREADS_AT_START", 2)
    try:
        for free, expected in ((1, 1), (8, 2)):
            monkeypatch.setattr(tools, "free_cores", lambda free=free: free)
            assert tools.use_free_cores() == expected == torch.get_num_threads()
    finally:
        torch.set_num_threads(threads)
