"""Overload curves: the scenarios of a NIC sweep (`nic = r1 r2 ...`).

For each sweep and kernel, one point per offered rate: frames the host's
sender offered per guest second (x; lab/analyse/results.py nic_offered) against
datagrams the application read per guest second (y), medians over the
rate's boots.  This is the plot the networking list draws for a
receiver "falling off an edge": past its capacity, a receiver that
shares its CPU with NET_RX may read less the more is offered.  The text
says, per kernel, where its curve peaks and how far it falls from there
at the highest rate offered.
"""
from collections import defaultdict
from pathlib import Path

from ..base import figures, stats
from ..base.textfmt import wrap

# A curve that ends below this share of its peak "falls"; above, it holds
# (the boot-to-boot spread of nic_app_kpps is a few percent).
FALLS_BELOW = 0.8


def _metric(runs: list, name: str) -> float:
    """A metric's median over runs."""
    return stats.upper_median(r["metrics"].get(name, {}).get(
        "value", float("nan")) for r in runs)


def analyse(runs: list) -> dict:
    """{sweep: {variant: [point per rate, by offered rate]}}; a point:
    rate (the scenario's), boots, offered_kpps, read_kpps, rx_kpps,
    drop_percent (medians over its boots)."""
    cells = defaultdict(list)
    for r in runs:
        if r["status"] == "ok" and r.get("sweep_of") and \
                r.get("nic_offered"):
            cells[(r["sweep_of"], r["variant"], r["scenario"])].append(r)
    out = defaultdict(dict)
    for (sweep, var, scen), rs in sorted(cells.items()):
        point = {"scenario": scen, "boots": len(rs),
                 "asked_pps": rs[0]["nic_offered"]["asked_pps"],
                 "offered_kpps": stats.upper_median(
                     r["nic_offered"]["guest_kpps"] for r in rs),
                 "read_kpps": _metric(rs, "nic_app_kpps"),
                 "rx_kpps": _metric(rs, "nic_rx_kpps"),
                 "drop_percent": _metric(rs, "nic_rcvbuf_drop_percent")}
        if point["offered_kpps"] == point["offered_kpps"] and \
                point["read_kpps"] == point["read_kpps"]:   # not NaN
            out[sweep].setdefault(var, []).append(point)
    for curves in out.values():
        for points in curves.values():
            points.sort(key=lambda p: p["offered_kpps"])
    return {s: dict(c) for s, c in out.items()}


def shape(points: list) -> dict:
    """Where a curve peaks and where it ends: peak read rate and the
    offered rate there, the read rate at the highest offered rate, and
    that as a share of the peak."""
    peak = max(points, key=lambda p: p["read_kpps"])
    last = points[-1]
    share = last["read_kpps"] / peak["read_kpps"] if peak["read_kpps"] \
        else 0.0            # read nothing at any rate: falls, to nothing
    return {"peak_kpps": peak["read_kpps"],
            "peak_at_kpps": peak["offered_kpps"],
            "end_kpps": last["read_kpps"], "end_at_kpps":
            last["offered_kpps"], "end_share": share,
            "falls": share < FALLS_BELOW}


def text(sweeps: dict, variants: list) -> list:
    """Lines for report.txt: per sweep and kernel, its curve's shape."""
    out = []
    for sweep, curves in sweeps.items():
        out += [""] + wrap(f"{sweep}, overload curve (datagrams read per "
                           f"guest second against frames offered; "
                           f"overload-{sweep}.png):", "  ")
        for var in [v for v in variants if v in curves]:
            s = shape(curves[var])
            verdict = (f"falls to {s['end_kpps']:.3g} kpps "
                       f"({100 * s['end_share']:.0f}% of its peak)"
                       if s["falls"] else
                       f"holds at {s['end_kpps']:.3g} kpps")
            out += wrap(f"{var}: peaks at {s['peak_kpps']:.3g} kpps read "
                        f"with {s['peak_at_kpps']:.3g} kpps offered; at "
                        f"{s['end_at_kpps']:.3g} kpps offered it {verdict}"
                        f".", "    ")
    return out


def plots(sweeps: dict, variants: list, out: Path) -> list:
    """overload-<sweep>.png: read and driver-received rates against the
    offered rate, one line per kernel."""
    if not sweeps:
        return []
    plt = figures.pyplot()
    colors = {v: f"C{i}" for i, v in enumerate(variants)}
    made = []
    for sweep, curves in sweeps.items():
        fig, ax = plt.subplots(figsize=(7, 4.5))
        top = 0.0
        for var in [v for v in variants if v in curves]:
            pts = curves[var]
            xs = [p["offered_kpps"] for p in pts]
            ax.plot(xs, [p["read_kpps"] for p in pts], "o-",
                    color=colors[var], label=f"{var}: read by the "
                    f"application")
            ax.plot(xs, [p["rx_kpps"] for p in pts], "x:",
                    color=colors[var], alpha=0.6,
                    label=f"{var}: taken by the driver")
            top = max([top] + xs)
        ax.plot([0, top], [0, top], color="grey", lw=0.8, ls="--",
                label="read = offered")
        ax.set_xlabel("frames offered, kpps (per guest second)")
        ax.set_ylabel("kpps (per guest second)")
        ax.set_title(f"{sweep}: medians over boots", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
        fig.tight_layout()
        name = f"overload-{sweep}.png"
        figures.save(fig, out / name)
        made.append(name)
    return made
