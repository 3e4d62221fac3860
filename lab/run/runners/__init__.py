"""Runners: what boots the matrix's guests, one module or package each.

Found by their place in this folder: `python3 -m lab run --runner NAME`
takes any of them.  A runner module defines

    HELP                  one line for --help
    add_arguments(group)  its own command-line options, if it has any
    make(args)            the runner: an object with
        .name             recorded in every run.json ("runner")
        .accel(kernel)    how its guests are emulated (lab/run/accelerator.py)
        .run(todo, built, initrds, accel, root)
                          every matrix cell in `todo` into its run folder,
                          as lab/run/runfolder.py describes it

The matrix plans the cells and the resume rule; a runner imports nothing
from the matrix.  local.py boots QEMU here, lava/ submits LAVA jobs; a
runner reaching a machine over ssh would be a third file.
"""
import importlib
import pkgutil

from ...base.log import LabError


def names() -> list:
    return sorted(m.name for m in pkgutil.iter_modules(__path__))


def module(name: str):
    if name not in names():
        raise LabError(f"unknown runner {name!r}; known: "
                       f"{', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}")
