"""User functions, methods and closure cells: what gets inlined.

Calling a `UserFunctionVariable` (a real Python function) or a `NestedFunctionVariable` (one
made by MAKE_FUNCTION while tracing) binds the arguments exactly as CPython would and runs
the body in a child translator that shares the graph (see symbolic_convert/inline.py).

Closure cells are `CellBox`es: a box the frame that made the cell and every function that
captured it share, so `nonlocal` writes in an inlined function are seen by its maker. A box
for a real cell (a closure that existed before the call) reads the cell lazily and guards the
value it read; writing to it would be a side effect on the caller's state, which is
Unsupported until the side-effect ledger replays it.
"""

from __future__ import annotations

import types
from typing import Any

import torch

from ..exc import Unsupported
from ..source import AttrSource, ItemSource, Source
from .base import MethodVariable, VariableTracker
from .constant import ConstantVariable, is_constant_type
from .containers import DictVariable, TupleVariable

CO_VARARGS, CO_VARKEYWORDS = 0x04, 0x08
_FUNCTION_APPLY = torch.autograd.Function.__dict__["apply"].__func__


class CellBox(VariableTracker):
    """One closure cell. `value` is None while the cell is empty."""

    __slots__ = ("name", "value", "_pending", "_shared", "captured", "owner", "cell_source")

    def __init__(self, name: str, value: VariableTracker | None = None,
                 pending: tuple[Any, Source] | None = None, shared: bool = False,
                 owner: Any = None, cell_source: Source | None = None) -> None:
        super().__init__()
        self.name = name
        self.owner = owner       # the code object whose frame holds this cell, if it is real
        self.value = value
        self._pending = pending  # (real contents, source) read on first use
        self._shared = shared    # a real cell: writes would change the caller's state
        self.captured = 0        # how many functions made while tracing close over this cell
        self.cell_source = cell_source  # where a real cell of another function can be loaded

    def has_pending(self) -> bool:
        return self._pending is not None

    def get(self, tx) -> VariableTracker:
        if self._pending is not None:
            from .builder import wrap

            contents, source = self._pending
            self._pending = None
            self.value = wrap(tx, contents, source)
        if self.value is None:
            raise Unsupported("Unsupported exception handling",
                              f"free variable {self.name!r} referenced before assignment")
        return self.value

    def set(self, value: VariableTracker | None) -> None:
        if self._shared:
            raise Unsupported("Unsupported mutation",
                              f"`nonlocal {self.name}` assignment to a cell of an enclosing call")
        self._pending = None
        self.value = value

    def store(self, tx, value: VariableTracker) -> None:
        """STORE_DEREF. A real cell of a function the frame reached (one box per cell) gets
        the value after the graph, from the ledger. The compiled frame's own free variables
        are refused (`set`): another function reached in the trace may share the cell."""
        if self._shared and self.cell_source is not None:
            tx.output.side_effects.store_cell(self, value)
            self._pending = None
            self.value = value
            return
        self.set(value)

    def current(self) -> VariableTracker | None:
        """What the trace put in the cell (None if it holds what it held before the call)."""
        return None if self._pending is not None or self._shared else self.value

    def __repr__(self) -> str:
        return f"CellBox({self.name})"


class BaseUserFunctionVariable(VariableTracker):
    """What inlining needs from a function: code, globals, defaults, closure."""

    __slots__ = ()

    def get_code(self) -> types.CodeType:
        raise NotImplementedError

    def get_globals(self) -> dict:
        raise NotImplementedError

    def defaults(self) -> tuple[list[VariableTracker], dict[str, VariableTracker]]:
        raise NotImplementedError

    def closure_boxes(self, tx) -> dict[str, CellBox]:
        raise NotImplementedError

    def python_type(self) -> type:
        return types.FunctionType

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return tx.inline_call(self, list(args), dict(kwargs))


