"""A LAVA instance on this machine, from Debian's packages, for trying
the LAVA runner and for its end-to-end test.

`python3 -m lab lava-local up` starts what the packages' systemd units
would (this works where PID 1 is not systemd, as in containers):
PostgreSQL, the database set-up lava-server's postinst does, the web
and RPC server (gunicorn, on 127.0.0.1 only), the scheduler and one
worker with one qemu device, and a lavacli identity for it.  The worker
gets the lab's QEMU as a Debian package (lab/build/qemudeb.py), so
that its jobs measure in the medium local runs do.  Each step
is skipped when already done, so `up` can be run any time; `down`
stops the daemons it started.  Their pid files and logs are in the
lab's cache (~/.cache/softirq-rt-lab/lava-local/), shared by every
checkout on the machine, as the instance is.
"""
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from ....base import paths
from ....base.log import LabError, info
from .tool import tool
from ....build import qemudeb

PORT = int(os.environ.get("LAB_LAVA_PORT", "8800"))
URL = f"http://127.0.0.1:{PORT}"
IDENTITY = "softirq-lab-local"
USER = "lab"
WORKER = "lab-worker"
DEVICE = "qemu-lab-01"
DEVICE_DICT = Path("/etc/lava-server/dispatcher-config/devices") / \
    f"{DEVICE}.jinja2"
# lavaserver runs gunicorn and owns the device dictionaries
SERVER_ACCOUNT = "lavaserver"
PACKAGES = ("lava-server", "lava-dispatcher", "lavacli", "postgresql")


def state_dir() -> Path:
    d = paths.cache_dir() / "lava-local"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _run(cmd: list, what: str, timeout: float = 300) -> str:
    # from /: lava-server's postinst switches to the lavaserver
    # account, which may not read the caller's folder
    return tool(cmd, what, f"install {' '.join(PACKAGES)} "
                f"(`make deps-lava`)", timeout=timeout, cwd="/")


def manage(*args, what: str = "") -> str:
    return _run(["lava-server", "manage", *args],
                what or f"lava-server manage {args[0]}")


def check_packages() -> None:
    missing = []
    for p in PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p],
                           capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            missing.append(p)
    if missing:
        raise LabError(f"a local LAVA needs Debian packages "
                       f"{' '.join(missing)}: `make deps-lava` installs them")
    if os.geteuid() != 0:
        raise LabError("a local LAVA must be set up as root (it starts "
                       "PostgreSQL and LAVA's daemons)")


def start_postgres() -> None:
    if subprocess.run(["pg_isready", "-q"]).returncode == 0:
        return
    clusters = _run(["pg_lsclusters", "-h"], "PostgreSQL").split()
    if len(clusters) < 2:
        raise LabError("PostgreSQL has no cluster: run "
                       "`pg_createcluster --start 15 main`")
    info(f"starting PostgreSQL {clusters[0]}/{clusters[1]}")
    _run(["pg_ctlcluster", clusters[0], clusters[1], "start"], "PostgreSQL")
    (state_dir() / "postgres.started").write_text(
        f"{clusters[0]} {clusters[1]}\n")


def set_up_database() -> None:
    """What lava-server's postinst does once PostgreSQL runs: database,
    roles, migrations (it skips them when the package is installed with
    no PostgreSQL running, as on a machine without systemd)."""
    if Path("/etc/lava-server/settings.d/00-database.yaml").is_file() and \
            "[ ]" not in manage("showmigrations", "lava_scheduler_app",
                                what="LAVA database"):
        return
    info("setting up LAVA's database (lava-server's postinst)")
    _run(["/usr/bin/python3", "/usr/share/lava-server/postinst.py"],
         "LAVA database set-up", timeout=900)


def _pidfile(name: str) -> Path:
    return state_dir() / f"{name}.pid"


def _alive(name: str) -> bool:
    """Whether the daemon runs (a zombie child of this process does not)."""
    try:
        pid = int(_pidfile(name).read_text())
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def daemon(name: str, cmd: list) -> None:
    """Start `cmd` in its own session unless it runs already."""
    if _alive(name):
        return
    log = open(state_dir() / f"{name}.log", "ab")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, cwd="/",
                            start_new_session=True)
    _pidfile(name).write_text(f"{proc.pid}\n")
    info(f"started {name} (pid {proc.pid}, log {log.name})")


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=5).read(1)
        return True
    except OSError:
        return False


def wait_for_http(url: str, seconds: float = 90) -> None:
    end = time.monotonic() + seconds
    while not answers(url):
        if time.monotonic() > end:
            raise LabError(f"LAVA server at {url} did not answer in "
                           f"{seconds:.0f} s; see "
                           f"{state_dir()}/gunicorn.log")
        time.sleep(1)


