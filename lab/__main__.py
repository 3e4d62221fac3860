"""Command line: python3 -m lab <command> (see `python3 -m lab -h`)."""
import signal
import sys

# Ctrl-C while the modules below load (half a second): no traceback.
# main() gives Python's own handler back, whose KeyboardInterrupt stops
# the guests.
signal.signal(signal.SIGINT, lambda *_: sys.exit("interrupted"))

try:
    import matplotlib  # noqa: F401  (the report's plots)
    import numpy  # noqa: F401
    import scipy  # noqa: F401
except ImportError as missing:
    # A python3 that is not Debian's (pyenv, a venv) lacks Debian's
    # numpy/scipy/matplotlib: one line instead of a traceback.
    sys.exit(f"error: {sys.executable} has no {missing.name}; run the lab "
             f"with Debian's interpreter (/usr/bin/python3 -m lab, as the "
             f"Makefile does) after `make deps`")

import argparse
import dataclasses
import os
import re
import shlex

from pathlib import Path

from .run import (accelerator, boot, health, matrix, qemu, runners,
                  scenario, settings)
from .build import kernel, guestbuild, rtlabuild
from . import fidelity
from .base import paths, stats, variants
from .report import publish, index as report_index
from .base.log import LabError, info


def cmd_build(args) -> int:
    # The test module too, while the shared tree holds each variant.
    chosen = variants.select(args.variants)
    kernel.build_all(chosen, force=args.force, then=guestbuild.module)
    # and what the guests run in and with, built once: the lab's QEMU
    # for each architecture among them
    for arch in {v.kernel_variant().arch for v in chosen}:
        accel = accelerator.tcg("build", arch=arch)
        if accel.emulator:
            qemu.qemu_binary(accel, arch)
    rtlabuild.ensure()
    return 0


def cmd_accel(args) -> int:
    first = kernel.build(variants.select(args.variants)[0])
    accel = accelerator.choose(first.image)
    print(accel.summary())
    return 0


def cmd_health(args) -> int:
    chosen = variants.select(args.variants)
    built = kernel.build_all(chosen)
    accel = accelerator.choose(built[chosen[0].name].image)
    info(f"accelerator: {accel.summary()}")
    failed = 0
    for i, v in enumerate(chosen, 1):
        b = built[v.name]
        info(f"boot {i}/{len(built)}: {b.variant}")
        run_dir = paths.BUILD_DIR / "runs" / "health" / b.variant
        record = boot.run_plan(b, health.PLAN, run_dir, accel,
                               timeout=args.timeout, cpus=args.cpus,
                               append=v.append, env=v.plan_env())
        problems = health.check(b, run_dir, record, args.cpus, v)
        print(health.line(b, record, problems))
        for p in problems:
            print("  " + p.replace("\n", "\n  "))
        failed += bool(problems)
    return 1 if failed else 0


def _matrix(args) -> tuple:
    """The variants and scenarios named, or the default matrix's
    (variant.conf and scenario `default`), bases first, wherever they
    were named: the others compare with them; and the bases --base
    names instead of variant.conf's."""
    chosen = sorted(variants.select(args.variants) if args.variants else
                    variants.default_matrix(),
                    key=lambda v: v.name != v.base)
    named = variants.named_bases(args.base, chosen) if args.base else {}
    names = {v.name for v in chosen}
    for v in chosen:
        if v.name not in named and v.base not in names:
            raise LabError(f"variant {v.name} is compared with {v.base} "
                           f"(its variant.conf base): add {v.base} to "
                           f"--variants")
    return chosen, scenario.select(args.scenarios), named


def _medium(args, chosen: list):
    """The guests' accelerator for --medium (None: the runner's
    choice), refused in one line where it cannot be honoured."""
    if not args.medium:
        return None
    if args.runner != "local":
        raise LabError(f"--medium {args.medium}: media run in the lab's "
                       f"own QEMU here (--runner local), not through "
                       f"{args.runner}")
    arch = chosen[0].kernel_variant().arch if chosen else None
    return settings.medium_accel(args.medium, arch)


def _results(args) -> Path:
    """--results, else the runner's and medium's own folder: runs of
    two media never share one."""
    return Path(args.results) if args.results else \
        matrix.results_root(args.runner, args.medium)