class UserFunctionVariable(BaseUserFunctionVariable):
    """A real Python function of the user's program."""

    __slots__ = ("fn",)

    def __init__(self, fn: types.FunctionType, source: Source | None = None) -> None:
        super().__init__(source)
        self.fn = fn

    def get_code(self) -> types.CodeType:
        return self.fn.__code__

    def get_globals(self) -> dict:
        return self.fn.__globals__

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if self.fn is _FUNCTION_APPLY and args:
            # torch.autograd.Function.apply, however it was reached (`Cls.apply`, super().apply,
            # a bound method kept in a variable): its C part runs forward and backward.
            from .autograd_function import call_apply

            return call_apply(tx, list(args), dict(kwargs))
        return tx.inline_call(self, list(args), dict(kwargs))

    def defaults(self) -> tuple[list, dict]:
        # Defaults are read at call time from the function object, so they are guarded.
        positional = [self._wrap_attr_item(i, "__defaults__", v) for i, v in enumerate(self.fn.__defaults__ or ())]
        keyword = {k: self._wrap_attr_item(k, "__kwdefaults__", v) for k, v in (self.fn.__kwdefaults__ or {}).items()}
        return positional, keyword

    def _wrap_attr_item(self, key, attr: str, value: Any) -> VariableTracker | LazyDefault:
        from .constant import is_constant_type

        if self.source is None:
            if is_constant_type(value) or (type(value) is tuple and all(is_constant_type(v) for v in value)):
                return ConstantVariable(value)
            raise Unsupported("Unsupported value type", f"a default argument of {self.fn.__qualname__}")
        return LazyDefault(value, ItemSource(AttrSource(self.source, attr), key))

    def closure_boxes(self, tx) -> dict[str, CellBox]:
        code = self.fn.__code__
        cells = self.fn.__closure__ or ()
        boxes = {}
        for i, (name, cell) in enumerate(zip(code.co_freevars, cells)):
            known = tx.output.objects.get(id(cell))
            if isinstance(known, CellBox):
                boxes[name] = known  # one box per real cell: functions sharing it see one value
                continue
            cell_source = ItemSource(AttrSource(self.source, "__closure__"), i) if self.source is not None else None
            source = AttrSource(cell_source, "cell_contents") if cell_source is not None else None
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell: reading it raises NameError in the callee
                boxes[name] = CellBox(name, shared=True, cell_source=cell_source)
                continue
            if source is None:
                from .constant import is_constant_type

                if not is_constant_type(contents):
                    raise Unsupported("Unsupported value type",
                                      f"closure variable {name!r} of {self.fn.__qualname__} has no source")
                boxes[name] = CellBox(name, ConstantVariable(contents), shared=True)
            else:
                boxes[name] = CellBox(name, pending=(contents, source), shared=True, cell_source=cell_source)
            if cell_source is not None:
                tx.output.objects[id(cell)] = boxes[name]
        return boxes

    def var_getattr(self, tx, name: str) -> VariableTracker:
        from ..polyfills import real_function_of, stand_in_for

        real = real_function_of(self.fn) if self.source is None else None
        if real is not None and stand_in_for(getattr(real, name, None)) is not None:
            return UserFunctionVariable(stand_in_for(getattr(real, name)))  # itertools.chain.from_iterable
        if name == "__class__":
            return ConstantVariable(self.python_type())
        if name == "__code__":
            if self.source is None:
                return ConstantVariable(self.fn.__code__)
            from ..guards import GuardKind

            source = AttrSource(self.source, name)  # the guard every traced function has (builder.wrap)
            tx.output.guards.add(GuardKind.ID_MATCH, source, self.fn.__code__, tx.output.user_line)
            return ConstantVariable(self.fn.__code__, source)
        if (name in _FUNCTION_ATTRIBUTES and hasattr(types.FunctionType, name)) or name in vars(self.fn):
            value = getattr(self.fn, name)
            if self.source is None:
                # A function fixed for the program (a stand-in, a class's function read without a source).
                if not is_constant_type(value):
                    raise Unsupported("Unsupported attribute access", f"function attribute {name!r} without a source")
                return ConstantVariable(value)
            # Assignable (functools.wraps sets them; two closures of one def share the entry).
            from .builder import wrap

            return wrap(tx, value, AttrSource(self.source, name))
        if not hasattr(types.FunctionType, name) and self.source is not None:
            # Guarded absent from its __dict__, where a later call might find it assigned.
            from ..guards import GuardKind
            from .exceptions import raise_observed

            tx.output.guards.add(GuardKind.NOT_IN_DICT, self.source, (name,), tx.output.user_line)
            raise_observed(AttributeError, f"'function' object has no attribute '{name}'")
        raise Unsupported("Unsupported attribute access", f"function attribute {name!r}")

    def reconstruct(self, codegen) -> None:
        if self.source is None:
            from ..polyfills import real_function_of

            real = real_function_of(self.fn)
            if real is not None:  # a stand-in is rebuilt as the library function it replaces
                codegen.load_const(real)
                return
        super().reconstruct(codegen)

    def __repr__(self) -> str:
        return f"UserFunctionVariable({self.fn.__qualname__})"


