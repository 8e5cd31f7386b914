"""Isolation of the learner's processes that run a submission's code for ``encoder-course grade``.

The modes, and what each protects, are the teachers' guide's table ("Isolation, what it protects"): ``root``
(``enter``: ``nobody`` in new namespaces), ``bwrap`` (``bwrap_command``: the whole fork server in bubblewrap),
``container`` (``container_command``) and ``none`` (``--trust-submissions``). In every mode the learner's
process gets a folder of its own, an environment built from scratch (``clean_environment``), its own session
and limits (``_limits``); the grader and the fork server are child subreapers, so everything it starts stays
below them and is killed after its exercise.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

NOBODY = 65534
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
NAMESPACES = 0x00020000 | 0x04000000 | 0x08000000 | 0x20000000 | 0x40000000  # mount, UTS, IPC, PID, network
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1, 2, 4, 8, 32, 4096, 16384, 1 << 18)
IMAGE = "encoder-course-grader"
DOCKERFILE = Path(__file__).with_name("grader.Dockerfile")
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm")  # each learner's process gets empty ones of its own (as root)
TMPFS_MB = 64  # the size of those, of the job folder (memory, not disk), and the file size limit
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
RUN_PREFIX = "encoder-course-grade-"


@dataclass
class Plan:
    """How the learner's processes are isolated in this run (sent to the fork server as JSON)."""

    mode: str = "none"  # root, bwrap, container or none (see the module's docstring)
    expose: list = field(default_factory=list)  # [folder to cover, [folders inside it to show]] (root)
    hide: list = field(default_factory=list)  # folders covered by an empty read-only folder
    hide_files: list = field(default_factory=list)  # files covered by /dev/null
    keep_in_tmp: list = field(default_factory=list)  # needed folders under /tmp, /var/tmp, /dev/shm: bound back
    withheld: list = field(default_factory=list)  # [course module, its stub]: the stub shown in its place
    memory_mb: int = 4096
    cpu_s: int = 120
    warnings: list = field(default_factory=list)

    def describe(self) -> str:
        how = {"root": f"as uid {NOBODY}, own mount/PID/network namespaces",
               "bwrap": f"as uid {os.geteuid()} (yours), in bubblewrap (own user/mount/PID/network namespaces, "
                        "only the Python environment and the course visible, read-only)",
               "container": "in a container"}.get(self.mode, f"as uid {os.geteuid()} (yours), no namespaces")
        return f"{how}, memory {self.memory_mb} MB"


# ----------------------------------------------------------------------------------------------
# libc (Linux); elsewhere prctl is a no-op and namespaces raise OSError


@functools.cache
def _libc():
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def prctl(option: int, value: int) -> bool:
    return _libc() is not None and _libc().prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0


def _call(name: str, *args) -> None:
    if _libc() is None:
        raise OSError("namespaces need Linux")
    if getattr(_libc(), name)(*args) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}: {os.strerror(errno)}")


def mount(source, target, fstype, flags: int, data=None) -> None:
    enc = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    _call("mount", enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))


# ----------------------------------------------------------------------------------------------
# Planning (grader side)


def course_root() -> Path:
    """The folder that holds the ``encoder_course`` package (the PYTHONPATH of the checker processes)."""
    return Path(__file__).resolve().parent.parent.parent


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def needed_paths() -> list[str]:
    """Folders the learner's processes must read: the interpreter, its libraries, the course."""
    import site
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             str(course_root()), *site.getsitepackages()}
    paths.update(sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib"))
    here = os.path.realpath(os.getcwd())  # on sys.path under `python -m`: the teacher's folder, not a library
    paths.update(p for p in sys.path if p and os.path.realpath(p) != here)
    # A checkout of the course (not an installed package): only its package is needed, never the rest of it
    # (its history, the teacher's gradebook or class folder kept there, the folders beside it).
    root = os.path.realpath(course_root())
    libraries = {os.path.realpath(p) for p in [*site.getsitepackages(), *(sysconfig.get_paths()[k] for k in (
        "purelib", "platlib"))]}
    if root not in libraries:
        paths = {p for p in paths if not p or os.path.realpath(p) != root} | {os.path.join(root, "encoder_course")}
    kept = []
    for p in sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)}):
        if not any(_under(p, k) for k in kept):  # drop a path inside one already kept
            kept.append(p)
    return kept