def cmd_run(args) -> int:
    chosen, scens, named = _matrix(args)
    guestbuild.check_background(scens)
    matrix.check_arches(chosen, scens)
    accel = _medium(args, chosen)
    root = _results(args)
    names, scen_names = [v.name for v in chosen], [s.name for s in scens]
    looks = () if args.boots else stats.LOOKS.boots

    def unsettled(results: Path) -> set:
        from .analyse import analysis
        _, _, lead, tail = _scenario_facts(scens)
        a = analysis.analyse(analysis.load(results, names, scen_names),
                             predicted={}, lead=lead, tail=tail,
                             named_bases=named)
        return analysis.unsettled(a)
    matrix.run(chosen, scens, args.boots or looks[0], root, accel=accel,
               runner=runners.module(args.runner).make(args), looks=looks,
               unsettled=unsettled)
    return _report(args, root, names, scens, named)


def cmd_ladder(args) -> int:
    """The matrix in each medium of --media, emulator first: each its own
    results folder and report, then the page that follows every verdict
    along them (lab/report/ladder.py)."""
    from .report import ladder
    if args.medium or args.results or args.out:
        raise LabError("ladder: each medium gets its own results folder "
                       "and report (build/results-<medium>, reports/<date>-"
                       "<name>-<medium>): give --media, not --medium, "
                       "--results or --out")
    media = variants.names_in(args.media, "medium")
    if len(media) < 2:
        raise LabError("ladder: --media names at least two media, the "
                       "emulator's first")
    for m in media:           # every medium refused before any build
        settings.medium_accel(m)
    reports = []
    for k, m in enumerate(media, 1):
        info(f"ladder: medium {k}/{len(media)} {m}")
        rung = argparse.Namespace(**{**vars(args), "medium": m,
                                     "name": f"{args.name}-{m}"})
        cmd_run(rung)
        reports.append((m, settings.select(m)[0].medium,
                        publish.default_folder(rung.name)))
    out = publish.default_folder(f"{args.name}-ladder")
    ladder.write(reports, out, _command(args, "media", "variants", "base",
                                        "scenarios", "boots", "jobs",
                                        "name"))
    if out.resolve().parent == report_index.REPORTS:
        report_index.write()
    info(f"ladder: {out}/README.md")
    return 0


def cmd_compare(args) -> int:
    # the same matrix as `run` with the same options: results of other
    # variants or scenarios in the folder stay out of the report
    chosen, scens, named = _matrix(args)
    _medium(args, chosen)
    root = _results(args)
    return _report(args, root, [v.name for v in chosen], scens, named)


def cmd_variant_add(args) -> int:
    from .build import series
    folder = series.add(args.name, args.from_, args.source)
    print(f"{folder}: {len(variants.load(folder).patches)} patch(es); "
          f"decide its options in {folder / 'config'}, then `make variants "
          f"VARIANTS={args.name}`")
    return 0


def cmd_mail(args) -> int:
    from .report import mail
    print(mail.write(mail.find_report(args.name), args.variant))
    return 0


def cmd_lava_local(args) -> int:
    from .run.runners.lava import local
    if args.action == "up":
        print(local.up())
    else:
        local.down()
    return 0


def cmd_qemu_deb(args) -> int:
    from .build import qemudeb
    print(qemudeb.install() if args.install else qemudeb.build())
    return 0


def _command(args, *options) -> str:
    """The command line that made a report, with the options given."""
    given = [(k, getattr(args, k, "")) for k in options]
    return " ".join(["python3 -m lab", args.command] +
                    [f"--{k} {v}" for k, v in given if v])


def cmd_fidelity(args) -> int:
    chosen = settings.select(args.settings)
    vs = variants.select(args.variants or "baseline")
    # Latency only: a trace phase would double each run.
    scens = [dataclasses.replace(s, trace=0)
             for s in scenario.select(args.scenarios or "idle")]
    root = Path(args.results) if args.results else fidelity.results_root()
    jobs = args.jobs
    if not args.table_only:
        fidelity.run(chosen, vs, scens, args.boots, root, jobs)
    out = Path(args.out) if args.out else publish.default_folder(args.name)
    command = _command(args, "settings", "variants", "scenarios", "boots") \
        + (f" --jobs {','.join(map(str, jobs))}" if jobs != (1,) else "")
    asked = {(s.name, v.name) for s in scens for v in vs}
    print(fidelity.write(root, chosen, out, command, jobs, asked), end="")
    info(f"table: {out}/fidelity.md")
    return 0


