"""The fidelity study: the same cells under several emulation settings.

For each setting (lab/run/settings.py) the matrix runs into its own folder,
<results>/<setting>/<variant>/<scenario>/boot-k (resumable like the
lab's matrix), and one table compares the settings: latency quantiles
with bootstrap intervals over boots, how far repeat boots spread (the
determinism question), the share of samples over 1 ms, the probe's
placement and how long a run took in wall-clock time.

With --jobs 1,2 each setting also runs with two guests at once (into
<results>/<setting>-jobs2/), and the table says for each cell whether
the per-boot p99s differ between one guest and two at a time, by the
lab's own verdict rule (lab/base/stats.py): `make lab JOBS=2` is only
trusted for cells where they do not.
"""
import statistics
import time
from collections import defaultdict
from pathlib import Path

from .analyse import analysis, results
from .build import kernel, qemubuild
from .run import matrix, qemu
from .base import metrics, paths, stats, store
from .base.log import info, warn
from .run.runners import local


def results_root() -> Path:
    return paths.BUILD_DIR / "fidelity"


def folder_name(setting: str, jobs: int) -> str:
    return setting if jobs == 1 else f"{setting}-jobs{jobs}"


def run(settings: list, variants: list, scenarios: list, boots: int,
        root: Path, jobs: tuple = (1,)) -> None:
    for i, (s, n) in enumerate([(s, n) for s in settings for n in jobs], 1):
        info(f"setting {i}/{len(settings) * len(jobs)}: {s.name} "
             f"({s.description}), {n} guest(s) at once")
        folder = root / folder_name(s.name, n)
        folder.mkdir(parents=True, exist_ok=True)
        if s.accel.startswith("kvm"):
            image = kernel.build_all(variants[:1])[variants[0].name].image
            works, why = qemu.probe_kvm(image)
            if not works:
                warn(f"{s.name}: KVM unusable here: {why}")
                store.write_json(folder / "unusable.json",
                                 {"setting": s.name, "reason": why})
                continue
        (folder / "unusable.json").unlink(missing_ok=True)
        matrix.run(variants, scenarios, boots, folder, accel=s.to_accel(),
                   runner=local.Local(n))


def _row(setting: str, scen: str, var: str, runs: list) -> dict:
    ok = [r for r in runs if r["status"] == "ok"]
    row = {"setting": setting, "scenario": scen, "variant": var,
           "boots": len(ok), "failed": len(runs) - len(ok),
           "failures": [r["reason"].splitlines()[0] for r in runs
                        if r["status"] != "ok"][:3]}
    if not ok:
        return row
    # the boot is the unit: medians of per-boot values
    per_boot = {m: [r["boot_values"][m] for r in ok]
                for m in ("p50", "p99", "max", "over_1ms")}
    per_boot_p99 = per_boot["p99"]
    row.update(
        p50_us=statistics.median(per_boot["p50"]),
        p99_us=statistics.median(per_boot_p99),
        max_us=statistics.median(per_boot["max"]),
        worst_max_us=max(per_boot["max"]),
        p99_per_boot_us=per_boot_p99,
        p99_spread_us=max(per_boot_p99) - min(per_boot_p99),
        over_1ms=statistics.median(per_boot["over_1ms"]),
        run_seconds=statistics.median(r["seconds"] for r in ok))
    probe = analysis.probe_summary(ok)
    if probe:
        row["probe"] = probe
    return row


def table(root: Path, settings: list, jobs: tuple = (1,),
          cells_asked: set = None) -> list:
    """Rows per setting and cell; only the (scenario, variant) cells in
    `cells_asked` if given (a setting's folder may hold older studies)."""
    rows = []
    for s, n in [(s, n) for s in settings for n in jobs]:
        name = folder_name(s.name, n)
        folder = root / name
        unusable = folder / "unusable.json"
        if unusable.is_file():
            rows.append({"setting": name, "unusable":
                         store.read_json(unusable)["reason"]})
            continue
        cells = defaultdict(list)
        for rj in sorted(folder.glob("*/*/boot-*/run.json")):
            try:
                r = results.summarize(rj.parent)
            except (OSError, ValueError, KeyError) as e:
                warn(f"{rj.parent}: left out, unreadable ({e})")
                continue
            if cells_asked is None or \
                    (r["scenario"], r["variant"]) in cells_asked:
                cells[(r["scenario"], r["variant"])].append(r)
        if not cells:
            rows.append({"setting": name, "unusable": "no runs yet"})
        for (scen, var), runs in sorted(cells.items()):
            rows.append(dict(_row(name, scen, var, runs), base=s.name,
                             jobs=n))
    return rows


