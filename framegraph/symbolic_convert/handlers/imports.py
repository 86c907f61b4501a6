"""Imports inside functions: IMPORT_NAME, IMPORT_FROM and IMPORT_STAR.

Libraries import inside functions to keep optional dependencies optional (transformers'
`is_torchdynamo_compiling` does `import torch`). An import of a module that is already loaded
runs no code: the interpreter reads `sys.modules` and returns the module (or its top-level
package), so the translator does the same and folds the import to the module. Anything that
would run code is a graph break, where the real import runs eagerly: a module not loaded yet
(importing executes it), a module still being initialised (a circular import), a name of a
package that is neither an attribute nor a loaded submodule (the import machinery would
import it, or a lazy module's `__getattr__` would compute it), or an `__import__` the program
replaced.

What can change between calls is which module `sys.modules` holds under the name (a test that
swaps in a fake, a reload through `del sys.modules[name]`): each folded import is guarded by
identity against `sys.modules[name]`, read through `sys.modules` itself (installed once in the
frame's globals, since a function's globals do not always reach `sys`). The module's own
attributes are read and guarded like any module's (variables/functions.PythonModuleVariable).
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import sys
import types

from ...exc import Unsupported
from ...trace_rules import in_stdlib, is_installed_module
from ...source import GlobalSource, ItemSource, Source
from ...variables.base import VariableTracker

SYS_MODULES_GLOBAL = "__framegraph_sys_modules"
_ORIGINAL_IMPORT = builtins.__import__


def IMPORT_NAME(tx, inst) -> None:
    fromlist, level = tx.pop().as_python_constant(), tx.pop().as_python_constant()
    tx.push(import_module(tx, inst.argval, fromlist, level))


def IMPORT_FROM(tx, inst) -> None:
    # The module stays on the stack below the name read from it.
    module = tx.peek()
    name = inst.argval
    value = getattr(module, "value", None)
    if not isinstance(value, types.ModuleType) or not _has_plain_attribute(value, name):
        raise Unsupported("Import that runs code", f"from {_name_of(module)} import {name}: "
                          f"{name!r} is not an attribute the module already holds")
    tx.push(module.var_getattr(tx, name))


def IMPORT_STAR(tx, inst) -> None:
    # Only module-level code can hold it (`import *` in a function is a SyntaxError): it
    # binds names by the module's __all__, which the translator's locals do not model.
    raise Unsupported("Missing bytecode handler", "`from module import *` binds names the trace does not model")


def import_module(tx, name: str, fromlist, level: int) -> VariableTracker:
    """What IMPORT_NAME pushes for `__import__(name, globals, None, fromlist, level)`, when
    that runs no code; otherwise Unsupported (the import runs eagerly at the break)."""
    statement = _statement(name, fromlist, level)
    if tx.f_builtins.get("__import__") is not _ORIGINAL_IMPORT:
        raise Unsupported("Import that runs code", f"{statement}: builtins.__import__ was replaced")
    absolute = _absolute_name(tx.f_globals, name, level, statement)
    module = _loaded(absolute, statement)
    if fromlist:
        if _is_package(module, statement):  # the import machinery checks each name
            for item in fromlist:
                if item != "*" and not _has_plain_attribute(module, item):
                    _import_installed_submodule(module, f"{absolute}.{item}")
                if item == "*" or not _has_plain_attribute(module, item):
                    raise Unsupported("Import that runs code",
                                      f"{statement}: {item!r} is not an attribute package {absolute!r} already holds")
        return loaded_module(tx, absolute)
    if "." in name and level == 0:
        # `import a.b` binds the top-level package `a` (once `a.b` is loaded).
        top = name.partition(".")[0]
        _loaded(top, statement)
        return loaded_module(tx, top)
    return loaded_module(tx, absolute)


def _import_installed_submodule(package: types.ModuleType, name: str) -> None:
    """`from package import sub` of an installed package's submodule not loaded yet: it is
    imported now, while tracing, as the eager run would import it at this line (a library's
    lazy import of its backend). The program's own modules are left to the eager run."""
    if name in sys.modules or not is_installed_module(package):
        return
    try:
        if importlib.util.find_spec(name) is None:
            return
        importlib.import_module(name)
    except Exception:  # noqa: BLE001  (the eager run at the break raises it from the user's line)
        return