def cmd_answer(args) -> int:
    from .report import answer
    answer.write()
    info(f"{answer.README}: the answer table from {answer.CONF}; "
         f"{answer.picture()}")
    return 0


def _report_of(name: str, tmp: Path) -> str:
    """A report folder for `name`: a report itself, or the report of a
    results folder (build/results...), written into tmp."""
    from .analyse import replicate
    try:
        return str(replicate.report_folder(name))
    except LabError:
        root = Path(name)
        if not any(root.glob("*/*/boot-*/run.json")):
            raise
    out = tmp / root.resolve().name
    info(f"{root}: a results folder; its report first, into {out}")
    descriptions, busy, lead, tail = _scenario_facts()
    publish.write(root, out, descriptions, f"python3 -m lab compare "
                 f"--results {root}", busy=busy, lead=lead, tail=tail)
    return str(out)


def _emit(text: str, out: str) -> int:
    """Print a command's text, and write it to `out` if given."""
    if out:
        Path(out).write_text(text)
        info(f"written to {out}")
    print(text, end="")
    return 0


def cmd_replicate(args) -> int:
    import tempfile
    from .analyse import replicate
    with tempfile.TemporaryDirectory() as tmp:
        a, b = (_report_of(n, Path(tmp) / k)
                for n, k in ((args.a, "a"), (args.b, "b")))
        if Path(a).resolve() == Path(b).resolve() or \
                Path(args.a).resolve() == Path(args.b).resolve():
            raise LabError(f"replicate: {args.a} and {args.b} are one "
                           f"report; a repeat is another run of its plan")
        text = replicate.text(a, b, (args.a, args.b))
    return _emit(text, args.out)


def _published_analyses(names: list) -> tuple:
    """(report folders, their analyses) for the resampling commands, each
    with the derived per-boot metrics and, for a report made before its
    scenarios declared tail metrics, today's declarations."""
    from .analyse import analysis, replicate
    folders = [replicate.report_folder(n) for n in names]
    analyses = [analysis.fill_derived(replicate.read_data(
        f / "data" / "analysis.json")) for f in folders]
    tail = _scenario_facts()[3]
    for an in analyses:
        an.setdefault("tail", {s: tail[s] for s in an["scenarios"]
                               if s in tail})
    return folders, analyses


def cmd_power(args) -> int:
    from .analyse import power
    _, analyses = _published_analyses(args.reports)
    cells = set(filter(None, args.cells.split(",")))
    rows = power.disagreement(analyses, args.boots, args.trials, args.seed,
                              cells)
    return _emit(power.text(rows, args.reports, args.boots, args.trials,
                            args.seed), args.out)


def cmd_calibrate(args) -> int:
    from .analyse import calibrate
    from .base import store
    folders, analyses = _published_analyses(args.reports)
    result = calibrate.run(analyses, [f.name for f in folders], args.trials,
                           args.seed)
    command = " ".join(["python3 -m lab calibrate", *args.reports,
                        "--trials", str(args.trials), "--seed",
                        str(args.seed)] + (["--name", args.name]
                                           if args.name else []))
    text = calibrate.text(result, command)
    if args.name:
        out = publish.default_folder(args.name)
        publish.replaceable(out, "calibration", "data/calibration.json")
        with store.whole_folder(out) as new:    # never a mix of two
            (new / "data").mkdir()
            store.write_json(new / "data" / "calibration.json", result)
            (new / "README.md").write_text(text)
        info(f"written to {out}")
    print(text, end="")
    return 0


def cmd_pool(args) -> int:
    from .analyse import pool, replicate
    folders = [replicate.report_folder(n) for n in args.reports]
    alike = tuple(k.strip() for k in args.alike.split(",") if k.strip())
    if alike and not args.because.strip():
        raise LabError("pool: --alike needs --because: why those "
                       "differences do not change the measurement")
    runs, analyses = pool.load(folders, alike)
    descriptions, busy, lead, tail = _scenario_facts()
    a = pool.analyse(runs, analyses, busy, lead, tail,
                     {"keys": list(alike), "because": args.because.strip()}
                     if alike else None, folders)
    out = publish.default_folder(args.name)
    command = shlex.join(["python3", "-m", "lab", "pool", *args.reports,
                          "--name", args.name] +
                         (["--alike", ",".join(alike), "--because",
                           args.because.strip()] if alike else []))
    publish.write_analysed(runs, a, out, descriptions, command)
    return _published(out)


