"""The report's figures: the share of samples above a latency per boot,
the histograms in OSADL's form, the per-boot tails."""
from collections import defaultdict
from pathlib import Path

from ..base import figures


def histograms(runs: list, a: dict, out: Path, colors: dict) -> list:
    """The latency histogram as the OSADL QA farm draws it: samples per
    1 us bin on a log scale over latency, one line per kernel (its boots
    pooled: a picture, not a test), one panel per scenario."""
    plt = figures.pyplot()
    scens = [s for s in a["scenarios"] if any(
        r["status"] == "ok" and r["scenario"] == s and r["histogram"]
        for r in runs)]
    if not scens:
        return []
    cols = min(3, len(scens))
    rows = -(-len(scens) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 2.6 * rows),
                             squeeze=False)
    for ax, scen in zip(axes.flat, scens):
        for var in a["variants"]:
            pooled = defaultdict(int)
            for r in runs:
                if r["status"] == "ok" and r["scenario"] == scen and \
                        r["variant"] == var:
                    for k, n in r["histogram"].items():
                        pooled[int(k)] += n
            if pooled:
                keys = sorted(pooled)
                ax.step(keys, [pooled[k] for k in keys], where="mid",
                        color=colors[var], lw=0.8, label=var)
        ax.set_yscale("log")
        ax.set_title(scen, fontsize=9)
        ax.set_xlabel("latency (us)", fontsize=8)
        ax.set_ylabel("samples", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(scens):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    figures.save(fig, out / "histograms.png")
    return ["histograms.png"]


def plots(runs: list, a: dict, out: Path) -> list:
    plt = figures.pyplot()

    colors = {v: f"C{i}" for i, v in enumerate(a["variants"])}
    made = []
    for scen in a["scenarios"]:
        ok = [r for r in runs if r["status"] == "ok"
              and r["scenario"] == scen and r["histogram"]]
        if not ok:
            continue            # every run failed: nothing to draw
        fig, ax = plt.subplots(figsize=(7, 4))
        labelled = set()
        for r in sorted(ok, key=lambda r: (r["variant"], r["boot"])):
            h = r["histogram"]
            keys = sorted(h)
            total = sum(h.values())
            above, left = [], total
            for k in keys:
                left -= h[k]
                above.append(left / total)
            var = r["variant"]
            ax.step([max(k, 1) for k in keys], [max(x, 0.5 / total)
                                                for x in above],
                    where="post", color=colors[var], alpha=0.7, lw=1,
                    label=None if var in labelled else var)
            labelled.add(var)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("latency (us)")
        ax.set_ylabel("share of samples above")
        ax.set_title(f"{scen}: one line per boot", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
        fig.tight_layout()
        name = f"survival-{scen}.png"
        figures.save(fig, out / name)
        made.append(name)

    made += histograms(runs, a, out, colors)
    if not a["cells"]:
        return made
    fig, axes = plt.subplots(2, 1, figsize=(9, 7))
    width = 0.8 / max(1, len(a["variants"]))
    for ax, metric in zip(axes, ("p99", "max")):
        drawn = 0
        for i, var in enumerate(a["variants"]):
            xs, ys = [], []
            for j, scen in enumerate(a["scenarios"]):
                c = a["cells"].get(f"{scen}/{var}")
                for v in (c["per_boot"][metric] if c else []):
                    if v == v:                  # NaN: no samples kept
                        xs.append(j + i * width)
                        ys.append(max(v, 1))
            ax.plot(xs, ys, "o", ms=4, alpha=0.7, color=colors[var],
                    label=var)
            drawn += len(ys)
        ax.set_xticks([j + 0.4 - width / 2
                       for j in range(len(a["scenarios"]))])
        ax.set_xticklabels(a["scenarios"], rotation=30, ha="right",
                           fontsize=8)
        if drawn:
            ax.set_yscale("log")        # (no boot left: nothing to scale)
        ax.set_ylabel(f"{metric} (us)")
        ax.set_title(f"{metric}: one point per boot", fontsize=10)
        ax.grid(True, axis="y", which="both", alpha=0.3)
    axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    fig.tight_layout()
    figures.save(fig, out / "tails.png")
    made.append("tails.png")
    return made
