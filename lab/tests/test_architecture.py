"""The host side's shape: no import circles, runners found by folder."""
import ast

from lab import paths, runners

LAB = paths.REPO / "lab"


def module_name(path) -> str:
    parts = path.relative_to(paths.REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict:
    """{module: modules of the lab it imports, at any depth of its code}."""
    files = {module_name(p): p for p in LAB.rglob("*.py")
             if "tests" not in p.relative_to(LAB).parts}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else \
            name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.rsplit(".", node.level - 1)[0] \
                    if node.level > 1 else package
                mod = f"{base}.{node.module}" if node.module else base
                for alias in node.names:
                    sub = f"{mod}.{alias.name}"
                    found.add(sub if sub in files else mod)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name in files}
        graph[name] = found & set(files) - {name}
    return graph


def test_no_import_circles():
    graph = imports()
    assert graph["lab.matrix"] >= {"lab.runfolder", "lab.runners.local"}

    def reaches(start, goal, seen):
        for n in graph[start] - seen:
            seen.add(n)
            if n == goal or reaches(n, goal, seen):
                return True
        return False
    circles = [m for m in graph if reaches(m, m, set())]
    assert circles == []


def test_runners_import_nothing_from_the_matrix():
    graph = imports()
    for name, deps in graph.items():
        if name.startswith("lab.runners"):
            assert "lab.matrix" not in deps, name


# The pipeline's stages, in order (lab/README.md): a module imports only
# from its own stage or an earlier one, never from a later one.  Every
# module has its place here, so a new one must be given one.
STAGES = {
    "base": "log paths store cores textfmt figures kconfig variants metrics "
            "stats predictions",
    "build": "source build qemubuild rtlabuild initramfs guestbuild series",
    "run": "qemu hangdump settings scenario accelerator runfolder boot "
           "nicload health matrix runners runners.local runners.lava "
           "runners.lava.client runners.lava.collect runners.lava.jobs "
           "runners.lava.local runners.lava.runner runners.lava.tool",
    "analyse": "cyclictest timerlat trace traceview results analysis "
               "replicate",
    "report": "report_traces report_sweeps report_text report_plots report "
              "answer report_index mail",
    "command": "__main__ fidelity",
}


def test_no_stage_imports_from_a_later_one():
    order = {f"lab.{m}": i for i, mods in enumerate(STAGES.values())
             for m in mods.split()}
    graph = imports()
    unplaced = sorted(set(graph) - set(order) - {"lab"})
    assert not unplaced, f"give each a stage in STAGES: {unplaced}"
    late = [(m, d) for m, deps in graph.items() if m in order
            for d in deps if order.get(d, 0) > order[m]]
    assert not late, late


def test_runners_are_found_by_their_place():
    assert runners.names() == ["lava", "local"]
    for name in runners.names():
        m = runners.module(name)
        assert m.HELP and callable(m.make)


def test_published_reports_stay_under_5_mb():
    """A report folder in git is at most 5 MB; whole traces stay in the
    run folders (build/results), from which `make compare` remakes it."""
    for folder in (paths.REPO / "reports").iterdir():
        size = sum(f.stat().st_size for f in folder.rglob("*")
                   if f.is_file())
        assert size <= 5 << 20, f"{folder.name}: {size >> 10} KB"