def cmd_trace_length(args) -> int:
    from .analyse import tracelength
    root = Path(args.results)
    runs = tracelength.traced_runs(root)
    if not runs:
        raise LabError(f"{args.results}: no run with a trace phase "
                       f"(trace.dat) in it")
    rows = []
    for i, run_dir in enumerate(runs, 1):
        name = str(run_dir.relative_to(root))
        info(f"trace-length: {name} ({i} of {len(runs)})")
        rows.append(tracelength.compare_run(run_dir, args.seconds, name))
    text = tracelength.text(rows, args.seconds)
    return _emit(text, args.out)


def cmd_attribute(args) -> int:
    from . import attribute
    # one variant's patches, prefix by prefix: an empty name would select
    # every variant and attribute the first, a list all but one
    named = variants.names_in(args.variant, "variant")
    if len(named) != 1:
        raise LabError(f"attribute: name one variant (VARIANT=<name>), "
                       f"not {args.variant!r}")
    variant = variants.select(named[0])[0]
    out = Path(args.out) if args.out else publish.default_folder(
        args.name or f"attribute-{variant.name}")
    descriptions, busy, lead, tail = _scenario_facts()
    command = _command(args, "scenarios", "boots", "jobs",
                       "out" if args.out else "name").replace(
        "lab attribute", f"lab attribute {variant.name}", 1)
    text = attribute.run(variant, scenario.select(args.scenarios),
                         args.boots, runners.module("local").make(args),
                         out, command, descriptions, busy, lead, tail)
    if out.resolve().parent == report_index.REPORTS:
        report_index.write()
    print(text, end="")
    info(f"report: {out}/attribution.md, {out}/report.md")
    return 0


def cmd_reports_index(args) -> int:
    info(f"{report_index.write()}")
    return 0


def _scenario_facts(chosen: list = ()) -> tuple:
    """(descriptions, both-busy scenarios, lead metrics, tail metrics)
    of every scenario: what a report needs from the scenario files.  The
    `chosen` ones are taken as given (a scenario named by its path has
    no file under common/scenarios/, or another one of its name)."""
    every = list({s.name: s for s in [*scenario.discover(), *chosen]}
                 .values())
    return ({s.name: s.description for s in every},
            {s.name for s in every if s.both_busy},
            {s.name: s.lead for s in every},
            {s.name: list(s.tail) for s in every if s.tail})


def _report(args, root, names, scens, named) -> int:
    out = Path(args.out) if args.out else publish.default_folder(args.name)
    descriptions, busy, lead, tail = _scenario_facts(scens)
    command = _command(args, "variants", "base", "scenarios", "boots",
                       "jobs", "medium", "results",
                       "out" if args.out else "name")
    publish.write(root, out, descriptions, command, names,
                  [s.name for s in scens], busy, lead, tail, named)
    return _published(out)


