"""The matrix's runs as LAVA jobs: submit, follow, collect.

Every run not yet finished becomes one job (jobs.py), submitted
at once so a LAVA lab with several devices runs them side by side.  The
run folder's run.json says "running" with the job's id as soon as the
job exists, so a stopped lab (Ctrl-C, a lost connection) collects the
same jobs when run again instead of submitting them twice; jobs go on
on the server meanwhile.  A finished job's log becomes the run folder a
local run writes (lab/run/runners/lava/collect.py); a job that failed or was
canceled is a failed run with LAVA's reason, and the matrix goes on.
"""
import socket
import time
import urllib.parse
from datetime import datetime
from pathlib import Path

from ... import accelerator, qemu, runfolder
from ....build import qemubuild, qemudeb
from ....base import store
from ....base.log import LabError, info
from . import client, collect, jobs

POLL_S = 10
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", socket.gethostname())
ACTIVE = ("Submitted", "Scheduling", "Scheduled", "Running", "Canceling")


class Lava:
    """The runner: where jobs go and how they are made (python3 -m lab
    run --runner lava --lava-*)."""
    name = "lava"

    def __init__(self, uri="", identity="default", template="qemu",
                 device_type="x86", artifacts="", artifacts_url="",
                 qemu="auto"):
        self.server = client.Server(uri, identity or "default")
        self.template = jobs.template_path(template)
        self.device_type = device_type
        self.artifacts = jobs.Artifacts.at(artifacts, artifacts_url)
        self.artifacts_url_given = bool(artifacts_url)
        self.qemu = qemu

    def is_local(self) -> bool:
        host = urllib.parse.urlsplit(self.server.url).hostname or ""
        return host in LOCAL_HOSTS

    def workers_have_lab_qemu(self) -> bool:
        """Whether the workers run the lab's QEMU package: as told, or for
        a server on this machine, what is installed here."""
        if self.qemu != "auto":
            return self.qemu == "lab"
        return self.is_local() and bool(
            qemudeb.build_of(qemudeb.installed_version()))

    def run(self, todo: list, built: dict, initrds: dict, accel,
            root: Path) -> None:
        fed = sorted({c.scenario.name for c in todo
                      if c.scenario.nic is not None})
        if fed:
            raise LabError(f"scenario {', '.join(fed)} needs a NIC fed by "
                           f"this host (nic = ..., lab/run/nicload.py), which a "
                           f"LAVA job cannot have: run it with RUNNER=local")
        other = sorted(name for name, b in built.items()
                       if b.arch != "x86_64")
        if other:
            raise LabError(f"variant {other[0]} is an {built[other[0]].arch} "
                           f"guest; the LAVA jobs boot x86-64 guests only: "
                           f"run it with RUNNER=local")
        run_jobs(todo, built, initrds, accel, root, self)

    def check_reachable(self) -> None:
        """file:// URLs only work for a worker on this machine: a remote
        server needs the artifacts published (lab/docs/lava.md)."""
        if not self.artifacts_url_given and not self.is_local():
            raise LabError(f"LAVA server {self.server.url} is not on this "
                           f"machine, so its workers cannot read the job "
                           f"files at {self.artifacts.url}: publish "
                           f"{self.artifacts.folder} over HTTP and give its "
                           f"URL (LAVA_ARTIFACTS_URL, --lava-artifacts-url)")

    def accel(self, kernel=None) -> qemu.Accel:
        """How the jobs' guests run: the lab's TCG setting in LAVA's qemu
        type (KVM on a worker cannot be probed from here), in Debian's
        best setting where the workers have only Debian's QEMU; else a
        real machine."""
        del kernel
        if jobs.is_qemu(self.template):
            lab = self.workers_have_lab_qemu()
            chosen = accelerator.tcg(
                "LAVA qemu jobs: the lab's TCG setting, workers with " +
                ("the lab's QEMU package" if lab else "Debian's QEMU"),
                debian_qemu=not lab)
            if lab:
                self._check_package(chosen)
            return chosen
        return qemu.Accel("none", f"real machine: LAVA device type "
                          f"{self.device_type}, template "
                          f"{self.template.name}")

    def _check_package(self, chosen: qemu.Accel) -> None:
        """Refuse before submitting a setting the workers' package cannot
        run, which collection would only find after every job ran: the
        package replaces Debian's QEMU and holds the lab's full build."""
        want = chosen.emulator.get("build", "")
        full = qemubuild.provenance()["build"]
        package = qemudeb.build_of(qemudeb.installed_version()) \
            if self.is_local() else full
        if want == package:
            return
        if not want:
            raise LabError(f"setting {chosen.setting} measures Debian's QEMU, "
                           f"but the LAVA workers have the lab's package, "
                           f"which replaces it: unset LAB_TCG_SETTING, or "
                           f"run this setting with RUNNER=local")
        if want != full:
            raise LabError(f"setting {chosen.setting} runs a build of the "
                           f"lab's QEMU with fewer of its patches ({want}), "
                           f"which no package holds: run this setting "
                           f"with RUNNER=local")
        has = f"build {package}" if package else "Debian's QEMU"
        raise LabError(f"setting {chosen.setting} needs the lab's QEMU "
                       f"build {want}, this machine's LAVA worker has "
                       f"{has}: `make lava-local` installs the current "
                       f"package")


def _lava_seconds(job: dict, start: str, end: str) -> float:
    try:
        t0, t1 = (datetime.strptime(job[k], "%Y%m%dT%H:%M:%S")
                  for k in (start, end))
    except (KeyError, TypeError, ValueError):
        return 0.0
    return (t1 - t0).total_seconds()