# Function attributes read as data (besides the function's own __dict__, e.g. __wrapped__).
_FUNCTION_ATTRIBUTES = frozenset({"__name__", "__qualname__", "__module__", "__doc__", "__defaults__",
                                  "__kwdefaults__", "__annotations__", "__type_params__", "__dict__"})


class LazyDefault:
    """A default argument value, wrapped (and so guarded) only if a call actually uses it."""

    __slots__ = ("value", "source")

    def __init__(self, value: Any, source: Source) -> None:
        self.value, self.source = value, source


class NestedFunctionVariable(BaseUserFunctionVariable):
    """A function created by MAKE_FUNCTION inside the traced code."""

    __slots__ = ("code", "f_globals", "positional_defaults", "keyword_defaults", "closure", "attrs")

    def __init__(self, code: types.CodeType, f_globals: dict, positional_defaults: list[VariableTracker],
                 keyword_defaults: dict[str, VariableTracker], closure: tuple[CellBox, ...]) -> None:
        super().__init__()
        # What the program set on the function: its __dict__, and the names functools.wraps
        # copies (__name__, __doc__...); MAKE_FUNCTION sets __annotations__.
        self.attrs: dict[str, VariableTracker] = {}
        self.code = code
        self.f_globals = f_globals
        self.positional_defaults = positional_defaults
        self.keyword_defaults = keyword_defaults
        self.closure = closure

    def get_code(self) -> types.CodeType:
        return self.code

    def get_globals(self) -> dict:
        return self.f_globals

    def defaults(self) -> tuple[list[VariableTracker], dict[str, VariableTracker]]:
        return list(self.positional_defaults), dict(self.keyword_defaults)

    def closure_boxes(self, tx) -> dict[str, CellBox]:
        return dict(zip(self.code.co_freevars, self.closure))

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name]
        if name in ("__name__", "__qualname__"):
            return ConstantVariable(getattr(self.code, "co_" + name.strip("_")))
        if name == "__class__":
            return ConstantVariable(types.FunctionType)
        if name == "__code__":
            return ConstantVariable(self.code)
        if name == "__module__":
            return ConstantVariable(self.f_globals.get("__name__"))
        if name == "__defaults__":  # what MAKE_FUNCTION set (a store of it goes to attrs)
            return TupleVariable(list(self.positional_defaults)) if self.positional_defaults else ConstantVariable(None)
        if name == "__dict__":
            return FunctionDictVariable(self)
        if name == "__annotations__":
            self.attrs[name] = DictVariable({})  # made on first read, then the same dict
            return self.attrs[name]
        if name in ("__doc__", "__type_params__") and hasattr(types.FunctionType, name):
            return ConstantVariable(getattr(_made_like(self.code), name))
        if not hasattr(types.FunctionType, name):
            from .exceptions import raise_observed

            raise_observed(AttributeError, f"'function' object has no attribute '{name}'")
        raise Unsupported("Unsupported attribute access", f"function attribute {name!r}")

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        if hasattr(types.FunctionType, name) and name not in _ASSIGNABLE:
            raise Unsupported("Unsupported mutation", f"assignment to the function attribute {name!r}")
        self.attrs[name] = value

    def children(self) -> list[VariableTracker]:
        cells = [box.current() for box in self.closure]
        return [*self.positional_defaults, *self.keyword_defaults.values(), *(v for v in cells if v is not None),
                *self.attrs.values()]

    def reconstruct(self, codegen) -> None:
        """MAKE_FUNCTION again, in the compiled frame, then the cells filled with what the
        trace left in them (after the function exists, so a function can hold itself). A
        cell of the compiled frame is that frame's own cell; a real cell of another function
        is loaded from it; a cell of an inlined call, which no longer exists, is made anew,
        which is exact only while this is the one function sharing it."""
        from ..bytecode import create_instruction, emit

        if id(self) in _REBUILDING:
            raise Unsupported("Unsupported mutation",
                              f"functions {self.code.co_qualname} and others hold each other in their closures")
        cells = [(box, self._cell_kind(box, codegen)) for box in self.closure]
        # MAKE_FUNCTION gives the function the compiled frame's globals; one of another module
        # (contextlib's `helper`, made by @contextmanager) is made with its own.
        foreign = self.f_globals is not codegen.f_globals
        _REBUILDING.add(id(self))
        try:
            for box, kind in cells:
                if kind == "new":
                    codegen.load_callable_const(types.CellType)
                    codegen.call(0)
                    codegen.store_local(_cell_temp(box))
            if foreign:
                codegen.load_callable_const(types.FunctionType)
                for value in (self.code, self.f_globals, self.code.co_name):
                    codegen.load_const(value)
            flags = 0
            if self.positional_defaults:
                for value in self.positional_defaults:
                    codegen.reconstruct(value)
                codegen.build(tuple, len(self.positional_defaults))
                flags |= 1
            elif foreign:
                codegen.load_const(None)
            if self.keyword_defaults and not foreign:
                self._build_keyword_defaults(codegen)
                flags |= 2
            if self.closure:
                for box, kind in cells:
                    if kind == "frame":
                        codegen.load_cell(box.name)
                    elif kind == "new":
                        codegen.load_local(_cell_temp(box))
                    else:
                        codegen.load_source(box.cell_source)
                codegen.build(tuple, len(self.closure))
                flags |= 8
            elif foreign:
                codegen.load_const(None)
            if foreign:
                codegen.call(5)
                if self.keyword_defaults:
                    codegen.append(*emit.create_dup_top())
                    self._build_keyword_defaults(codegen)
                    codegen.append(create_instruction("SWAP", arg=2),
                                   create_instruction("STORE_ATTR", argval="__kwdefaults__"))
            else:
                codegen.append(*emit.create_make_function(self.code, flags))
            for box, kind in cells:
                value = box.current()
                if value is None or kind == "real":
                    continue
                if value is self:
                    codegen.append(*emit.create_dup_top())
                else:
                    codegen.reconstruct(value)
                if kind == "frame":
                    codegen.store_local(box.name)
                else:
                    codegen.load_local(_cell_temp(box))
                    codegen.append(create_instruction("STORE_ATTR", argval="cell_contents"))
            for name, value in self.attrs.items():
                codegen.append(*emit.create_dup_top())
                codegen.reconstruct(value)
                codegen.append(create_instruction("SWAP", arg=2), create_instruction("STORE_ATTR", argval=name))
        finally:
            _REBUILDING.discard(id(self))

    def _build_keyword_defaults(self, codegen) -> None:
        for key, value in self.keyword_defaults.items():
            codegen.load_const(key)
            codegen.reconstruct(value)
        codegen.build(dict, len(self.keyword_defaults))

    @staticmethod
    def _cell_kind(box: CellBox, codegen) -> str:
        if box.owner is codegen.code:
            return "frame"
        if box.cell_source is not None:
            return "real"
        if box.owner is None and box.current() is None:
            raise Unsupported("Unsupported mutation", f"closure cell {box.name!r} cannot be reached after the graph")
        if box.captured > 1:
            raise Unsupported("Unsupported mutation",
                              f"closure cell {box.name!r} of an inlined call is shared by several functions "
                              "that outlive the graph")
        return "new"

    def __repr__(self) -> str:
        return f"NestedFunctionVariable({self.code.co_qualname})"


