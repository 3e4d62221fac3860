"""Turn run folders into a report: report.txt, report.md, plots, data/.

Reads only what the runs wrote (via lab/analyse/results.py), so it can be run
again, anywhere the results folder was copied, without booting anything.
The analysis is lab/analyse/analysis.py, the text lab/report/text.py, the
figures lab/report/plots.py; this module writes them into the folder.
"""
import gzip
import shutil
import time
from pathlib import Path

from ..analyse import analysis, calibrate, replicate, results
from ..base import paths, store
from ..base.log import LabError, info
from . import (plots as report_plots, sweeps as report_sweeps,
               text as report_text, traces as report_traces)
from ..analyse.analysis import _median


# vectors that run less often than this in every cell of a scenario are
# left out of its table of handler runs
RATE_MIN_PER_S = 1.0


def softirq_rate_table(a: dict) -> list:
    """report.md's tables of each vector's handler runs per second, per
    scenario: the median boot, and the boots' range."""
    out = []
    for scen in a["scenarios"]:
        rows = [(v, a["cells"][f"{scen}/{v}"]["softirqs_per_s"])
                for v in a["variants"]
                if a["cells"].get(f"{scen}/{v}", {}).get("softirqs_per_s")]
        vecs = [v for v in results.VECTORS
                if any(max(r[v]) >= RATE_MIN_PER_S for _, r in rows)]
        if not rows or not vecs:
            continue
        out += [f"{scen}:", "", "| variant | boots | " +
                " | ".join(vecs) + " |", "|---|---|" + "---|" * len(vecs)]
        for var, r in rows:
            out.append(f"| {var} | {len(r[vecs[0]])} | " + " | ".join(
                f"{_median(r[v]):.0f} ({min(r[v]):.0f}-{max(r[v]):.0f})"
                for v in vecs) + " |")
        out.append("")
    return out


def markdown(text: str, images: list, command: str,
             trace_text: list = (), accounting: list = (),
             rates: list = (), lengths: list = (),
             net_rx_ends: list = (), napi_polls: list = ()) -> str:
    timelines = [i for i in images if i.startswith("timeline-")]
    md = ["# softirq-rt lab report", "",
          f"Made with `{command}`; the raw results are in `data/`.", "",
          "```", text.rstrip(), "```", ""]
    if trace_text:
        md += ["## Causes of the worst cases", "", "```",
               *trace_text, "```", ""]
    if accounting:
        md += ["## Where softirq work ran (traced boots)", "",
               "Share of one CPU each vector took over the trace phase, "
               "run inline (on interrupt exit or at local_bh_enable, on "
               "top of whatever task was current) or in ksoftirqd, and "
               "how often work was handed to ksoftirqd: its wake-ups per "
               "second; among them the early stops, a wake-up straight "
               "after a handler's exit on the same CPU (a time or restart "
               "limit, need_resched, or a variant's own break or "
               "deferral); and per vector, how often it was still pending "
               "at such a stop.  From the trace's softirq_raise/entry/exit "
               "and sched_waking events, mean over the traced boots.  The "
               "last column is the share of cyclictest's traced samples "
               "that ran on CPU0, where most scenarios raise their "
               "softirqs.", "",
               *accounting]
    if net_rx_ends:
        md += ["## How NET_RX runs ended (traced boots)", "",
               "Each NET_RX run of the trace phase by why it ended "
               "(lab/docs/traces.md): it drained its queues, or it "
               "raised NET_RX again itself with packets left, on the "
               "packet budget (netdev_budget, 300) where its NAPI polls "
               "took that many, else where a task woke on its CPU during "
               "the run (need_resched; a kernel that does not stop for "
               "it ran into its time limit here too), else on its time "
               "limit.  Counts over the cell's traced boots.", "",
               *net_rx_ends]
    if napi_polls:
        md += ["## Where NAPI polled (traced boots)", "",
               "Each napi_poll event of the trace phase: the share run in "
               "a napi/<dev>-* thread (threaded NAPI) rather than in "
               "NET_RX, and the share on each CPU.  Counts over the "
               "cell's traced boots; a table only where some variant "
               "polled in threads or on more than one CPU.", "",
               *napi_polls]
    if rates:
        md += ["## Softirq handler runs per vector (every boot)", "",
               "Runs of each vector's handler per guest second of the "
               "measurement, from /proc/softirqs before and after it: the "
               "median boot, and the range over the cell's boots.  "
               "ksoftirqd's CPU time over the same window is the cost "
               "metric ksoftirqd_cpu_percent.", "", *rates]
    if lengths:
        md += ["## How long softirq handlers ran (traced boots)", "",
               "Each run of a vector's handler in the trace phase, from "
               "softirq_entry to softirq_exit on its task (hard "
               "interrupts inside it, and on PREEMPT_RT preemption inside "
               "it, included); vectors whose longest run is under "
               f"{report_traces.HANDLER_MIN_US} us left out.  Where the "
               "test module is loaded its vector's runs include its "
               "fixed spin; elsewhere they are the kernel's own, from "
               "the emulated devices.", "", *lengths]
    curves = [i for i in images if i.startswith("overload-")]
    if curves:
        md += ["## Overload curves", "", *[f"![{i}]({i})" for i in curves],
               ""]
    md += ["## Tail latency per boot", "", "![p99 and max](tails.png)", ""]
    md += ["## Share of samples above a latency, per boot", ""]
    md += [f"![{i}]({i})" for i in images if i.startswith("survival-")]
    if "histograms.png" in images:
        md += ["", "## Latency histograms (OSADL's form: 1 us bins, boots "
               "pooled)", "", "![histograms](histograms.png)"]
    if timelines:
        md += ["", "## Worst cases, from traces", "",
               "Each variant's worst captured sample per scenario: one row "
               "per guest CPU, tasks below, softirqs and hard irqs above, "
               "the latency window shaded, time in ms from the expected "
               "wake-up. `data/trace-<scenario>-<variant>.json` holds that "
               "window for the Perfetto UI (ui.perfetto.dev); the whole "
               "trace (`trace.dat`, for KernelShark) stays in the run "
               "folder that `data/<variant>-<scenario>-boot1.json` "
               "names.", ""]
        md += [f"![{i}]({i})" for i in timelines]
    return "\n".join(md) + "\n"