def _others_can(path: str, mode: int) -> bool:
    try:
        return os.stat(path).st_mode & mode == mode
    except OSError:
        return False


def plan_exposure(paths: list[str]) -> tuple[list, list[str]]:
    """``([[covered folder, [folders to show]], ...], problems)`` so that ``nobody`` can read ``paths``.

    A folder on the way that others may not enter (``/root`` is 0700) is covered by an empty tmpfs
    in the learner's mount namespace, and only the needed folders are bound back into it.
    """
    cover: dict[str, list[str]] = {}
    problems = []
    for p in paths:
        parts = Path(p).parts
        blocked = next((str(Path(*parts[:i])) for i in range(2, len(parts))
                        if not _others_can(str(Path(*parts[:i])), stat.S_IXOTH)), None)
        if not _others_can(p, stat.S_IROTH | stat.S_IXOTH):
            problems.append(f"{p} is not readable by others")
        if blocked:
            inner = [c for c in cover if _under(blocked, c)]
            cover.setdefault(inner[0] if inner else blocked, []).append(p)
    return [[k, sorted(set(v))] for k, v in sorted(cover.items())], problems


# Top-level folders of the host that a learner's process sees as they are (read-only for ``nobody``): the
# system's programs, libraries and configuration, and the kernel's. Every other one is covered.
SEEN_AS_THEY_ARE = (*SYSTEM_DIRS, "/dev", "/proc", "/sys", "/tmp")


def cover_the_host(needed: list[str], blocked: list) -> list:
    """``plan.expose`` for root mode: every top-level folder of the host outside SEEN_AS_THEY_ARE (``/home``,
    ``/root``, ``/run``, ``/var``, ``/srv``, the folder of the checkout, ...) covered by an empty tmpfs, with
    only the needed folders inside it bound back. So a learner's process reads nothing of the machine but the
    system, Python and the course package, and finds no world-writable folder (``/run/lock``, say) to leave
    files in for a later job. ``blocked`` (folders ``nobody`` may not enter) are kept where no top folder
    covers them already."""
    tops = []
    with contextlib.suppress(OSError):
        tops = sorted(e.path for e in os.scandir("/")
                      if e.is_dir(follow_symlinks=False) and e.path not in SEEN_AS_THEY_ARE)
    cover = [[top, sorted(n for n in needed if _under(n, top) and n != top)] for top in tops
             if not any(n == top for n in needed)]
    covered = [c for c, _ in cover]
    return cover + [[c, shown] for c, shown in blocked if not any(_under(c, t) for t in covered)]


def root_cannot_isolate() -> str:
    """Why root mode cannot isolate here ('' when it can): it needs new namespaces, and ``nobody`` must be
    able to read the Python environment and the course once the folders on the way are covered."""
    if not probe_namespaces():
        return "this process may not create namespaces (a container without CAP_SYS_ADMIN, say)"
    return "; ".join(plan_exposure(needed_paths())[1])


def make_plan(mode: str, *, hide=(), hide_files=(), memory_mb=4096, cpu_s=120) -> Plan:
    """The isolation of this run: ``mode`` is root (``root_cannot_isolate()`` said it can), bwrap,
    container or none."""
    plan = Plan(mode, memory_mb=int(memory_mb), cpu_s=int(cpu_s))
    if mode == "none":
        plan.warnings.append("the learner's processes run as your user, without namespaces (they can read "
                             "what you can)")
    if mode not in ("root", "bwrap"):
        return plan
    needed = needed_paths()
    for h in map(os.path.realpath, hide):  # never a folder that holds a needed one
        if os.path.isdir(h) and h not in plan.hide and not any(_under(n, h) for n in needed):
            plan.hide.append(h)
    # The course's own answers: each module that defines one is shown as its stub, its bytecode hidden.
    from . import withhold

    stubs = tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{os.getpid()}-withheld-")  # (named by the grader's pid)
    os.chmod(stubs, 0o755)
    plan.withheld = withhold.write_stubs(stubs)
    caches = [c for real, _ in plan.withheld for c in withhold.bytecode_caches(real)]
    plan.hide_files = sorted({os.path.realpath(f) for f in [*hide_files, *caches]})
    if mode == "root":
        plan.expose = cover_the_host(needed, plan_exposure(needed)[0])
        plan.keep_in_tmp = [n for n in needed if any(n.startswith(t + "/") for t in PRIVATE_TMP)]
    if plan.keep_in_tmp:
        plan.warnings.append("the Python environment or the course lies under a temporary folder ("
                             + ", ".join(plan.keep_in_tmp) + "): it is bound read-only into each learner's "
                             "process's private /tmp")
    return plan