_REBUILDING: set[int] = set()  # nested functions being rebuilt, to refuse closures that hold each other
# Function attributes a program may assign (functools.wraps does); the others of FunctionType
# are refused. Anything else goes to the function's __dict__.
_ASSIGNABLE = frozenset({"__name__", "__qualname__", "__doc__", "__module__", "__annotations__", "__type_params__"})


def _made_like(code: types.CodeType) -> types.FunctionType:
    """A function made from `code` (with empty cells), to read what MAKE_FUNCTION gives it."""
    return types.FunctionType(code, {}, None, None, tuple(types.CellType() for _ in code.co_freevars))


class FunctionDictVariable(VariableTracker):
    """`fn.__dict__` of a function made while tracing: a view of its assigned attributes."""

    __slots__ = ("fn",)

    def __init__(self, fn: NestedFunctionVariable) -> None:
        super().__init__()
        self.fn = fn

    def python_type(self) -> type:
        return dict

    def entries(self) -> dict[str, VariableTracker]:
        return {k: v for k, v in self.fn.attrs.items() if k not in _ASSIGNABLE}

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in ("update", "get", "__getitem__", "items"):
            return MethodVariable(self, name)
        raise Unsupported("Unsupported attribute access", f"function.__dict__.{name}")

    def call_method(self, tx, name: str, args, kwargs) -> VariableTracker:
        from .iterators import unpack

        if name == "update" and len(args) <= 1:
            pairs = [tx.unpack_iterable(pair) for pair in unpack(tx, args[0].call_method(tx, "items", [], {}))] \
                if args else []
            for key, value in [*pairs, *((ConstantVariable(k), v) for k, v in kwargs.items())]:
                self.fn.store_attr(tx, key.as_python_constant(), value)
            return ConstantVariable(None)
        if name == "items" and not args and not kwargs:
            from .containers import ListVariable

            return ListVariable([TupleVariable([ConstantVariable(k), v]) for k, v in self.entries().items()])
        if name in ("__getitem__", "get") and args and args[0].is_python_constant():
            key = args[0].as_python_constant()
            if key in self.entries():
                return self.entries()[key]
            if name == "get":
                return args[1] if len(args) > 1 else ConstantVariable(None)
            from .exceptions import raise_observed

            raise_observed(KeyError, key)
        raise Unsupported("Unsupported method call", f"function.__dict__.{name}")