def portable(data, root: Path):
    """`data` with no path of this host: run folders relative to the
    results folder, the cache as $LAB_CACHE, and an absolute results
    folder itself (in the command that made the report) as <results>."""
    prefixes = ((f"{root.resolve()}/", ""), (f"{root}/", ""),
                (str(paths.cache_dir()), "$LAB_CACHE"))
    if root.is_absolute():
        prefixes += ((str(root), "<results>"),)
    if isinstance(data, dict):
        return {k: portable(v, root) for k, v in data.items()}
    if isinstance(data, list):
        return [portable(v, root) for v in data]
    if isinstance(data, str):
        for prefix, short in prefixes:
            data = data.replace(prefix, short)
    return data


# what the writer makes in a report's folder, besides its figures (*.png)
# and its replicate-*.md tables
WRITTEN = {"data", "report.txt", "report.md"}


def write(root: Path, out: Path, descriptions: dict, command: str,
          variants=None, scenarios=None, busy=(), lead=None,
          tail=None, named_bases=None) -> Path:
    """`lead`: {scenario: the latency metric its rows lead with}, p99
    where not named; `tail`: {scenario: the metrics judged beside it};
    `named_bases`: {variant: base} compared instead of variant.conf's."""
    replaceable(out)
    runs = analysis.load(root, variants, scenarios)
    traces = report_traces.analyse(runs)
    a = analysis.analyse(runs, traces, busy=set(busy), lead=lead, tail=tail,
                         named_bases=named_bases)
    a["traces"] = traces
    with store.whole_folder(out) as new:
        _keep_authored(out, new)
        (new / "data").mkdir()
        # one summary per run, gzip'd: 360 runs of plain JSON are 6 MB, a
        # published report stays under 5 MB
        for r in runs:
            name = f"{r['variant']}-{r['scenario']}-boot{r['boot']}.json.gz"
            store.write_json_gz(new / "data" / name, portable(r, root))
        _keep_consoles(runs, a, new)
        _fill(runs, a, new, out, descriptions, portable(command, root), root)
    return out


def write_analysed(runs: list, a: dict, out: Path, descriptions: dict,
                   command: str, root: Path = None) -> Path:
    """The report of analysed runs whose summaries are in the reports it
    names (a pool): analysis.json, the replicate tables, report.txt,
    report.md and the figures, in place of `out` whole."""
    replaceable(out)
    with store.whole_folder(out) as new:
        _keep_authored(out, new)
        (new / "data").mkdir()
        _fill(runs, a, new, out, descriptions, command, root)
    return out