def _published(out: Path) -> int:
    """A report written: the index of reports/ made again if it is one
    of them, and its text shown."""
    if out.resolve().parent == report_index.REPORTS:
        report_index.write()
    print((out / "report.txt").read_text(), end="")
    info(f"report: {out}/report.txt, {out}/report.md")
    return 0


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m lab",
                                description="softirq-rt lab")
    sub = p.add_subparsers(dest="command", required=True)

    def with_variants(sp):
        sp.add_argument("--variants", default="",
                        help="comma-separated names, or all (default: "
                        "all; for run, the default matrix)")
        return sp

    b = with_variants(sub.add_parser(
        "build", help="build variant kernels (cached by content)"))
    b.add_argument("--force", action="store_true",
                   help="rebuild even if the cache is up to date")
    b.set_defaults(func=cmd_build)

    a = with_variants(sub.add_parser(
        "accel", help="say which accelerator guests will use, and why"))
    a.set_defaults(func=cmd_accel)

    h = with_variants(sub.add_parser(
        "health", help="boot each variant and prove which kernel it is"))
    h.add_argument("--cpus", type=int, default=2)
    h.add_argument("--timeout", type=float, default=120,
                   help="watchdog: seconds before a guest counts as hung")
    h.set_defaults(func=cmd_health)

    def with_matrix(sp):
        with_variants(sp)
        sp.add_argument("--scenarios", default="",
                        help="comma-separated names, or all (default: the "
                        "default matrix's)")
        sp.add_argument("--results", default="",
                        help="results folder (default: build/results, "
                        "build/results-lava for --runner lava)")
        sp.add_argument("--name", default="lab", type=report_name,
                        help="report folder: reports/<date>-<name>")
        sp.add_argument("--out", default="",
                        help="report folder, instead of reports/<date>-<name>")
        return sp

    def with_comparison(sp):
        """The options of the commands that write a comparison (run,
        compare): what boots the guests, and which bases to compare with."""
        sp.add_argument("--base", default="",
                        help="VARIANT=BASE,...: compare VARIANT with BASE "
                        "(a variant of its source generation) instead of "
                        "its variant.conf base, e.g. "
                        "ktimers-rt=preempt-rt-6.12")
        sp.add_argument("--medium", default="",
                        help="the guests' virtual time, a TCG setting such "
                        "as parallel-8ns (lab/docs/medium.md); its runs go "
                        "to build/results-<medium>")
        sp.add_argument("--runner", choices=runners.names(),
                        default="local", help="what boots the guests: " +
                        "; ".join(f"{n}: {runners.module(n).HELP}"
                                  for n in runners.names()))

    r = with_matrix(sub.add_parser(
        "run", help="run the matrix (resumable), then write the report"))
    r.add_argument("--boots", type=positive, default=0,
                   help="boots per cell, a fixed number (a scenario's "
                   "`boots` asks more); without it a group-sequential "
                   "plan: %d boots a cell, %d where the first look leaves "
                   "a comparison undecided (lab/docs/statistics.md)"
                   % stats.LOOKS.boots)
    r.add_argument("--jobs", type=positive, default=os.cpu_count() or 1,
                   help="guests run at once (default: the host's cores, "
                   "%(default)s)")
    with_comparison(r)
    for n in runners.names():
        if hasattr(runners.module(n), "add_arguments"):
            runners.module(n).add_arguments(r.add_argument_group(
                f"{n} (with --runner {n})"))
    r.set_defaults(func=cmd_run)

    ld = with_matrix(sub.add_parser(
        "ladder", help="the matrix in several media, and each verdict "
        "followed along them (lab/docs/medium.md)"))
    ld.add_argument("--media", required=True,
                    help="comma-separated media, emulator first, e.g. "
                    "icount-3-slice20,parallel-8ns,parallel-0.5ns")
    ld.add_argument("--boots", type=positive, default=0,
                    help="boots per cell (default: as run)")
    ld.add_argument("--jobs", type=positive, default=os.cpu_count() or 1)
    with_comparison(ld)
    ld.set_defaults(func=cmd_ladder)

    at = sub.add_parser(
        "attribute", help="which patch of a variant's series brings each "
        "effect: every prefix of the series run against its base",
        description="Build every prefix of VARIANT's series (patch 1, "
        "1-2, ..., all) in the shared tree, run the scenarios on each and "
        "on the base into build/attribute/VARIANT/results (resumable), "
        "and write the report with attribution.md.")
    at.add_argument("variant")
    at.add_argument("--scenarios", default="",
                    help="comma-separated names (default: the default "
                    "matrix's)")
    at.add_argument("--boots", type=positive, default=stats.MIN_BOOTS)
    at.add_argument("--jobs", type=positive, default=os.cpu_count() or 1)
    at.add_argument("--name", default="", type=report_name,
                    help="report folder: reports/<date>-<name> (default: "
                    "attribute-VARIANT)")
    at.add_argument("--out", default="",
                    help="report folder, instead of reports/<date>-<name>")
    at.set_defaults(func=cmd_attribute)

    c = with_matrix(sub.add_parser(
        "compare", help="write the report from existing results only"))
    with_comparison(c)
    c.set_defaults(func=cmd_compare)
    f = with_matrix(sub.add_parser(
        "fidelity", help="measure the noise floor under emulation settings",
        description="Run scenarios (default: idle) of variants (default: "
        "baseline) under each emulation setting, without trace phases; "
        "results in build/fidelity/<setting>/, table in "
        "reports/<date>-fidelity/."))
    f.add_argument("--settings", default="",
                   help="comma-separated names (default: all): " +
                   ", ".join(s.name for s in settings.SETTINGS))
    f.add_argument("--boots", type=positive, default=5)
    f.add_argument("--jobs", default="1", type=positive_list,
                   help="guests at once, or a list such as 1,2 to "
                   "measure whether running guests side by side changes "
                   "the results")
    f.add_argument("--table-only", action="store_true",
                   help="write the table from existing runs only")
    f.set_defaults(func=cmd_fidelity, name="fidelity")

    va = sub.add_parser(
        "variant", help="add a variant from a posted series",
        description="Write variants/NAME/ from a series: an mbox, a "
        "folder of patch files, or a Message-ID (fetched with b4).  The "
        "series must apply to the packaged source; nothing is written "
        "otherwise.")
    va.add_argument("action", choices=("add",))
    va.add_argument("name")
    va.add_argument("--from", dest="from_", required=True,
                    metavar="SERIES", help="mbox, folder or Message-ID")
    va.add_argument("--source", default=paths.GENERATION,
                    help="source generation (default %(default)s)")
    va.set_defaults(func=cmd_variant_add)

    ml = sub.add_parser(
        "mail", help="write a report as a reply to the list (reply.eml)")
    ml.add_argument("--name", required=True,
                    help="report: reports/<date>-<name> (the newest)")
    ml.add_argument("--variant", default="",
                    help="the variant whose series to answer")
    ml.set_defaults(func=cmd_mail)

    an = sub.add_parser(
        "answer", help="write README.md's answer table from the reports",
        description="Rewrite the table between README.md's answer markers "
        "from the reports that reports/answer.conf names.")
    an.set_defaults(func=cmd_answer)
    rp = sub.add_parser(
        "replicate", help="compare two reports: how made, which verdicts "
        "agree", description="Say what differs in how two reports were "
        "made (plan, scenarios, kernels, initramfs, QEMU, setting, guest "
        "size; lab commit and host CPU as notes), whether they are a "
        "repeat, and which of the comparisons both print agree.  A "
        "results folder is first made into a report.")
    rp.add_argument("a", help="report folder, its name under reports/, or "
                    "a results folder (build/results...)")
    rp.add_argument("b", help="the other report or results folder")
    rp.add_argument("--out", default="", help="also write the text here")
    rp.set_defaults(func=cmd_replicate)
    pw = sub.add_parser(
        "power", help="how often two runs would disagree, at n boots a "
        "cell", description="Resample the reports' boots into simulated "
        "runs of n boots a cell and say, per printed comparison, how "
        "often it is a finding and how often two runs disagree on it "
        "(lab/analyse/power.py).")
    pw.add_argument("reports", nargs="+", help="report folders or their "
                    "names under reports/: their boots of a cell pooled")
    pw.add_argument("--boots", type=positive_list, default=(5, 10, 15),
        help="boot counts, comma-separated (default 5,10,15)")
    pw.add_argument("--trials", type=positive, default=200)
    pw.add_argument("--seed", type=int, default=1)
    pw.add_argument("--cells", default="", help="only these cells "
                    "(scenario/variant, comma-separated)")
    pw.add_argument("--out", default="", help="also write the text here")
    pw.set_defaults(func=cmd_power)
    ca = sub.add_parser(
        "calibrate", help="the verdict rules' error rates: false "
        "findings and sensitivity", description="Score every rule of "
        "lab/base/stats.py on false findings (boots relabelled within "
        "their run; the A/A control) and on sensitivity (known effects "
        "injected into resampled boots; the known-effect control) "
        "(lab/analyse/calibrate.py).")
    ca.add_argument("reports", nargs="+", help="report folders or their "
                    "names under reports/")
    ca.add_argument("--trials", type=positive, default=100)
    ca.add_argument("--seed", type=int, default=1)
    ca.add_argument("--name", default="", type=report_name,
                    help="also write "
                    "reports/<date>-NAME/ (README.md, data/calibration.json)")
    ca.set_defaults(func=cmd_calibrate)
    po = sub.add_parser(
        "pool", help="repeat reports of one plan as one report: their "
        "boots together", description="Read the reports' data/, refuse "
        "unless each repeats the first (as replicate decides), number the "
        "boots on (the second report's boot 1 follows the first's last) "
        "and write one report of them all into reports/<date>-NAME.  The "
        "runs stay in the reports named; data/analysis.json says which "
        "boot came from where (`pooled`).")
    po.add_argument("reports", nargs="+", help="report folders or their "
                    "names under reports/, the first one's traces used")
    po.add_argument("--name", required=True, type=report_name,
                    help="the report's name")
    po.add_argument("--alike", default="", help="differences in how the "
                    "reports were made that do not change the measurement "
                    "(comma-separated: plan script, initramfs, ...); needs "
                    "--because")
    po.add_argument("--because", default="", help="why they do not: the "
                    "report prints it")
    po.set_defaults(func=cmd_pool)
    tl = sub.add_parser(
        "trace-length", help="would shorter trace phases explain the "
        "same worst wake-ups?", description="Explain every traced run of "
        "a results folder twice, whole and cut to its first SECONDS, and "
        "compare the causes (lab/analyse/tracelength.py).")
    tl.add_argument("--results", required=True, help="a results folder")
    tl.add_argument("--seconds", type=float, default=5.0)
    tl.add_argument("--out", default="", help="also write the text here")
    tl.set_defaults(func=cmd_trace_length)
    ri = sub.add_parser(
        "reports-index", help="write reports/README.md, one line a report",
        description="List every report folder with its title, runs and "
        "the status reports/status.conf declares.")
    ri.set_defaults(func=cmd_reports_index)

    ll = sub.add_parser(
        "lava-local", help="start or stop a LAVA instance on this machine",
        description="Bring up LAVA from Debian's packages (PostgreSQL, "
        "server, scheduler, one worker with one qemu device) and print "
        "the lavacli identity for it; or stop what `up` started.")
    ll.add_argument("action", choices=("up", "down"))
    ll.set_defaults(func=cmd_lava_local)
    qd = sub.add_parser(
        "qemu-deb", help="the lab's QEMU as a Debian package",
        description="Debian's qemu-system-x86 with the lab's QEMU build "
        "in it, version <Debian's>+softirqlab.<build>, into "
        "the cache (lab/build/qemudeb.py): dpkg -i it on a LAVA "
        "worker.")
    qd.add_argument("--install", action="store_true",
                    help="also install it here")
    qd.set_defaults(func=cmd_qemu_deb)
    return p.parse_args(argv)


