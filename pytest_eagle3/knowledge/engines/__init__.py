"""The registry: every engine, one module each (its :class:`~pytest_eagle3.knowledge.engine.Engine`, its behaviour
rows and its rows in the cross-engine tables). Everything else reads the engines from here.

The engines are found, not listed: every module of this package that defines ``ENGINE``, then every entry point of
the group ``pytest_eagle3.engines`` (a third-party package's engine: the entry point names a module with ``ENGINE``
or an ``Engine`` itself). They are ordered by ``Engine.rank``, then name.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from importlib.metadata import entry_points
from types import ModuleType

from pytest_eagle3.knowledge.engine import Engine

#: The entry-point group a third-party package registers an engine in (``name = "package.module"`` or
#: ``"package.module:ENGINE"``); ``option_table.ENGINE_ENTRY_POINTS`` names it too (the option table, imported by
#: the registry's users, asks the registry for these engines' interpreter options: it cannot be imported here).
ENTRY_POINT_GROUP = "pytest_eagle3.engines"


def _engine_of(found: object, where: str) -> Engine:
    """The engine an entry point or module names: an ``Engine``, or a module whose ``ENGINE`` is one."""
    engine = getattr(found, "ENGINE", None) if isinstance(found, ModuleType) else found
    if not isinstance(engine, Engine):
        raise TypeError(f"{where}: names no Engine (a module with ENGINE, or an Engine)")
    return engine


def package_engines() -> Iterable[Engine]:
    """Every module of this package that defines ``ENGINE`` (the bundled engines: their interpreter options are
    generated, ``pytest_eagle3/scanners/interpreter_options.py``)."""
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "ENGINE"):
            yield _engine_of(module, module.__name__)


def _entry_point_engines() -> Iterable[Engine]:
    """Every engine a distribution registers under :data:`ENTRY_POINT_GROUP`."""
    for point in entry_points(group=ENTRY_POINT_GROUP):
        yield _engine_of(point.load(), f"entry point {point.name} = {point.value}")


def _discover() -> tuple[Engine, ...]:
    found: dict[str, Engine] = {}
    for engine in (*package_engines(), *_entry_point_engines()):
        if engine.name in found:
            raise ValueError(f"two engines named {engine.name!r}")
        found[engine.name] = engine
    return tuple(sorted(found.values(), key=lambda engine: (engine.rank, engine.name)))


#: Every engine, in the order the selection ``all``, the tables and the reports list them.
REGISTRY: tuple[Engine, ...] = _discover()
BY_NAME: dict[str, Engine] = {engine.name: engine for engine in REGISTRY}


def engine_named(name: str) -> Engine:
    """The registered engine of that name; KeyError for an unknown one."""
    return BY_NAME[name]