def discard_plan(plan: Plan) -> None:
    """Remove what ``make_plan`` wrote (the stubs' folder)."""
    for folder in {os.path.dirname(stub) for _, stub in plan.withheld}:
        if os.path.basename(folder).startswith(RUN_PREFIX):
            shutil.rmtree(folder, ignore_errors=True)


def probe_namespaces() -> bool:
    """Whether this process may create the namespaces and mounts of ``enter`` (a forked child tries)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False
    pid = os.fork()
    if pid == 0:
        try:
            _call("unshare", ctypes.c_int(NAMESPACES))
            mount(None, "/", None, MS_REC | MS_PRIVATE)
            mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1m")
            os._exit(0)
        finally:
            os._exit(1)
    return os.waitpid(pid, 0)[1] == 0


# ----------------------------------------------------------------------------------------------
# Bubblewrap, for an ordinary user


def find_bwrap() -> str | None:
    """The path of a bubblewrap that works here (it needs unprivileged user namespaces), else None."""
    exe = shutil.which("bwrap")
    if not exe or not sys.platform.startswith("linux"):
        return None
    try:
        done = subprocess.run([exe, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return exe if done.returncode == 0 else None


def bwrap_command(plan: Plan) -> list[str]:
    """The bubblewrap around the fork server: nothing of the host but the system's folders, the Python
    environment and the course (all read-only); its own size-limited /tmp; no network, no home, submissions,
    solutions or gradebook. The server is the sandbox's PID 1, which the learner's processes (its descendants)
    can neither stop nor kill."""
    cmd = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--as-pid-1",
           "--cap-drop", "ALL", "--dev", "/dev", "--proc", "/proc", "--size", str(TMPFS_MB << 20), "--tmpfs", "/tmp",
           "--chdir", "/tmp"]
    for d in SYSTEM_DIRS:
        cmd += ["--ro-bind-try", d, d]
    bound = needed_paths()
    for p in bound:
        cmd += ["--ro-bind", p, p]
    for real, stub in plan.withheld:
        cmd += ["--ro-bind", stub, real]
    visible = lambda path: any(_under(path, p) and path != p for p in bound + list(SYSTEM_DIRS))  # noqa: E731
    hidden = []
    for h in plan.hide:  # (never one that holds what must stay visible)
        if visible(h) and not any(_under(p, h) for p in bound):
            cmd += ["--tmpfs", h, "--remount-ro", h]
            hidden.append(h)
    for f in plan.hide_files:  # (a file in a folder hidden above is gone already: no mount point to make there)
        if visible(f) and os.path.isfile(f) and not any(_under(f, h) for h in hidden):
            cmd += ["--ro-bind", "/dev/null", f]
    return cmd


def clear_folder(path: str) -> None:
    """Empty ``path`` of whatever a learner's process left there, folders it made unreadable included."""
    for root, dirs, _ in os.walk(path):
        for d in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(root, d), 0o700)
    for name in os.listdir(path):
        target = os.path.join(path, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(target)


# ----------------------------------------------------------------------------------------------
# Folders and environment


def clean_environment(job_dir: str) -> dict[str, str]:
    """The whole environment of a checker or learner's process: nothing of the teacher's."""
    cache = os.path.join(job_dir, ".cache")
    return {
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": job_dir, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONPATH": str(course_root()),
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONSAFEPATH": "1", "PYTHONIOENCODING": "utf-8",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "IPYTHONDIR": os.path.join(job_dir, ".ipython"), "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": os.path.join(job_dir, ".matplotlib"), "XDG_CACHE_HOME": cache,
        "TORCH_HOME": os.path.join(cache, "torch"), "TMPDIR": os.path.join(job_dir, "tmp"),
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "ENCODER_COURSE_WORKSPACE": os.path.join(job_dir, "workspace"),
    }


def make_run_base() -> str:
    """The grader's private folder for this run (0711: others may pass through it, not list it): the fork
    server's home and log, and the learner's folders where no private /tmp is (``--trust-submissions``)."""
    base = tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{os.getpid()}-")  # (named by the grader's pid)
    os.chmod(base, 0o711)
    return base


# ----------------------------------------------------------------------------------------------
# Entering the sandbox (in the learner's process, just forked by the checker, before any learner code)


def _limits(plan: Plan) -> None:
    import resource

    mb = 1 << 20
    limits = [(resource.RLIMIT_AS, plan.memory_mb * mb), (resource.RLIMIT_CPU, plan.cpu_s),
              (resource.RLIMIT_FSIZE, TMPFS_MB * mb), (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NOFILE, 256)]
    if plan.mode in ("root", "bwrap"):  # (in bubblewrap's user namespace it counts only the sandbox's)
        limits.append((resource.RLIMIT_NPROC, 256))
    for which, value in limits:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, value + 5 if which == resource.RLIMIT_CPU else value))


