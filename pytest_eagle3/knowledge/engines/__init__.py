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
from pytest_eagle3.option_table import ENGINE_ENTRY_POINTS, interpreter_dest

#: The entry-point group a third-party package registers an engine in (``NAME = "package.module"`` or
#: ``"package.module:ENGINE"``, NAME its engine's name): the option table's, which gives each its interpreter option.
ENTRY_POINT_GROUP = ENGINE_ENTRY_POINTS


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
        where = f"entry point {point.name} = {point.value}"
        engine = _engine_of(point.load(), where)
        if engine.name != point.name:
            raise ValueError(f"{where}: the entry point is named after its engine, {engine.name!r}")
        if engine.interpreter.python_option not in (None, interpreter_dest(engine.name)):
            raise ValueError(f"{where}: an installed engine's interpreter option is {interpreter_dest(engine.name)!r} "
                             f"(the option table gives it from the entry point's name), not {engine.interpreter.python_option!r}")
        yield engine


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