def _listed(output: str, name: str) -> bool:
    return any(line.strip().startswith(f"* {name}")
               for line in output.splitlines())


def token_of(output: str) -> str:
    """The token in `tokens list` ("* <token> (description)") or
    `workers details` ("token      : <token>") output."""
    m = re.search(r"^(?:\* (\S{20,})|token\s*:\s*(\S+))", output, re.M)
    return (m.group(1) or m.group(2)) if m else ""


def set_up_accounts() -> dict:
    """User, token, worker, device type and device; their tokens."""
    if not _listed(manage("users", "list"), USER):
        manage("users", "add", "--superuser", "--staff", "--passwd",
               os.urandom(12).hex(), USER)
    token = token_of(manage("tokens", "list", "--user", USER))
    if not token:
        manage("tokens", "add", "--user", USER)
        token = token_of(manage("tokens", "list", "--user", USER))
    if not _listed(manage("workers", "list"), WORKER):
        manage("workers", "add", WORKER)
    worker_token = token_of(manage("workers", "details", WORKER))
    if not _listed(manage("device-types", "list"), "qemu"):
        manage("device-types", "add", "qemu")
    DEVICE_DICT.write_text("{% extends 'qemu.jinja2' %}\n"
                           "{% set arch = 'amd64' %}\n"
                           "{% set no_kvm = True %}\n")
    subprocess.run(["chown", f"{SERVER_ACCOUNT}:", str(DEVICE_DICT)])
    if not _listed(manage("devices", "list", "--all"), DEVICE):
        manage("devices", "add", "--device-type", "qemu", "--worker",
               WORKER, DEVICE)
    # LAVA marks a device's health Unknown when its worker goes away and
    # waits for a health check this lab has none of: the device is fine.
    manage("devices", "update", "--health", "GOOD", DEVICE)
    if not token or not worker_token:
        raise LabError("LAVA accounts: could not read the user's or the "
                       "worker's token from lava-server manage")
    return {"token": token, "worker_token": worker_token}


def wait_for_device(seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while True:
        out = manage("devices", "list")
        if any(DEVICE in line and "Idle" in line and "Good" in line
               for line in out.splitlines()) and \
                "Online" in manage("workers", "details", WORKER):
            return
        if time.monotonic() > end:
            raise LabError(f"LAVA device {DEVICE} not idle and its worker "
                           f"not online after {seconds:.0f} s: see "
                           f"{state_dir()}/lava-worker.log and "
                           f"/var/log/lava-dispatcher/lava-worker.log")
        time.sleep(2)


def up() -> str:
    """Bring the instance up; return the lavacli identity for it."""
    started = time.monotonic()
    check_packages()
    # the worker is this machine: its jobs run the lab's QEMU, as local
    # runs do (lab/build/qemudeb.py)
    qemudeb.install()
    start_postgres()
    set_up_database()
    if not answers(f"{URL}/api/v0.2/"):
        daemon("gunicorn", [
            "gunicorn3", "lava_server.wsgi", "--bind", f"127.0.0.1:{PORT}",
            "-u", SERVER_ACCOUNT, "-g", SERVER_ACCOUNT, "--workers", "2",
            "--timeout", "120"])
    daemon("lava-scheduler", ["lava-server", "manage", "lava-scheduler",
                              "--level", "INFO"])
    wait_for_http(f"{URL}/api/v0.2/")
    tokens = set_up_accounts()
    daemon("lava-worker", ["lava-worker", "--level", "INFO", "--url",
                           URL + "/", "--token", tokens["worker_token"],
                           "--name", WORKER])
    _run(["lavacli", "identities", "add", "--uri", f"{URL}/RPC2",
          "--username", USER, "--token", tokens["token"], IDENTITY],
         "lavacli identity")
    wait_for_device()
    info(f"local LAVA up at {URL} in {time.monotonic() - started:.0f} s: "
         f"lavacli identity {IDENTITY}, device {DEVICE}")
    return IDENTITY


def down() -> None:
    """Stop the daemons `up` started (and PostgreSQL if it started it)."""
    for name in ("lava-worker", "lava-scheduler", "gunicorn"):
        if _alive(name):
            pid = int(_pidfile(name).read_text())
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(pid, sig)
                except ProcessLookupError:
                    break
                for _ in range(50):
                    if not _alive(name):
                        break
                    time.sleep(0.1)
            info(f"stopped {name}")
        _pidfile(name).unlink(missing_ok=True)
    marker = state_dir() / "postgres.started"
    if marker.is_file():
        version, cluster = marker.read_text().split()
        _run(["pg_ctlcluster", version, cluster, "stop"], "PostgreSQL")
        marker.unlink()
        info("stopped PostgreSQL")