def submit(cell, built, initrd: Path, accel, root: Path,
           opts: Lava) -> int:
    run_dir = cell.folder(root)
    # a redone run: nothing of the last try may mix with the new results
    for stale in run_dir.glob("*") if run_dir.is_dir() else ():
        stale.unlink()
    _, own = jobs.definition(cell, built, initrd, accel, opts.artifacts,
                             opts.template, run_dir, opts.device_type)
    job = opts.server.submit(run_dir / "job.yaml")
    machine = {"command": "", "accel": accel.as_dict(),
               "qemu_version": "", "host_cpu": "LAVA worker",
               "host_boot_id": ""}
    record = runfolder.provenance(built, runfolder.PLAN, cell.plan_env(),
                                  cell.scenario.cpus, machine,
                                  runfolder.cell_context(cell), "lava",
                                  cell.scenario.memory)
    record["lava"] = {"server": opts.server.url, "job": job,
                      "url": opts.server.job_url(job),
                      "template": opts.template.name, "initrd": own}
    store.write_json(run_dir / "run.json", record)
    return job


def pending_job(run_dir: Path, opts: Lava):
    """The job of a run submitted to this server and not collected yet."""
    try:
        record = store.read_json(run_dir / "run.json")
    except (OSError, ValueError):
        return None
    lava = record.get("lava", {})
    if record.get("status") == "running" and \
            lava.get("server") == opts.server.url:
        return lava.get("job")
    return None


def collect_job(run_dir: Path, job: dict, opts: Lava) -> dict:
    """Turn a finished job into the run's files and final run.json."""
    record = store.read_json(run_dir / "run.json")
    try:
        log = opts.server.log(job["id"])
    except LabError:
        if job["health"] == "Complete":
            raise
        log = []        # a job canceled before it started has none
    console, problem = collect.into_run_folder(log, run_dir)
    record["qemu"].update(collect.qemu_facts(log))
    tail = "\n".join(console.splitlines()[-15:])
    tail = f"; last console lines:\n{tail}" if tail.strip() else ""
    failed = collect.failure(job, log) + tail \
        if job["health"] != "Complete" else \
        collect.wrong_qemu(record["qemu"], job.get("device"))
    reason = runfolder.verdict(
        console, run_dir, failed,
        problem or "the guest's results never reached the console" + tail)
    record["lava"].update(
        device=job.get("device"), health=job["health"],
        submit_time=job.get("submit_time"),
        start_time=job.get("start_time"), end_time=job.get("end_time"),
        queued_s=_lava_seconds(job, "submit_time", "start_time"),
        test_cases=collect.test_cases(opts.server.results(job["id"])
                                      if log else []))
    # the job's own initramfs (37 MB) is no longer needed; the kernel
    # and scratch disks are shared by other jobs and stay
    if record["lava"].get("initrd"):
        (opts.artifacts.folder / record["lava"]["initrd"]).unlink(
            missing_ok=True)
    return runfolder.finish(record, run_dir, reason,
                       _lava_seconds(job, "start_time", "end_time"))


def run_jobs(todo: list, built: dict, initrds: dict, accel, root: Path,
             opts: Lava) -> None:
    """Run `todo` (matrix cells) as LAVA jobs, wait for all, collect."""
    opts.check_reachable()
    info(f"LAVA server: {opts.server.url} (version "
         f"{opts.server.check()}), jobs from {opts.template}")
    waiting = {}         # job id -> cell
    for c in todo:
        job = pending_job(c.folder(root), opts)
        if job is not None:
            waiting[job] = c
    if waiting:
        info(f"{len(waiting)} jobs submitted before; following them again")
    fresh = [c for c in todo if c not in waiting.values()]
    try:
        for i, c in enumerate(fresh, 1):
            runfolder.check_space(root, c.scenario)
            job = submit(c, built[c.variant.name], initrds[c.variant.name],
                         accel, root, opts)
            info(f"submitted {i}/{len(fresh)}: {c.variant.name} "
                 f"{c.scenario.name} boot {c.boot}: "
                 f"{opts.server.job_url(job)}")
            waiting[job] = c
        follow(waiting, root, opts)
    except KeyboardInterrupt:
        info(f"stopped; {len(waiting)} jobs go on on the LAVA server: "
             f"run again to collect them")
        raise
    except LabError as e:
        raise LabError(f"{e}; {len(waiting)} jobs not collected yet: run "
                       f"again to collect them") from None
    except OSError as e:
        raise runfolder.disk_full(
            e, f"collecting LAVA jobs into {root}",
            f"{len(waiting)} jobs not collected yet") from None


def follow(waiting: dict, root: Path, opts: Lava) -> None:
    """Wait for the jobs in `waiting` (job id -> cell), collecting each
    as it finishes and then taking it out of `waiting`."""
    total, done, failed, last = len(waiting), 0, 0, ""
    while waiting:
        states = {}
        for job_id in list(waiting):
            job = opts.server.show(job_id)
            states[job_id] = job["state"]
            if job["state"] in ACTIVE:
                continue
            c = waiting[job_id]
            record = collect_job(c.folder(root), job, opts)
            del waiting[job_id]     # only now: a stop above re-collects it
            done += 1
            if record["status"] != "ok":
                failed += 1
                info(f"  failed: {c.variant.name} {c.scenario.name} "
                     f"boot {c.boot}: {record['reason'].splitlines()[0]}")
        running = sum(s == "Running" for s in states.values())
        queued = sum(s in ACTIVE for s in states.values()) - running
        line = (f"LAVA jobs: {done}/{total} done ({failed} failed), "
                f"{running} running, {queued} queued")
        if line != last:
            info(line)
            last = line
        if waiting:
            time.sleep(POLL_S)