def _bind_back(path: str, fd: int, read_only: bool = False) -> None:
    os.makedirs(path, 0o755, exist_ok=True)
    mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    if read_only:
        with contextlib.suppress(OSError):
            mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC)
    os.close(fd)


def _mounts(plan: Plan) -> None:
    """Set up the mount namespace: the interpreter reachable, the teacher's folders hidden, empty temporary
    folders of its own, no /proc."""
    opened = lambda p: os.open(p, os.O_PATH | os.O_DIRECTORY)  # noqa: E731
    # A Python environment under /tmp (CI runners, scratch machines) is held open before the private /tmp
    # covers it, and bound back read-only after.
    kept = [(p, opened(p)) for p in plan.keep_in_tmp if os.path.isdir(p)]
    stubs = [(real, os.open(stub, os.O_PATH)) for real, stub in plan.withheld]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    for covered, shown in plan.expose:
        fds = [(p, opened(p)) for p in shown]
        mount("tmpfs", covered, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m")
        for p, fd in fds:
            _bind_back(p, fd)
    for real, fd in stubs:  # (a module that cannot be covered stops the job: never the real one shown)
        mount(f"/proc/self/fd/{fd}", real, None, MS_BIND)
        mount(None, real, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
        os.close(fd)
    for h in plan.hide:
        with contextlib.suppress(OSError):
            mount("tmpfs", h, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=755,size=4k")
    for f in plan.hide_files:
        with contextlib.suppress(OSError):
            mount("/dev/null", f, None, MS_BIND)
    for tmp in PRIVATE_TMP:
        if os.path.isdir(tmp):
            mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={TMPFS_MB}m")
    for p, fd in kept:
        _bind_back(p, fd, read_only=True)
    # No /proc at all: no other process to look at, and not even this process's own memory.
    mount("tmpfs", "/proc", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=555,size=4k")


def enter(plan: Plan, job_dir: str) -> None:
    """Isolate the calling (just forked) process, and make a job folder its working directory: in a private
    /tmp where there is one (memory, never the host's disk), else ``job_dir``.

    As root, the caller forks once more: the child is PID 1 of a new PID namespace (when it
    ends, the kernel kills everything inside), the caller waits for it and exits with its status.
    """
    os.setsid()
    if plan.mode == "root":
        _call("unshare", ctypes.c_int(NAMESPACES))
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        pid = os.fork()
        if pid:
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status) else 111)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # PID 1 of the new namespace: dies with the process that waits
        _mounts(plan)
    _limits(plan)
    if plan.mode == "root":
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        if os.getuid() != NOBODY or os.geteuid() != NOBODY:
            raise OSError("could not drop privileges")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_DUMPABLE, 0)  # no reading this process's memory through /proc, even by its own user
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if plan.mode in ("root", "bwrap"):  # (bubblewrap's /tmp is the fork server's, emptied per job)
        job_dir = "/tmp/job"
        os.mkdir(job_dir, 0o700)
    os.chdir(job_dir)
    for sub in ("tmp", "workspace", ".ipython", ".matplotlib", ".cache"):
        os.mkdir(sub, 0o700)
    os.environ.clear()
    os.environ.update(clean_environment(job_dir))


# ----------------------------------------------------------------------------------------------
# Killing what an exercise left behind


def descendants(pid: int | None = None) -> list:
    """psutil Processes below ``pid`` (this process by default), from one pass over the process table: a
    process that ends meanwhile is left out, never the whole answer (psutil's ``children`` gives up)."""
    import psutil

    below: dict[int, list] = {}
    for p in psutil.process_iter(["ppid"]):
        if p.info["ppid"] is not None:
            below.setdefault(p.info["ppid"], []).append(p)
    found, stack = [], [pid or os.getpid()]
    while stack:
        for child in below.get(stack.pop(), []):
            found.append(child)
            stack.append(child.pid)
    return found


def tree_memory_mb(pid: int) -> float:
    """The memory of everything below ``pid`` together: the sum of the processes' proportional set sizes
    (pages shared with the warm fork server, or among them, counted once in all), in MB."""
    total_kb = 0
    for p in descendants(pid):
        with contextlib.suppress(OSError, ValueError):
            with open(f"/proc/{p.pid}/smaps_rollup", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Pss:"):
                        total_kb += int(line.split()[1])
                        break
    return total_kb / 1024


def living(procs) -> list:
    """The processes that still run (a zombie has ended: only its parent's wait is missing)."""
    import psutil

    alive = []
    for p in procs:
        with contextlib.suppress(psutil.Error):
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
    return alive


def kill_all_below(pid: int, seconds: float = 5.0) -> None:
    """SIGKILL everything below ``pid``, again and again until nothing is left: a chain of forks that starts
    new processes while the first ones die cannot outlive its job."""
    import psutil

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        procs = living(descendants(pid))
        if not procs:
            return
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(procs, timeout=0.5)


def kill_tree(procs) -> None:
    """SIGKILL the given psutil processes (stopped ones too) and wait, 5 s at most, until they are gone."""
    import psutil

    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(procs, timeout=5)


# ----------------------------------------------------------------------------------------------
# Containers


def container_engine() -> tuple[str | None, str]:
    """``(engine, why)``: docker's or podman's path, the first that answers, else None and what went wrong.

    Both are tried: a docker client without its daemon (common) must not hide a working rootless podman."""
    reasons = []
    for exe in filter(None, (shutil.which("docker"), shutil.which("podman"))):
        try:
            done = subprocess.run([exe, "info"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            reasons.append(f"{exe} info: {exc}")
            continue
        if done.returncode == 0:
            return exe, ""
        last = (done.stderr or done.stdout).strip().splitlines()
        reasons.append(f"{exe} info failed: {last[-1] if last else done.returncode}")
    return None, "; ".join(reasons) or "neither docker nor podman is installed"


def build_image_command(engine: str, image: str = IMAGE) -> list[str]:
    """The command that builds the grader image from the course's repository (the build context)."""
    return [engine, "build", "-f", str(DOCKERFILE), "-t", image, str(course_root())]


def container_command(engine: str, image: str, name: str, plan: Plan) -> list[str]:
    """``docker run`` for one checker process: the job on stdin, the verdict on stdout, output on stderr."""
    env = clean_environment("/job") | {"PYTHONPATH": "/course"}
    cmd = [engine, "run", "--rm", "-i", "--name", name, "--network", "none", "--user", f"{NOBODY}:{NOBODY}",
           "--memory", f"{plan.memory_mb}m", "--memory-swap", f"{plan.memory_mb}m", "--pids-limit", "64",
           "--cpus", "1", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
           "--tmpfs", "/tmp:size=64m", "--tmpfs", f"/job:size=64m,uid={NOBODY},gid={NOBODY},mode=700",
           "--ulimit", f"cpu={plan.cpu_s}", "--ulimit", f"fsize={TMPFS_MB << 20}", "--workdir", "/job"]
    for key, value in sorted(env.items()):
        if key != "PATH":
            cmd += ["-e", f"{key}={value}"]
    return cmd + [image, "python", "-s", "-m", "encoder_course.grading.checker_process", "stdio"]