def _keep_consoles(runs: list, a: dict, new: Path) -> None:
    """Every failed boot's whole console, gzip'd in data/ (the reason
    keeps its first stall line and its last lines only), named in the
    analysis beside the failure."""
    for r, f in zip((r for r in runs if r["status"] != "ok"), a["failed"]):
        console = Path(r.get("run", "")) / "console.log"
        if r.get("run") and console.is_file():
            f["console"] = f"data/{r['variant']}-{r['scenario']}-boot" \
                f"{r['boot']}.console.log.gz"
            (new / f["console"]).write_bytes(
                gzip.compress(console.read_bytes(), mtime=0))


def _keep_authored(out: Path, new: Path) -> None:
    """What a report's folder holds beside the writer's output (its
    README, the author's account of it; boots set aside with their
    consoles; a reply, an attribution, a log) stays when the report is
    written again: only the writer's own files are replaced."""
    if not out.is_dir():
        return
    for entry in out.iterdir():
        if entry.name in WRITTEN or entry.suffix == ".png" or \
                entry.name.startswith("replicate-"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, new / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, new / entry.name)


def replaceable(out: Path, kind: str = "report",
                made: str = "data/analysis.json") -> None:
    """A report takes the place of its folder whole (store.whole_folder):
    refuse a folder that is not one of its kind (`made`, a file only that
    kind writes), which would go with it (an --out that names a folder of
    other things, a calibration's name on a day's report)."""
    if out.exists() and not (out.is_dir() and (
            not any(out.iterdir()) or (out / made).is_file())):
        raise LabError(f"{out}: not a {kind} folder (no {made}), and a "
                       f"{kind} replaces the folder it is written to: name "
                       f"a new folder, or an earlier {kind}'s")


def _fill(runs: list, a: dict, new: Path, out: Path, descriptions: dict,
          command: str, root: Path = None) -> None:
    """Write the report of analysed runs into `new`, the folder that is
    to become `out` (their summaries already in new/data, or, for a
    pool, in the reports it names).  `root`: the results folder the runs
    came from, whose paths analysis.json leaves out, and whose trace.dat
    files the worst cases' timelines are drawn from (a pool has none:
    its first report has them)."""
    a["sweeps"] = report_sweeps.analyse(runs)
    a["command"] = command
    a["calibration"] = calibrate.published(a["rule"])
    # read from `new`, named as `out`: the report it replaces is not an
    # earlier repeat of itself
    here = replicate.load(new, a)._replace(folder=out) \
        if out.resolve().parent == (paths.REPO / "reports").resolve() \
        else None
    repeats = _repeats(here) if here else []
    store.write_json(new / "data" / "analysis.json",
                     a if root is None else portable(a, root), compact=True)
    for other in repeats:
        name = other.folder.name
        store.write_text(new / f"replicate-{name}.md",
                         replicate.table(other, here))
        info(f"the same plan as {name}: {out / f'replicate-{name}.md'}")
    traces = a["traces"]
    text = report_text.text_report(runs, a, descriptions)
    store.write_text(new / "report.txt", text)
    drawn = [] if root is None else report_traces.files(
        traces, a["variants"], a["scenarios"], new)
    images = report_plots.plots(runs, a, new) + drawn + \
        report_sweeps.plots(a["sweeps"], a["variants"], new)
    store.write_text(new / "report.md", markdown(
        text, images, command, report_traces.text(
            traces, a["variants"], a["scenarios"]),
        report_traces.accounting_table(traces, a["variants"],
                                       a["scenarios"]),
        softirq_rate_table(a),
        report_traces.handler_table(traces, a["variants"], a["scenarios"],
                                    a["module_args"]),
        report_traces.net_rx_ends_table(traces, a["variants"],
                                        a["scenarios"]),
        report_traces.napi_polls_table(traces, a["variants"],
                                       a["scenarios"])))


def _repeats(here: "replicate.Loaded") -> list:
    """The earlier reports of the same plan (each read once), and in the
    new report's analysis the findings each does not share with it
    (`replication`), for the summary to name."""
    repeats = replicate.earlier_repeats(here)
    if repeats:
        here.an["replication"] = {
            "reports": [r.folder.name for r in repeats],
            "differ": replicate.unreplicated(here.an, repeats)}
    return repeats


def default_folder(name: str) -> Path:
    from ..base import paths
    return paths.REPO / "reports" / f"{time.strftime('%Y-%m-%d')}-{name}"
