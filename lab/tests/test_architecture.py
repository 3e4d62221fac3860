"""The host side's shape: no import circles, runners found by folder."""
import ast

from lab.base import paths
from lab.run import runners

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
    assert graph["lab.run.matrix"] >= {"lab.run.runfolder",
                                     "lab.run.runners.local"}

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
        if name.startswith("lab.run.runners"):
            assert "lab.run.matrix" not in deps, name


# The pipeline's stages, in order (lab/README.md): each is a package of
# lab/, and a module imports only from its own stage or an earlier one,
# never from a later one.  The commands (lab/__main__.py, the fidelity
# study, the attribution) come last and may import any stage.
STAGES = ["base", "build", "run", "analyse", "report"]
COMMANDS = ["__main__", "fidelity", "attribute"]


def stage_of(module: str) -> int:
    parts = module.split(".")
    return STAGES.index(parts[1]) if parts[1] in STAGES else len(STAGES)


def test_every_module_sits_in_a_stage_package():
    loose = sorted(m for m in imports() if m.count(".") == 1 and
                   m.split(".")[1] not in STAGES + COMMANDS)
    assert not loose, f"put each in a stage's package: {loose}"
    packages = sorted(p.parent.name for p in LAB.glob("*/__init__.py"))
    assert packages == sorted(STAGES + ["tests"]), \
        f"lab/ holds the stages' packages and tests/ only: {packages}"


def test_no_stage_imports_from_a_later_one():
    graph = imports()
    late = [(m, d) for m, deps in graph.items() for d in deps
            if stage_of(d) > stage_of(m)]
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