def loaded_module(tx, name: str) -> VariableTracker:
    """The module `sys.modules[name]` (loaded and initialised), guarded to stay that module."""
    from ...variables.builder import wrap

    return wrap(tx, sys.modules[name], sys_modules_source(tx, name))


def sys_modules_source(tx, name: str) -> Source:
    """`sys.modules[name]`, reached through the compiled frame's globals."""
    if tx.output.f_globals.get(SYS_MODULES_GLOBAL) is not sys.modules:
        tx.output.install_global(SYS_MODULES_GLOBAL, sys.modules)  # reset() takes it back
    return ItemSource(GlobalSource(SYS_MODULES_GLOBAL), name)


def _loaded(name: str, statement: str) -> types.ModuleType:
    module = sys.modules.get(name)
    if module is None:
        raise Unsupported("Import that runs code", f"{statement}: module {name!r} is not loaded yet")
    if not isinstance(module, types.ModuleType):
        raise Unsupported("Import that runs code", f"{statement}: sys.modules[{name!r}] is a {type(module).__name__}")
    spec = module.__dict__.get("__spec__")
    if getattr(spec, "_initializing", False) is True:
        raise Unsupported("Import that runs code", f"{statement}: module {name!r} is still being initialised")
    return module


def _absolute_name(f_globals: dict, name: str, level: int, statement: str) -> str:
    """The name a relative import resolves to, from the importing function's package (as
    importlib's _calc___package__ and _resolve_name find it)."""
    if level == 0:
        return name
    package = f_globals.get("__package__")
    if package is None:
        spec = f_globals.get("__spec__")
        if spec is not None:
            package = spec.parent
        elif "__name__" in f_globals:
            package = f_globals["__name__"]
            if "__path__" not in f_globals:
                package = package.rpartition(".")[0]
    if not isinstance(package, str) or not package:
        raise Unsupported("Import that runs code", f"{statement}: relative import outside a known package")
    bits = package.rsplit(".", level - 1)
    if len(bits) < level:
        raise Unsupported("Import that runs code", f"{statement}: relative import beyond the top-level package")
    return f"{bits[0]}.{name}" if name else bits[0]


def _has_plain_attribute(module: types.ModuleType, name: str) -> bool:
    """Whether reading `name` from the module finds it in the module's dict without running
    code (a module class of its own may compute attributes)."""
    return type(module).__getattribute__ is types.ModuleType.__getattribute__ and name in module.__dict__


def _is_package(module: types.ModuleType, statement: str) -> bool:
    """Whether the module has `__path__`, found without running code (a module class of its
    own or a module `__getattr__` would be asked for a missing one)."""
    if _has_plain_attribute(module, "__path__"):
        return True
    if type(module) is types.ModuleType and "__getattr__" not in module.__dict__:
        return False
    lookup = module.__dict__.get("__getattr__")
    if type(module) is types.ModuleType and isinstance(lookup, types.FunctionType) and in_stdlib(lookup):
        # The standard library's module __getattr__s (typing's on 3.13, for deprecated names)
        # load or warn about names of their own; asked for __path__ they raise AttributeError.
        return hasattr(module, "__path__")
    raise Unsupported("Import that runs code", f"{statement}: finding whether {module.__name__!r} is a package runs code")


def _statement(name: str, fromlist, level: int) -> str:
    target = "." * level + name
    return f"from {target} import {', '.join(fromlist)}" if fromlist else f"import {target}"


def _name_of(module: VariableTracker) -> str:
    value = getattr(module, "value", None)
    return getattr(value, "__name__", repr(module))
