"""The fidelity table from run folders, and the settings' QEMU options."""
import pytest

from lab import fidelity
from lab.run import qemu, settings
from lab.base import store
from lab.base.log import LabError
from lab.tests.test_matrix_report import fake_run


def test_table_rows_spread_and_unusable_settings(tmp_path):
    chosen = settings.select("tcg-single,tcg-multi,kvm")
    root = tmp_path / "fidelity"
    # tcg-single: three boots, close together; tcg-multi: far apart.
    for boot, hi in enumerate((100, 110, 105), 1):
        fake_run(root / "tcg-single", "baseline", "idle", boot, 50, hi,
                 seed=boot)
    for boot, hi in enumerate((100, 5000), 1):
        fake_run(root / "tcg-multi", "baseline", "idle", boot, 50, hi,
                 seed=boot)
    fake_run(root / "tcg-multi", "baseline", "idle", 3, 50, 60,
             status="failed")
    (root / "kvm").mkdir(parents=True)
    store.write_json(root / "kvm" / "unusable.json",
                     {"setting": "kvm", "reason": "guest hangs"})
    rows = {r["setting"]: r for r in fidelity.table(root, chosen)}
    single, multi = rows["tcg-single"], rows["tcg-multi"]
    assert single["boots"] == 3 and single["failed"] == 0
    assert single["p99_spread_us"] <= 15
    assert multi["boots"] == 2 and multi["failed"] == 1
    assert multi["p99_spread_us"] > 4000
    assert multi["over_1ms"] > 0.3 and single["over_1ms"] == 0
    per_boot = multi["p99_per_boot_us"]
    assert min(per_boot) <= multi["p99_us"] <= max(per_boot)
    assert rows["kvm"]["unusable"] == "guest hangs"
    text = fidelity.markdown(list(rows.values()), chosen, "cmd")
    assert "| kvm | - | - | 0 | unusable: guest hangs" in text
    assert "| tcg-multi | idle | baseline | 2 (+1 failed) |" in text


def test_settings_become_qemu_options():
    by = {s.name: s.to_accel() for s in settings.SETTINGS}
    assert by["tcg-single"].args == ["-accel", "tcg,thread=single"]
    assert by["icount-3-sleep"].args == ["-accel", "tcg", "-icount",
                                         "shift=3,sleep=on"]
    assert by["tcg-multi-pinned"].pin and not by["tcg-multi"].pin
    m = qemu.Machine(kernel="k", initrd="i", share="s",
                     accel=by["tcg-single-idle-poll"], append="rdinit=/x")
    cmd = m.command()
    assert cmd[cmd.index("-append") + 1] == \
        "console=ttyS0,115200 panic=-1 idle=poll rdinit=/x"
    assert by["kvm"].args == ["-accel", "kvm", "-cpu", "host"]
    with pytest.raises(LabError, match="unknown setting 'tcg-fast'"):
        settings.select("tcg-fast")


def test_guests_side_by_side_against_one_at_a_time(tmp_path):
    chosen = settings.select("tcg-single")
    root = tmp_path / "fidelity"
    for boot in range(1, 6):
        for folder, idle_hi, long_hi in (("tcg-single", 100, 5000),
                                         ("tcg-single-jobs2", 101, 300)):
            fake_run(root / folder, "baseline", "idle", boot, 50,
                     idle_hi + boot, seed=boot)
            fake_run(root / folder, "baseline", "long", boot, 50,
                     long_hi + boot, seed=boot)
    rows = fidelity.table(root, chosen, (1, 2))
    same = {e["scenario"]: e for e in fidelity.jobs_equivalence(rows)}
    assert not same["idle"]["differs"] and same["idle"]["jobs"] == 2
    assert same["long"]["differs"]
    assert same["long"]["compare"]["verdict"] == "lower"
    text = fidelity.markdown(rows, chosen, "cmd")
    assert "| tcg-single | 2 | idle | baseline |" in text
    assert "| none found |" in text and "| lower |" in text
