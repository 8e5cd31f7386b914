"""Isolation of the learner's processes that run a submission's code for ``encoder-course grade``.

(Each exercise is judged by a checker process, ``verdict.py``, which starts the learner's process below
it and calls ``enter`` there; the checker itself runs no learner code and is not sandboxed.) What a
learner's process gets (``--isolate process``, the default):

* its own temporary folder (the working directory and ``HOME``) with the submission in it: as root and
  in bubblewrap a 64 MB copy in memory, never the host's disk;
* an environment built from scratch (``clean_environment``): no variable of the teacher's;
* its own session (``setsid``), and limits: address space, CPU seconds, file size, open files,
  processes (when it runs as an unprivileged user or in bubblewrap), no core files;
* when the grader runs as root: an unprivileged user (``nobody``, 65534) and, where the kernel allows
  it, new mount, PID, network, IPC and UTS namespaces: an empty ``/tmp``, ``/var/tmp`` and
  ``/dev/shm``, no network, the submissions folder, the
  master notebooks and the grader's output files covered by empty folders, and the folders the
  interpreter lives in made reachable for that user (``pyenv`` in ``/root``, for example) while the
  rest of them stays hidden; an empty ``/proc`` (no other process, not even its own memory);
* when the grader runs as an ordinary user and bubblewrap (``bwrap``) works: the whole fork server
  runs in it (``bwrap_command``): new user, mount, PID, network, IPC and UTS namespaces, only the
  system's folders, the Python environment and the course visible (read-only), a 64 MB ``/tmp`` of
  its own; the fork server and the checker processes are not dumpable, so a learner's process of the
  same user cannot read or trace them;
* a wall-clock limit kept by the grader (a stopped process cannot hold it up), after which the whole
  session is killed; after every exercise, every process it started, even a detached one, is
  killed (the grader and its fork server are child subreapers, so orphans stay below them).

``--isolate container`` runs each exercise's two processes with Docker or Podman instead
(``container_command``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

NOBODY = 65534
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = (
    0x00020000, 0x04000000, 0x08000000, 0x20000000, 0x40000000)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1, 2, 4, 8, 32, 4096, 16384, 1 << 18)
IMAGE = "encoder-course-grader"
DOCKERFILE = Path(__file__).with_name("grader.Dockerfile")


PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm")  # each verdict process gets empty ones of its own
JOB_TMPFS_MB = 64  # the size of each of those and of the job folder (memory, not disk)


@dataclass
class Plan:
    """How verdict processes are isolated in this run (sent to the fork server as JSON)."""

    uid: int | None = None  # drop to this user (and gid) when the grader is root
    gid: int | None = None
    namespaces: bool = False  # mount, PID, network, IPC and UTS namespaces
    expose: list = field(default_factory=list)  # [folder to cover, [folders inside it to show]]
    hide: list = field(default_factory=list)  # folders covered by an empty read-only folder
    hide_files: list = field(default_factory=list)  # files covered by /dev/null
    keep_in_tmp: list = field(default_factory=list)  # needed folders under /tmp, /var/tmp, /dev/shm: bound back
    bwrap: str | None = None  # an ordinary user's run: the fork server lives in this bubblewrap
    memory_mb: int = 4096
    cpu_s: int = 120
    file_mb: int = 64
    warnings: list = field(default_factory=list)

    def describe(self) -> str:
        parts = []
        parts.append(f"as uid {self.uid}" if self.uid is not None else f"as uid {os.geteuid()} (yours)")
        if self.bwrap:
            parts.append("in bubblewrap (own user/mount/PID/network namespaces, only the Python environment "
                         "and the course visible, read-only)")
        else:
            parts.append("own mount/PID/network namespaces" if self.namespaces else "no namespaces")
        parts.append(f"memory {self.memory_mb} MB")
        return ", ".join(parts)

    def to_json(self) -> dict:
        return asdict(self)


# ----------------------------------------------------------------------------------------------
# libc helpers (Linux); every one is a no-op or raises OSError elsewhere


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def prctl(option: int, value: int) -> bool:
    libc = _libc()
    if libc is None:
        return False
    return libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0


def make_subreaper(on: bool = True) -> bool | None:
    """Orphaned descendants of this process are re-parented to it (Linux), so it can find and kill them.

    Returns the previous setting (None where unknown), to put back with ``make_subreaper(previous)``.
    """
    libc = _libc()
    if libc is None:
        return None
    state = ctypes.c_int(0)
    previous = bool(state.value) if libc.prctl(37, ctypes.byref(state), 0, 0, 0) == 0 else None  # GET
    prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0)
    return previous


def unshare(flags: int) -> None:
    libc = _libc()
    if libc is None:
        raise OSError("namespaces need Linux")
    _check(libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(source, target, fstype, flags: int, data=None) -> None:
    libc = _libc()
    if libc is None:
        raise OSError("mounts need Linux")
    enc = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


# ----------------------------------------------------------------------------------------------
# Planning (grader side)


def course_root() -> Path:
    """The folder that holds the ``encoder_course`` package (put on the verdict processes' PYTHONPATH)."""
    return Path(__file__).resolve().parent.parent.parent


def needed_paths() -> list[str]:
    """Folders the verdict processes must read: the interpreter, its libraries, the course."""
    import site
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             str(course_root())}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            paths.add(sysconfig.get_paths()[key])
        except KeyError:
            pass
    try:
        paths.update(site.getsitepackages())
    except AttributeError:
        pass
    here = os.path.realpath(os.getcwd())  # on sys.path under `python -m`: the teacher's folder, not a library
    paths.update(p for p in sys.path if p and os.path.isdir(p) and os.path.realpath(p) != here)
    real = sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)})
    kept = []
    for p in real:  # drop a path inside one already kept
        if not any(p == k or p.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(p)
    return kept


def _world_can(path: str, mode: int) -> bool:
    try:
        return bool(os.stat(path).st_mode & mode)
    except OSError:
        return False


def plan_exposure(paths: list[str]) -> tuple[list, list[str]]:
    """``([[covered folder, [folders to show]], ...], problems)`` so that ``nobody`` can read ``paths``.

    A folder on the way that others may not enter (``/root`` is 0700) is covered by an empty tmpfs
    in the verdict process's mount namespace, and only the needed folders are bound back into it.
    """
    cover: dict[str, list[str]] = {}
    problems = []
    for p in paths:
        parts = Path(p).parts
        blocked = None
        for i in range(2, len(parts)):
            ancestor = str(Path(*parts[:i]))
            if not _world_can(ancestor, stat.S_IXOTH):
                blocked = ancestor
                break
        if not _world_can(p, stat.S_IROTH) or not _world_can(p, stat.S_IXOTH):
            problems.append(f"{p} is not readable by others")
        if blocked:
            inner = [c for c in cover if blocked.startswith(c.rstrip("/") + "/")]
            cover.setdefault(inner[0] if inner else blocked, []).append(p)
    return [[k, sorted(set(v))] for k, v in sorted(cover.items())], problems


def make_plan(*, hide=(), hide_files=(), memory_mb=4096, cpu_s=120, namespaces_available=False,
              drop_privileges=True, bwrap: str | None = None) -> Plan:
    """The isolation this run can have: drop to ``nobody`` when root, namespaces where they work,
    bubblewrap (``bwrap``, its path) for an ordinary user."""
    plan = Plan(memory_mb=int(memory_mb), cpu_s=int(cpu_s))
    if not drop_privileges:
        plan.warnings.append("verdict processes run as your user, without namespaces (asked for)")
        return plan
    if os.name != "posix" or os.geteuid() != 0:
        if bwrap:
            plan.bwrap = bwrap
            _hide(plan, hide, hide_files)
            return plan
        plan.warnings.append(
            "the grader is not root and bubblewrap (bwrap) is not installed: verdict processes run as your user "
            "(they can read what you can); install bubblewrap, use --isolate container, or run the grader as root "
            "so they run as 'nobody'")
        return plan
    expose, problems = plan_exposure(needed_paths())
    if problems:
        plan.warnings.append("verdict processes run as root: " + "; ".join(problems))
        return plan
    if expose and not namespaces_available:
        plan.warnings.append(
            "verdict processes run as root: 'nobody' cannot reach " + ", ".join(e for c in expose for e in c[1])
            + " and no mount namespace is available to make it reachable")
        return plan
    plan.uid = plan.gid = NOBODY
    plan.namespaces = namespaces_available
    plan.expose = expose
    needed = needed_paths()
    _hide(plan, hide, hide_files)
    plan.keep_in_tmp = [n for n in needed if any(n.startswith(t + "/") for t in PRIVATE_TMP)]
    if plan.keep_in_tmp and namespaces_available:
        plan.warnings.append("the Python environment or the course lies under a temporary folder ("
                             + ", ".join(plan.keep_in_tmp) + "): it is bound read-only into each verdict "
                             "process's private /tmp")
    if not namespaces_available:
        plan.warnings.append("no namespaces: verdict processes can see other processes and the network")
    return plan


def _hide(plan: Plan, hide, hide_files) -> None:
    """The folders (not holding a needed one) and files to cover in the verdict processes' view."""
    needed = needed_paths()
    for h in hide:
        h = os.path.realpath(h)
        if not os.path.isdir(h) or any(n == h or n.startswith(h.rstrip("/") + "/") for n in needed):
            continue
        if h not in plan.hide:
            plan.hide.append(h)
    plan.hide_files = sorted({os.path.realpath(f) for f in hide_files})


# ----------------------------------------------------------------------------------------------
# Bubblewrap, for an ordinary user


SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")


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


def bwrap_command(plan: Plan, base: str) -> list[str]:
    """The bubblewrap around the fork server: nothing of the host but the system's folders, the Python
    environment and the course (read-only), the grader's job folders (read-only, copied in per job); its
    own size-limited /tmp; no network, no other process, no home, submissions, masters or gradebook."""
    cmd = [plan.bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for d in SYSTEM_DIRS:
        cmd += ["--ro-bind-try", d, d]
    cmd += ["--dev", "/dev", "--proc", "/proc", "--size", str(JOB_TMPFS_MB * 1024 * 1024), "--tmpfs", "/tmp"]
    bound = needed_paths() + [base]
    for p in bound:
        cmd += ["--ro-bind", p, p]
    inside = [p for p in bound + list(SYSTEM_DIRS)]

    def visible(path):
        return any(path.startswith(p.rstrip("/") + "/") for p in inside)

    for h in plan.hide:  # (never one that holds what must stay visible: the job folders, say)
        if visible(h) and not any(p == h or p.startswith(h.rstrip("/") + "/") for p in bound):
            cmd += ["--tmpfs", h, "--remount-ro", h]
    for f in plan.hide_files:
        if visible(f) and os.path.isfile(f):
            cmd += ["--ro-bind", "/dev/null", f]
    return cmd


def clear_folder(path: str) -> None:
    """Empty ``path`` of whatever a learner's process left there, folders it made unreadable included."""
    for root, dirs, _files in os.walk(path):
        for d in dirs:
            try:
                os.chmod(os.path.join(root, d), 0o700)
            except OSError:
                pass
    for name in os.listdir(path):
        target = os.path.join(path, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target, ignore_errors=True)
        else:
            try:
                os.unlink(target)
            except OSError:
                pass


def clean_environment(job_dir: str) -> dict[str, str]:
    """The whole environment of a verdict process: nothing of the teacher's."""
    return {
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": job_dir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": str(course_root()),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONSAFEPATH": "1",
        "PYTHONIOENCODING": "utf-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "IPYTHONDIR": os.path.join(job_dir, ".ipython"),
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": os.path.join(job_dir, ".matplotlib"),
        "XDG_CACHE_HOME": os.path.join(job_dir, ".cache"),
        "TORCH_HOME": os.path.join(job_dir, ".cache", "torch"),
        "TMPDIR": os.path.join(job_dir, "tmp"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "ENCODER_COURSE_WORKSPACE": os.path.join(job_dir, "workspace"),
    }


def make_job_dir(base: str, plan: Plan, submission: bytes | None, name: str) -> str:
    """A fresh folder for one verdict process, owned by the user it runs as; the submission copied in."""
    job = tempfile.mkdtemp(prefix="job-", dir=base)
    for sub in ("tmp", "workspace", ".ipython", ".matplotlib", ".cache"):
        os.mkdir(os.path.join(job, sub), 0o700)
    if submission is not None:
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[-100:] or "submission.ipynb"
        with open(os.path.join(job, safe), "wb") as handle:
            handle.write(submission)
    if plan.uid is not None:
        for root, dirs, files in os.walk(job):
            for n in [root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in files)]:
                os.chown(n, plan.uid, plan.gid)
    return job


RUN_PREFIX = "encoder-course-grade-"


def _started(pid: int) -> str | None:
    """When process ``pid`` started (ticks since boot: with the pid, it names one process), None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def make_run_base() -> str:
    """The grader's private folder for this run (0711: others may pass through it, not list it), naming its
    owner. A killed run cannot remove its own: each run first removes this user's whose owner is gone."""
    for old in Path(tempfile.gettempdir()).glob(RUN_PREFIX + "*"):
        try:
            pid, started = (old / "owner").read_text("ascii").split()
            if old.lstat().st_uid == os.getuid() and _started(int(pid)) != started:
                remove_tree(str(old))
        except (OSError, ValueError):
            continue
    base = tempfile.mkdtemp(prefix=RUN_PREFIX)
    os.chmod(base, 0o711)
    Path(base, "owner").write_text(f"{os.getpid()} {_started(os.getpid())}", "ascii")
    return base


def remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


# ----------------------------------------------------------------------------------------------
# Entering the sandbox (verdict process side, as root, before any learner code)


def _limits(plan: Plan) -> None:
    import resource

    def setlimit(which, soft, hard=None):
        try:
            resource.setrlimit(which, (soft, hard if hard is not None else soft))
        except (ValueError, OSError):
            pass

    mb = 1024 * 1024
    setlimit(resource.RLIMIT_AS, plan.memory_mb * mb)
    setlimit(resource.RLIMIT_CPU, plan.cpu_s, plan.cpu_s + 5)
    setlimit(resource.RLIMIT_FSIZE, plan.file_mb * mb)
    setlimit(resource.RLIMIT_CORE, 0)
    setlimit(resource.RLIMIT_NOFILE, 256)
    if (plan.uid is not None or plan.bwrap) and hasattr(resource, "RLIMIT_NPROC"):
        setlimit(resource.RLIMIT_NPROC, 256)  # in bubblewrap's user namespace: counts only the sandbox's


def _mounts(plan: Plan, job_dir: str) -> str:
    """Set up the mount namespace; returns the job folder's path inside it."""
    # Held open before anything is covered (the CSV's folder may be /tmp, which holds the job folder).
    job_fd = os.open(job_dir, os.O_PATH | os.O_DIRECTORY)
    # A Python environment under /tmp (CI runners, scratch machines) must survive the private /tmp:
    # held open before the tmpfs covers it, bound back read-only after.
    kept = [(p, os.open(p, os.O_PATH | os.O_DIRECTORY)) for p in plan.keep_in_tmp if os.path.isdir(p)]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    for covered, shown in plan.expose:
        fds = [(p, os.open(p, os.O_PATH | os.O_DIRECTORY)) for p in shown]
        mount("tmpfs", covered, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m")
        for p, fd in fds:
            os.makedirs(p, 0o755, exist_ok=True)
            mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC)
            os.close(fd)
    for h in plan.hide:
        try:
            mount("tmpfs", h, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=755,size=4k")
        except OSError:
            pass
    for f in plan.hide_files:
        if os.path.isfile(f):
            try:
                mount("/dev/null", f, None, MS_BIND)
            except OSError:
                pass
    for tmp in PRIVATE_TMP:
        if os.path.isdir(tmp):
            mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={JOB_TMPFS_MB}m")
    for p, fd in kept:
        os.makedirs(p, 0o755, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC)
        try:
            mount(None, p, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC)
        except OSError:
            pass
        os.close(fd)
    # The job folder is a size-limited tmpfs of its own, filled with a copy of what the grader prepared:
    # what the learner's code writes never reaches the host's disk.
    inside = "/tmp/job"
    os.mkdir(inside, 0o755)
    owner = f",uid={plan.uid},gid={plan.gid}" if plan.uid is not None else ""
    mount("tmpfs", inside, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=700,size={JOB_TMPFS_MB}m{owner}")
    shutil.copytree(f"/proc/self/fd/{job_fd}", inside, dirs_exist_ok=True, symlinks=True)
    if plan.uid is not None:
        for root, dirs, files in os.walk(inside):
            for name in [root, *(os.path.join(root, d) for d in dirs), *(os.path.join(root, f) for f in files)]:
                os.lchown(name, plan.uid, plan.gid)
    os.close(job_fd)
    # No /proc at all: no other process to look at, and not even this process's own memory.
    mount("tmpfs", "/proc", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=555,size=4k")
    return inside


def enter(plan: Plan, job_dir: str, *, fork_for_pid_namespace: bool = True) -> str:
    """Isolate the calling (just forked, root or not) process; returns the job folder to work in.

    With namespaces, the caller forks once more: the child is PID 1 of a new PID namespace (when it
    ends, the kernel kills everything inside), the caller waits for it and exits with its status.
    """
    os.setsid()
    inside = job_dir
    if plan.namespaces:
        unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
        if fork_for_pid_namespace:
            pid = os.fork()
            if pid == 0:  # PID 1 of the new namespace: die with the process that waits for it
                prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            else:
                prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status) else 111)
        inside = _mounts(plan, job_dir)
    elif plan.bwrap:  # the job folder is bound read-only: work on a copy in the sandbox's own small /tmp
        inside = "/tmp/job"
        shutil.copytree(job_dir, inside, symlinks=True)
    _limits(plan)
    if plan.uid is not None:
        os.setgroups([])
        os.setgid(plan.gid)
        os.setuid(plan.uid)
        if os.getuid() != plan.uid or os.geteuid() != plan.uid:
            raise OSError("could not drop privileges")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_DUMPABLE, 0)  # no reading this process's memory through /proc, even by its own user
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    env = clean_environment(inside)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(inside)
    return inside


def probe_namespaces() -> bool:
    """Whether this process may create the namespaces and mounts of ``enter`` (forks to try)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)
            inner = os.fork()
            if inner == 0:
                try:
                    mount(None, "/", None, MS_REC | MS_PRIVATE)
                    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1m")
                    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
                    os._exit(0)
                except BaseException:
                    os._exit(1)
            _, status = os.waitpid(inner, 0)
            code = 0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


# ----------------------------------------------------------------------------------------------
# Killing what a verdict process left behind


def descendants(pid: int | None = None) -> list:
    """psutil Processes below ``pid`` (this process by default); empty without psutil."""
    try:
        import psutil

        return psutil.Process(pid or os.getpid()).children(recursive=True)
    except Exception:
        return []


def kill_tree(procs) -> None:
    """SIGKILL the given psutil processes (stopped ones included) and reap those that are our children."""
    try:
        import psutil
    except ImportError:
        return
    import time

    for p in procs:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    own = os.getpid()
    deadline = time.monotonic() + 5
    left = list(procs)
    while left and time.monotonic() < deadline:
        still = []
        for p in left:
            try:
                if p.ppid() == own:
                    os.waitpid(p.pid, os.WNOHANG)
                if p.status() != psutil.STATUS_ZOMBIE:
                    still.append(p)  # a zombie is dead; its parent (the fork server) reaps it
            except (psutil.Error, ChildProcessError, OSError):
                pass
        left = still
        if left:
            time.sleep(0.01)


def resume(pid: int) -> None:
    """SIGCONT to ``pid`` (the fork server, which a learner's process of the same user may have stopped)."""
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass


def kill_session(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


# ----------------------------------------------------------------------------------------------
# Containers


def container_engine() -> tuple[str | None, str]:
    """``(engine, why)``: "docker" or "podman" when one answers, else None and what went wrong."""
    reasons = []
    for engine in ("docker", "podman"):
        exe = shutil.which(engine)
        if not exe:
            reasons.append(f"{engine}: not installed")
            continue
        try:
            done = subprocess.run([exe, "info"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            reasons.append(f"{engine}: {exc}")
            continue
        if done.returncode == 0:
            return exe, ""
        last = (done.stderr or done.stdout).strip().splitlines()
        reasons.append(f"{engine} info failed: {last[-1] if last else done.returncode}")
    return None, "; ".join(reasons)


def build_image_command(engine: str, image: str = IMAGE) -> list[str]:
    """The command that builds the grader image from the course's repository (the build context)."""
    return [engine, "build", "-f", str(DOCKERFILE), "-t", image, str(course_root())]


def container_command(engine: str, image: str, name: str, plan: Plan) -> list[str]:
    """``docker run`` for one verdict process: job and token on stdin, verdict on stdout, output on stderr."""
    env = clean_environment("/job")
    env["PYTHONPATH"] = "/course"
    cmd = [engine, "run", "--rm", "-i", "--name", name, "--network", "none", "--user", f"{NOBODY}:{NOBODY}",
           "--memory", f"{plan.memory_mb}m", "--memory-swap", f"{plan.memory_mb}m", "--pids-limit", "64",
           "--cpus", "1", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
           "--tmpfs", "/tmp:size=64m", "--tmpfs", f"/job:size=64m,uid={NOBODY},gid={NOBODY},mode=700",
           "--ulimit", f"cpu={plan.cpu_s}", "--ulimit", f"fsize={plan.file_mb * 1024 * 1024}",
           "--workdir", "/job"]
    for key, value in sorted(env.items()):
        if key != "PATH":
            cmd += ["-e", f"{key}={value}"]
    return cmd + [image, "python", "-s", "-m", "encoder_course.course.verdict", "stdio"]