def _cell_temp(box: CellBox) -> str:
    return f"___cell_{box.name}_{id(box)}"


class UserMethodVariable(VariableTracker):
    """A user function bound to `obj`: calling it inlines the function with `obj` first."""

    __slots__ = ("fn", "obj")

    def __init__(self, fn: BaseUserFunctionVariable, obj: VariableTracker, source: Source | None = None) -> None:
        super().__init__(source)
        self.fn, self.obj = fn, obj

    def python_type(self) -> type:
        return types.MethodType

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return self.fn.call_function(tx, [self.obj, *args], kwargs)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "__func__":
            return self.fn
        if name == "__self__":
            return self.obj
        if name == "__class__":
            return ConstantVariable(types.MethodType)
        return self.fn.var_getattr(tx, name)  # a bound method forwards the rest to its function

    def children(self) -> list[VariableTracker]:
        return [self.fn, self.obj]

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        # A new bound method object, as `obj.name` makes one on every read.
        codegen.load_callable_const(types.MethodType)
        codegen.reconstruct(self.fn)
        codegen.reconstruct(self.obj)
        codegen.call(2)

    def __repr__(self) -> str:
        return f"UserMethodVariable({self.fn!r}, {self.obj!r})"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _names(names: list[str]) -> str:
    """CPython's list of argument names: 'a', 'a' and 'b', 'a', 'b', and 'c'."""
    quoted = [repr(n) for n in names]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def bind_arguments(tx, fn: BaseUserFunctionVariable, args: list[VariableTracker],
                   kwargs: dict[str, VariableTracker]) -> dict[str, VariableTracker]:
    """The callee's initial locals, bound as CPython binds a call (or the TypeError it raises)."""
    from .builder import wrap

    code = fn.get_code()
    name = code.co_qualname
    names = code.co_varnames
    argcount, posonly, kwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    positional, keyword_only = names[:argcount], names[argcount:argcount + kwonly]
    index = argcount + kwonly
    varargs = names[index] if code.co_flags & CO_VARARGS else None
    varkw = names[index + (1 if varargs else 0)] if code.co_flags & CO_VARKEYWORDS else None

    def fail(message: str) -> Unsupported:
        # The TypeError the call raises, in CPython's words: a try block in the trace may
        # handle it; one that escapes makes the frame run eagerly, raising it from the line.
        from .exceptions import raise_observed

        raise_observed(TypeError, f"{name}() {message}")

    bound: dict[str, VariableTracker] = dict(zip(positional, args))
    extra = args[argcount:]
    if extra and varargs is None:
        least = argcount - len(fn.defaults()[0])
        takes = _count(argcount, "positional argument") if least == argcount \
            else f"from {least} to {argcount} positional arguments"
        raise fail(f"takes {takes} but {len(args)} {'was' if len(args) == 1 else 'were'} given")
    if varargs is not None:
        bound[varargs] = TupleVariable(list(extra))
    extra_kw: dict[str, VariableTracker] = {}
    for key, value in kwargs.items():
        if key in keyword_only or key in positional[posonly:]:
            if key in bound:
                raise fail(f"got multiple values for argument {key!r}")
            bound[key] = value
        elif varkw is not None:
            extra_kw[key] = value
        else:
            raise fail(f"got an unexpected keyword argument {key!r}")
    positional_defaults, keyword_defaults = fn.defaults()
    first_default = argcount - len(positional_defaults)
    missing = [param for i, param in enumerate(positional) if param not in bound and i < first_default]
    if missing:
        raise fail(f"missing {_count(len(missing), 'required positional argument')}: {_names(missing)}")
    for i, param in enumerate(positional):
        if param not in bound:
            bound[param] = positional_defaults[i - first_default]
    missing = [param for param in keyword_only if param not in bound and param not in keyword_defaults]
    if missing:
        raise fail(f"missing {_count(len(missing), 'required keyword-only argument')}: {_names(missing)}")
    for param in keyword_only:
        if param not in bound:
            bound[param] = keyword_defaults[param]
    if varkw is not None:
        bound[varkw] = DictVariable(extra_kw)
    return {k: wrap(tx, v.value, v.source) if isinstance(v, LazyDefault) else v for k, v in bound.items()}