def jobs_equivalence(rows: list) -> list:
    """Cells run with one guest and with n at once: do per-boot p99s
    differ (stats.compare's verdict on n against 1)?"""
    serial = {(r["base"], r["scenario"], r["variant"]): r for r in rows
              if r.get("jobs") == 1 and r.get("boots")}
    out = []
    for r in rows:
        one = serial.get((r.get("base"), r.get("scenario"),
                          r.get("variant")))
        if r.get("jobs", 1) == 1 or not one or not r.get("boots"):
            continue
        cmp = stats.compare(r["p99_per_boot_us"], one["p99_per_boot_us"],
                            floor=metrics.get("p99").min_effect)
        out.append({"setting": r["base"], "jobs": r["jobs"],
                    "scenario": r["scenario"], "variant": r["variant"],
                    "serial": one["p99_per_boot_us"],
                    "parallel": r["p99_per_boot_us"], "compare": cmp,
                    "differs": cmp["verdict"] != "n.s."})
    return out


def _us(v) -> str:
    return "-" if v is None else f"{v:.0f}"


def _lab_qemu(count) -> str:
    """Which build of the lab's QEMU a setting runs in, for the table."""
    built = qemubuild.provenance(count)
    what = (", ".join(built["patches"]) if built["patches"]
            else "none of its patches")
    return (f"; the lab's QEMU, build {built['build']}: Debian's source "
            f"with common/qemu/: {what}")


def markdown(rows: list, settings: list, command: str) -> str:
    desc = {s.name: s for s in settings}
    out = ["# Fidelity: the lab's noise floor per emulation setting", "",
           f"Measured on {time.strftime('%Y-%m-%d')} with `{command}`.",
           "Host: " + qemu.host_cpu() + ", Debian's " + qemu.qemu_version()
           + ".", "",
           "Each figure is the median over boots of one value per boot; "
           "p99 also shows the boots' range. Spread: largest minus "
           "smallest per-boot p99 (how close repeat boots come). Over 1 ms: "
           "share of a boot's samples. Probe: median wake-up latency of valid "
           "samples and the share moved to another CPU. Run: median "
           "wall-clock seconds per boot.", "",
           "| setting | scenario | variant | boots | p50 us | p99 us "
           "[boots' range] | p99 spread us | max us [worst boot] | over 1 ms "
           "| probe | run s |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "unusable" in r:
            out.append(f"| {r['setting']} | - | - | 0 | unusable: "
                       f"{r['unusable']} ||||||")
            continue
        if not r["boots"]:
            out.append(f"| {r['setting']} | {r['scenario']} | "
                       f"{r['variant']} | 0 of {r['failed']} | failed: "
                       f"{'; '.join(r['failures'])} ||||||")
            continue
        lo, hi = min(r["p99_per_boot_us"]), max(r["p99_per_boot_us"])
        probe = r.get("probe")
        probe_txt = (f"{probe['median_us']:.0f} us, moved "
                     f"{100 * probe['moved']:.0f}% (n={probe['valid']})"
                     if probe else "-")
        boots = str(r["boots"]) + (f" (+{r['failed']} failed)"
                                   if r["failed"] else "")
        out.append(
            f"| {r['setting']} | {r['scenario']} | {r['variant']} | "
            f"{boots} | {_us(r['p50_us'])} | {_us(r['p99_us'])} "
            f"[{lo:.0f}-{hi:.0f}] | {_us(r['p99_spread_us'])} | "
            f"{_us(r['max_us'])} [{_us(r.get('worst_max_us'))}] | "
            f"{100 * r['over_1ms']:.1f}% | "
            f"{probe_txt} | {r['run_seconds']:.0f} |")
    same = jobs_equivalence(rows)
    if same:
        out += ["", "Guests side by side: per-boot p99 with n guests at "
                "once against one at a time, by the lab's verdict rule "
                "(a difference needs p < 0.01, 1.5x and a shift beyond "
                "the base's spread). 'none found' is not equivalence "
                "proven: with 5 boots only large differences show.", "",
                "| setting | JOBS | scenario | variant | p99 per boot, one "
                "guest | p99 per boot, n guests | difference |",
                "|---|---|---|---|---|---|---|"]
        for e in same:
            out.append(
                f"| {e['setting']} | {e['jobs']} | {e['scenario']} | "
                f"{e['variant']} | {' '.join(_us(v) for v in e['serial'])}"
                f" | {' '.join(_us(v) for v in e['parallel'])} | "
                f"{e['compare']['verdict'] if e['differs'] else 'none found'}"
                f" |")
    out += ["", "Settings:", ""]
    out += [f"- {n}: {desc[n].description} (`{' '.join(desc[n].to_accel().args)}`"
            + (f", guest `{desc[n].append}`" if desc[n].append else "")
            + (_lab_qemu(desc[n].qemu_patches) if desc[n].lab_qemu
               else "; Debian's QEMU")
            + ")" for n in dict.fromkeys(r.get("base", r["setting"])
                                         for r in rows)]
    return "\n".join(out) + "\n"


def write(root: Path, settings: list, out: Path, command: str,
          jobs: tuple = (1,), cells_asked: set = None) -> str:
    rows = table(root, settings, jobs, cells_asked)
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(rows, settings, command)
    store.write_text(out / "fidelity.md", text)
    store.write_json(out / "fidelity.json", rows)
    return text
