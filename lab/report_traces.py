"""The report's trace part: the cause of each cell's worst cases, the
tracing overhead, a timeline per scenario and files for trace viewers."""
import shutil
from pathlib import Path

from . import stats, trace, traceview
from .textfmt import WIDTH, fmt_us, wrap as _wrap

WORST = 3                  # captures explained per cell


def analyse(runs: list) -> dict:
    """{"scenario/variant": {"captures": [...], "overhead": {...}}} for
    cells whose runs have a trace phase."""
    cells = {}
    for r in runs:
        if r["status"] != "ok" or "traced_histogram" not in r:
            continue
        c = cells.setdefault(f"{r['scenario']}/{r['variant']}",
                             {"captures": [], "errors": [], "untraced": [],
                              "traced": []})
        c["untraced"].append(r["histogram"])
        c["traced"].append(r["traced_histogram"])
        for x in r["traces"]:
            (c["errors"] if "error" in x else c["captures"]).append(
                dict(x, boot=r["boot"]))
    out = {}
    for key, c in cells.items():
        p99 = [stats.quantile(stats.pooled(c[k]), 0.99)
               for k in ("untraced", "traced")]
        med = [stats.quantile(stats.pooled(c[k]), 0.5)
               for k in ("untraced", "traced")]
        out[key] = {
            "captures": sorted(c["captures"],
                               key=lambda x: -x["latency_us"])[:WORST],
            "captured": len(c["captures"]), "errors": c["errors"],
            "overhead": {"boots": len(c["untraced"]),
                         "median_us": med, "p99_us": p99,
                         "p99_ratio": p99[1] / p99[0] if p99[0] else None}}
    return out


def text(t: dict, variants: list, scenarios: list) -> list:
    if not t:
        return []
    out = [""] + _wrap("Cause of the worst-case latency (cyclictest "
                       "break traces; the few worst captures per cell):")
    for scen in scenarios:
        rows = [(v, t[f"{scen}/{v}"]) for v in variants
                if f"{scen}/{v}" in t]
        if not rows:
            continue
        out.append(f"{scen}:")
        for var, c in rows:
            if not c["captures"]:
                out.append(f"  {var:<10}no capture over the threshold")
            for x in c["captures"]:
                out += _wrap(f"{var} {x['latency_us']} us: "
                             f"{x['cause']}; {trace.placement(x)}",
                             "  ")[:3]
    out += ["", "Tracing overhead (same boots, traced run after the "
            "measured one):", f"  {'cell':<28}{'p99 untraced':>13}"
            f"{'traced':>8}{'ratio':>7}"]
    for scen in scenarios:
        for var in variants:
            c = t.get(f"{scen}/{var}")
            if not c:
                continue
            o = c["overhead"]
            ratio = f"{o['p99_ratio']:.2f}" if o["p99_ratio"] else "-"
            out.append(f"  {scen + '/' + var:<28}"
                       f"{fmt_us(o['p99_us'][0]):>13}"
                       f"{fmt_us(o['p99_us'][1]):>8}{ratio:>7}")
    return [line[:WIDTH] for line in out]


def files(t: dict, variants: list, scenarios: list, out: Path) -> list:
    """timeline-<scenario>.png per scenario (worst case of each variant),
    and data/trace-<scenario>-<variant>.{json,dat}; returns the images."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images = []
    for scen in scenarios:
        worst = [(v, t[f"{scen}/{v}"]["captures"][0]) for v in variants
                 if t.get(f"{scen}/{v}", {}).get("captures")]
        if not worst:
            continue
        fig, axes = plt.subplots(len(worst), 1, squeeze=False,
                                 figsize=(9, 1.3 + 1.2 * len(worst)))
        for ax, (var, x) in zip(axes[:, 0], worst):
            dat = Path(x["trace"])
            events = trace.parse(trace.report_text(dat))
            title = (f"{var}: {x['latency_us']} us, {x['cause']}")[:110]
            traceview.draw(ax, events, x, title)
            stem = f"trace-{scen}-{var}"
            traceview.perfetto(events, x, out / "data" / f"{stem}.json")
            shutil.copyfile(dat, out / "data" / f"{stem}.dat")
        axes[-1, 0].set_xlabel("ms from the expected wake-up")
        fig.legend(handles=traceview.legend_handles(), loc="lower center",
                   ncol=6, fontsize=7, frameon=False)
        fig.tight_layout(rect=(0, 0.12, 1, 1))
        name = f"timeline-{scen}.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        images.append(name)
    return images