REPORT_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{0,79}")


def positive(text: str) -> int:
    """argparse type: a whole number of at least 1, in ASCII digits
    (int() takes others: an Arabic-Indic three was 3)."""
    n = int(text) if text.isascii() and text.isdigit() else 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number "
                                         f"of at least 1")
    return n


def report_name(text: str) -> str:
    """argparse type: a report's name, reports/<date>-<name>: one folder
    name the reports' index lists ("" where the command has a default)."""
    if text and not REPORT_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text[:100]!r} is not a report name: it names the folder "
            f"reports/<date>-<name>, in lowercase letters, digits, '.' and "
            f"'-', starting with a letter or digit, at most 80 characters")
    return text


def positive_list(text: str) -> tuple:
    """argparse type: comma-separated whole numbers of at least 1."""
    return tuple(positive(n) for n in text.split(","))


def _stop(signum, frame):
    # SIGTERM (a killed `make lab`, a CI timeout) ends the lab as Ctrl-C
    # does: the guest is killed and finished runs stay as they are.
    raise KeyboardInterrupt


def main(argv=None) -> int:
    # run from `make lab NAME=...`, the lab's own makes (kernels, the
    # module, rtla) would take the outer make's command-line variables
    # from MAKEFLAGS as overrides of theirs
    for k in ("MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL"):
        os.environ.pop(k, None)
    args = parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _stop)
    try:
        return args.func(args)
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except PermissionError as e:
        # a cache or results folder the user cannot write (LAB_CACHE,
        # LAB_BUILD_DIR): say which, not where in the lab it was found
        print(f"error: {e.filename or 'a file'}: {e.strerror}; if it is "
              f"in the lab's cache or results, set LAB_CACHE (kernels, "
              f"images) or LAB_BUILD_DIR (runs) to a folder you can "
              f"write", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        # a full or read-only disk, a results or build folder below a
        # file: what was already written stays (reports are put in
        # place whole, runs finish one by one)
        print(f"error: {e.filename or 'a file'}: {e.strerror}; nothing "
              f"already written was lost: mend it and run the same "
              f"command again", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
