import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


@pytest.fixture
def variant_root(tmp_path):
    """An empty variants/ folder to fill with test variants."""
    root = tmp_path / "variants"
    root.mkdir()
    return root


def make_variant(root, name, series="", patches=None, config="",
                 readme="# x\n"):
    folder = root / name
    folder.mkdir()
    (folder / "series").write_text(series)
    (folder / "config").write_text(config)
    (folder / "README.md").write_text(readme)
    for pname, text in (patches or {}).items():
        (folder / pname).write_text(text)
    return folder