class PartialVariable(VariableTracker):
    """`functools.partial(fn, *args, **keywords)`: calling it calls fn with them first."""

    __slots__ = ("fn", "args", "keywords", "instance_dict")

    def __init__(self, fn: VariableTracker, args: list[VariableTracker],
                 keywords: dict[str, VariableTracker], source: Source | None = None,
                 instance_dict: dict | None = None) -> None:
        super().__init__(source)
        self.fn, self.args, self.keywords = fn, list(args), dict(keywords)
        self.instance_dict = instance_dict  # the caller's partial's own attributes, read only

    def python_type(self) -> type:
        import functools

        return functools.partial

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        return self.fn.call_function(tx, [*self.args, *args], {**self.keywords, **kwargs})

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "func":
            return self.fn
        if name == "args":
            return TupleVariable(list(self.args))
        if name == "keywords":
            return DictVariable(dict(self.keywords))
        if name == "__class__":
            return ConstantVariable(self.python_type())
        if not hasattr(self.python_type(), name):
            # Made by the trace, which sets no attribute on it, its __dict__ is empty; the
            # caller's is asked, and the answer guarded.
            from ..guards import GuardKind
            from .exceptions import raise_observed

            if self.source is not None:
                present = name in self.instance_dict
                tx.output.guards.add(GuardKind.HASATTR, self.source, (name, present), tx.output.user_line, key=name)
                if present:
                    from .builder import wrap

                    return wrap(tx, self.instance_dict[name], AttrSource(self.source, name))
            raise_observed(AttributeError, f"'functools.partial' object has no attribute {name!r}")
        raise Unsupported("Unsupported attribute access", f"functools.partial.{name}")

    def children(self) -> list[VariableTracker]:
        return [self.fn, *self.args, *self.keywords.values()]

    def reconstruct(self, codegen) -> None:
        if self.source is not None:
            self.source.reconstruct(codegen)
            return
        import functools

        codegen.load_callable_const(functools.partial)
        for value in (self.fn, *self.args):
            codegen.reconstruct(value)
        for value in self.keywords.values():
            codegen.reconstruct(value)
        from ..bytecode import emit

        codegen.append(*emit.create_call(1 + len(self.args) + len(self.keywords), tuple(self.keywords)))


class PartialClassVariable(VariableTracker):
    """`functools.partial` itself: calling it makes a PartialVariable."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs) -> VariableTracker:
        if not args:
            raise Unsupported("Unsupported exception handling", "partial() without a function")
        return PartialVariable(args[0], args[1:], kwargs)
