"""A throwaway one-node Slurm 22.05 cluster on loopback, for tests/core/test_slurm_cluster.py.

Debian bookworm's packages (slurmctld, slurmd, slurm-client, munge) are installed on first
use when missing. The cluster has no accounting database (accounting_storage/none) and no
systemd: munged, slurmctld and slurmd are started by hand with every file of the cluster
(config, state, spool, logs, pid files) in one temporary folder, on ports picked free, so
two runs on one machine do not meet. `SlurmCluster` is a context manager: leaving it stops
the cluster (`scontrol shutdown`, then a kill of whatever it started that is left over) and
munged if it started munged, also when starting failed half way.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

SBIN = "/usr/sbin"
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
BINARIES = ["slurmctld", "slurmd", "sinfo", "srun", "sbatch", "squeue", "scontrol",
            "munged", "munge", "unmunge", "mungekey"]
APT_LOCK = Path("/tmp/judgebias-slurm-apt.lock")
MUNGE_KEY = Path("/etc/munge/munge.key")
MUNGE_RUN = Path("/run/munge")
NVIDIA_MAJOR = 195  # the character devices /dev/nvidia0, 1, ... of NVIDIA's driver


def which(name: str) -> str | None:
    return shutil.which(name, path=f"{os.environ.get('PATH', '')}{os.pathsep}{SBIN}")


def missing_binaries() -> list[str]:
    return [name for name in BINARIES if which(name) is None]


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive lock across processes (pytest-xdist workers, parallel sessions)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_slurm_packages() -> None:
    """Install Debian's Slurm and munge packages unless their binaries are there already.

    Idempotent, and serialised by a file lock so that two xdist workers never run apt at
    once; apt waits for dpkg's own lock too (other tests may be installing their packages).
    Skips the calling test only when apt itself is unavailable (no apt-get, not root)."""
    if not missing_binaries():
        return
    with file_lock(APT_LOCK):
        if not missing_binaries():  # another worker installed them while we waited
            return
        apt = shutil.which("apt-get")
        if apt is None:
            pytest.skip(f"Slurm is not installed ({', '.join(missing_binaries())} missing) "
                        "and apt-get is unavailable to install it")
        if os.geteuid() != 0:
            pytest.skip(f"Slurm is not installed ({', '.join(missing_binaries())} missing) "
                        "and apt-get needs root to install it")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        lock_wait = ["-o", "DPkg::Lock::Timeout=600"]

        def apt_get(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([apt, *lock_wait, *args], env=env, capture_output=True,
                                  text=True, timeout=1200)

        install = ("install", "-y", "--no-install-recommends", *PACKAGES)
        result = apt_get(*install)
        if result.returncode != 0:  # a fresh machine: empty or stale package lists
            update = apt_get("update")
            result = apt_get(*install)
            if result.returncode != 0:
                raise RuntimeError(f"apt-get could not install {' '.join(PACKAGES)}:\n"
                                   f"{update.stdout}{update.stderr}\n"
                                   f"{result.stdout}{result.stderr}")
        if missing := missing_binaries():
            raise RuntimeError(f"apt-get installed {PACKAGES} but {missing} are missing")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def node_memory_mb(cpus: int) -> int:
    """The node's RealMemory: the machine's memory (SlurmdParameters=config_overrides lets
    slurmd accept a value it cannot see), at least enough for one 4000 MB model job (the
    pipeline's default request) per CPU. Nothing enforces it (no cgroup task plugin)."""
    least = 4096 * cpus
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return max(int(line.split()[1]) // 1024, least)
    return least


def cgroup_conf() -> str:
    """slurmd 22.05 always loads a cgroup plugin, even with proctrack/linuxproc and
    task/none. cgroup/v2 refuses a hybrid layout (a cgroup v1 hierarchy mounted beside
    the unified one: "fatal: Hybrid mode is not supported"), so take v1 there; on a pure
    cgroup v2 host take v2 without asking systemd (there is no systemd here)."""
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        return "CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n"
    return "CgroupPlugin=cgroup/v1\n"


class SlurmCluster:
    """One node, `localhost`, `cpus` CPUs (declared: slurmd does not check them against
    the machine), partition `debug` (the default), no accounting.

    With `gpus`, the node also has that many GPUs as Slurm knows them: the generic
    resource `gpu` (GresTypes=gpu, gres.conf with AutoDetect=off) on character device files
    made here with NVIDIA's major number (slurmd refuses a regular file; no driver is
    behind them, and nothing opens them), and a second partition, `gpu`, that offers them.
    Slurm then schedules, counts and binds them as on a real GPU node: a job asking for
    `--gpus=N` gets N of them and CUDA_VISIBLE_DEVICES naming them (Flags=nvidia_gpu_env).
    The node is in both partitions, so a job's partition says where it was sent, not what
    it ran on.
    """

    partition = "debug"
    gpu_partition = "gpu"

    def __init__(self, root: Path, cpus: int = 2, gpus: int = 0):
        self.root = root
        self.cpus = cpus
        self.gpus = gpus
        self.conf = root / "slurm.conf"
        self.logs = root / "log"
        self.wrappers = root / "bin"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf),
                    "PATH": os.pathsep.join([str(self.wrappers), os.environ.get("PATH", ""),
                                             SBIN])}
        self.daemons: dict[str, subprocess.Popen] = {}
        self.started_munged = False

    # -- bring-up ------------------------------------------------------------------------

    def __enter__(self) -> SlurmCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self.start_munge()
        self.write_config()
        for daemon, args in (("slurmctld", ["-D", "-c"]), ("slurmd", ["-D"])):
            out = open(self.logs / f"{daemon}.out", "w")  # noqa: SIM115 (closed with it)
            self.daemons[daemon] = subprocess.Popen(
                [which(daemon), *args], env=self.env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
            out.close()
        self.wait_idle(timeout=90)
        smoke = self.run(["srun", "--time=1", "true"], timeout=90)
        if smoke.returncode != 0:
            raise RuntimeError(f"srun true failed:\n{smoke.stdout}{smoke.stderr}\n"
                               + self.diagnostics())

    def run(self, cmd: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([which(cmd[0]) or cmd[0], *cmd[1:]], env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def munge_works(self) -> bool:
        try:
            cred = subprocess.run([which("munge"), "-n"], capture_output=True, timeout=10)
            check = subprocess.run([which("unmunge")], input=cred.stdout,
                                   capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return cred.returncode == 0 and check.returncode == 0

    def start_munge(self) -> None:
        """Reuse a running munged (this machine's, whoever started it); else start one
        with Debian's key (created when absent) on the default socket /run/munge."""
        if self.munge_works():
            return
        MUNGE_RUN.mkdir(parents=True, exist_ok=True)
        shutil.chown(MUNGE_RUN, "munge", "munge")
        MUNGE_RUN.chmod(0o755)
        if not MUNGE_KEY.exists():
            MUNGE_KEY.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([which("mungekey"), "--create", "--keyfile", str(MUNGE_KEY)],
                           check=True, capture_output=True)
        shutil.chown(MUNGE_KEY, "munge", "munge")
        MUNGE_KEY.chmod(0o400)
        result = subprocess.run(["runuser", "-u", "munge", "--", which("munged")],
                                capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            raise RuntimeError(f"munged did not start: {result.stdout}{result.stderr}")
        self.started_munged = True
        deadline = time.monotonic() + 20
        while not self.munge_works():
            if time.monotonic() > deadline:
                raise RuntimeError("munged started but `munge -n | unmunge` fails")
            time.sleep(0.2)

    def write_config(self) -> None:
        for name in ("state", "spool", "log"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        r = self.root
        self.conf.write_text(f"""\
ClusterName=ci
SlurmctldHost=localhost
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
AuthType=auth/munge
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
MinJobAge={self.min_job_age}
SlurmdParameters=config_overrides
{self.gres_lines()}\
NodeName=localhost CPUs={self.cpus} RealMemory={node_memory_mb(self.cpus)} {self.node_gres()}\
State=UNKNOWN
PartitionName={self.partition} Nodes=localhost Default=YES MaxTime=INFINITE State=UP
{self.gpu_partition_line()}\
""")
        (r / "cgroup.conf").write_text(cgroup_conf())
        if self.gpus:
            (r / "gres.conf").write_text(self.gres_conf())
        self.write_srun_wrapper()

    # A finished job stays visible to `scontrol show job` this long (s): the tests read
    # every job of a run (its partition, its GPUs) after the run.
    min_job_age = 3600

    def gres_lines(self) -> str:
        return "GresTypes=gpu\n" if self.gpus else ""

    def node_gres(self) -> str:
        return f"Gres=gpu:{self.gpus} " if self.gpus else ""

    def gpu_partition_line(self) -> str:
        if not self.gpus:
            return ""
        return (f"PartitionName={self.gpu_partition} Nodes=localhost MaxTime=INFINITE "
                "State=UP\n")

    def gres_conf(self) -> str:
        """The GPUs' device files, made here (mknod needs root, as the cluster does)."""
        devices = self.root / "dev"
        devices.mkdir(exist_ok=True)
        for index in range(self.gpus):
            path = devices / f"nvidia{index}"
            if not path.exists():
                os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(NVIDIA_MAJOR, index))
        last = self.gpus - 1
        files = f"{devices}/nvidia[0-{last}]" if last else f"{devices}/nvidia0"
        return f"AutoDetect=off\nName=gpu File={files} Flags=nvidia_gpu_env\n"

    def write_srun_wrapper(self) -> None:
        """Inside a job, snakemake-executor-plugin-slurm-jobstep (0.6) starts the step with
        `srun -n1 --cpu-bind=q ...` in an environment stripped of every SLURM_* variable but
        the job's identity, SLURM_CONF included, so that srun looks for the default
        /etc/slurm/slurm.conf, then for a configless controller in DNS ("fatal: Could not
        establish a configuration source"). Real clusters keep their config at the
        default path; this one lives in a temporary folder, so jobs find on their PATH
        (sbatch --export=ALL) an srun that puts SLURM_CONF back."""
        self.wrappers.mkdir(parents=True, exist_ok=True)
        wrapper = self.wrappers / "srun"
        wrapper.write_text(f'#!/bin/sh\nSLURM_CONF="{self.conf}" exec {which("srun")} "$@"\n')
        wrapper.chmod(0o755)

    def wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            for name, proc in self.daemons.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}\n"
                                       + self.diagnostics())
            result = self.run(["sinfo", "-h", "-o", "%t"])
            state = result.stdout.strip()
            if result.returncode == 0 and state == "idle":
                return
            time.sleep(0.5)
        raise RuntimeError(f"the node is not idle after {timeout}s (sinfo: {state!r})\n"
                           + self.diagnostics())

    def diagnostics(self) -> str:
        parts = []
        for path in sorted(self.logs.glob("*")):
            lines = path.read_text(errors="replace").splitlines()[-30:]
            parts.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(parts)

    # -- teardown ------------------------------------------------------------------------

    def stop(self) -> None:
        if self.conf.exists() and self.daemons:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self.run(["scontrol", "shutdown"], timeout=20)
        for proc in self.daemons.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.kill_leftovers()
        if self.started_munged:
            subprocess.run([which("munged"), "--stop"], capture_output=True, timeout=30)
            self.started_munged = False

    def kill_leftovers(self) -> None:
        """Kill what this cluster started and is still running: slurmstepd and the jobs'
        processes, found by the SLURM_CONF of this cluster in their environment."""
        marker = f"SLURM_CONF={self.conf}".encode()
        keep = {os.getpid(), os.getppid()}
        for proc_dir in Path("/proc").iterdir():
            if not proc_dir.name.isdigit() or int(proc_dir.name) in keep:
                continue
            try:
                environ = (proc_dir / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if marker in environ:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(proc_dir.name), signal.SIGKILL)
