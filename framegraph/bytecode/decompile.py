"""Python source for the code objects framegraph generates, for a person to read.

`decompile(code)` renders a replacement code object (the graph call, the rebuilding of what
the frame holds, the changes replayed, the instruction a break runs, the resume call) or a
resume function (a prologue that rebuilds the stack, then a jump into the original's body) as
a `def`. It works on the normal form of `decode`, with the version's remaining differences
(keywords through KW_NAMES or CALL_KW, f-string ops, END_FOR) handled where they are met.

What it renders: straight-line code, if/else, `and`/`or` and conditional expressions, for and
while loops with break and continue, a resume function entering a loop mid-iteration (the rest
of that iteration, then the loop), calls (keywords, `*args`, `**kwargs`), displays, f-strings,
subscripts, slices, unpacking, in-place operators and stores of every kind. What it refuses,
with `DecompileError` naming it: exception handling (`with`, `try`), nested functions and
comprehensions, generators, imports, `super()` and a few rare ops; the bytecode listing is then
the only view.

The rendering keeps the bytecode's order of evaluation: a value left on the stack while a
statement runs, or duplicated, is first kept in a temporary (`__t0`). Constants that are not
literals (functions framegraph calls, objects) are names (`__const0`) the result lists, so the
source re-executes (`Decompiled.build`) to what the bytecode computes.
"""

from __future__ import annotations

import builtins
import dataclasses
import math
import operator
import types
from typing import Any

from . import versions
from .decode import decode
from .instruction import Instruction

_INPLACE = {"+=": "iadd", "-=": "isub", "*=": "imul", "/=": "itruediv", "//=": "ifloordiv", "%=": "imod",
            "**=": "ipow", "@=": "imatmul", "<<=": "ilshift", ">>=": "irshift", "&=": "iand", "|=": "ior",
            "^=": "ixor"}
_UNARY = {"UNARY_NEGATIVE": "-", "UNARY_NOT": "not ", "UNARY_INVERT": "~", "UNARY_POSITIVE": "+"}
_CONVERSIONS = {1: "str", 2: "repr", 3: "ascii"}
_SKIPPED = frozenset({"NOP", "RESUME", "MAKE_CELL", "COPY_FREE_VARS", "TO_BOOL", "EXTENDED_ARG", "CACHE"})
_LOADS = frozenset({"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_NAME", "LOAD_CLASSDEREF"})
_STORES = frozenset({"STORE_FAST", "STORE_DEREF", "STORE_GLOBAL", "STORE_NAME"})
_CONDITIONAL = {"POP_JUMP_IF_FALSE": "{}", "POP_JUMP_IF_TRUE": "not {}", "POP_JUMP_IF_NONE": "{} is not None",
                "POP_JUMP_IF_NOT_NONE": "{} is None"}  # the condition under which the jump is not taken
_TAKEN = {"POP_JUMP_IF_FALSE": "not {}", "POP_JUMP_IF_TRUE": "{}", "POP_JUMP_IF_NONE": "{} is None",
          "POP_JUMP_IF_NOT_NONE": "{} is not None"}


class DecompileError(Exception):
    """The code has a shape the decompiler does not render; the message names it."""


@dataclasses.dataclass
class Decompiled:
    source: str  # a `def` statement
    name: str
    constants: dict[str, Any]  # the names the source gives non-literal constants

    def build(self, f_globals: dict, free: dict[str, Any] | None = None) -> types.FunctionType:
        """The function the source defines, with `f_globals`' names (a copy, with the constants
        and the free variables' values added) as its globals."""
        namespace = {**f_globals, **self.constants, **(free or {})}
        exec(compile(self.source, f"<decompiled {self.name}>", "exec"), namespace)
        return namespace[self.name]


class _Null:
    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


_NOT_CONSTANT = object()


@dataclasses.dataclass
class _Expr:
    text: str
    simple: bool = False  # a name or a literal: reading it twice, or later, changes nothing
    iterator: bool = False  # what GET_ITER made (a `break` pops it)
    inplace: tuple[str, str, str] | None = None  # (left, operator, right) of `left op= right`
    constant: Any = _NOT_CONSTANT  # what LOAD_CONST loaded
    iterable: str | None = None  # for GET_ITER's result: what it iterates (a `for` header's)

    def __str__(self) -> str:
        return self.text


@dataclasses.dataclass
class _Display:
    """A list, set or dict display being built (BUILD_LIST 0, then LIST_EXTEND...)."""
    kind: str  # "[]", "{}" (set) or "dict"
    parts: list[str]

    @property
    def text(self) -> str:
        if self.kind == "[]":
            return f"[{', '.join(self.parts)}]"
        if self.kind == "dict":
            return f"{{{', '.join(self.parts)}}}"
        return f"{{{', '.join(self.parts)}}}" if self.parts else "set()"

    simple = False
    iterator = False
    inplace = None
    constant = _NOT_CONSTANT
    iterable = None

    def __str__(self) -> str:
        return self.text


@dataclasses.dataclass
class _Loop:
    head: int
    exit: int


@dataclasses.dataclass
class _Block:
    lines: list[str]
    stack: list
    end: int
    terminated: bool  # the last statement leaves the block (return, raise, break, continue)


def decompile(code: types.CodeType) -> Decompiled:
    return _Decompiler(code).run()


class _Decompiler:
    def __init__(self, code: types.CodeType) -> None:
        self.code = code
        self.insts: list[Instruction] = decode(code)
        self.index = {id(inst): i for i, inst in enumerate(self.insts)}
        self.constants: dict[str, Any] = {}
        self.temps = 0
        self.assigned = {i.argval for i in self.insts if i.opname in _STORES or i.opname.startswith("DELETE_")}
        # loop head -> index of the last jump back to it
        self.loop_ends: dict[int, int] = {}
        for i, inst in enumerate(self.insts):
            if inst.target is not None and self.index[id(inst.target)] <= i:
                self.loop_ends[self.index[id(inst.target)]] = i
        self.kw_names: tuple[str, ...] = ()

    # ---- entry ---------------------------------------------------------------------------------

    def run(self) -> Decompiled:
        code = self.code
        if code.co_flags & (0x20 | 0x80 | 0x100 | 0x200):  # generator, coroutine, async generator
            raise DecompileError("a generator or coroutine")
        block = self.block(0, len(self.insts), [], None, top=True)
        if not block.terminated:
            block.lines.append("return None")
        params = list(code.co_varnames[:code.co_argcount])
        if code.co_posonlyargcount:
            params.insert(code.co_posonlyargcount, "/")
        position = code.co_argcount
        if code.co_flags & 0x04:
            params.append("*" + code.co_varnames[position + code.co_kwonlyargcount])
        elif code.co_kwonlyargcount:
            params.append("*")
        params += code.co_varnames[position:position + code.co_kwonlyargcount]
        if code.co_flags & 0x08:
            params.append("**" + code.co_varnames[position + code.co_kwonlyargcount + bool(code.co_flags & 0x04)])
        header = [f"# {name} = {_short_repr(value)}" for name, value in self.constants.items()]
        declared = sorted({i.argval for i in self.insts if i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL")}
                          | {i.argval for i in self.insts if i.opname in ("STORE_DEREF", "DELETE_DEREF")
                             and i.argval in code.co_freevars})
        # (a free variable of the original is a global of the rendering: it stands alone)
        body = ["    " + line for line in ([f"global {', '.join(declared)}"] if declared else []) + block.lines]
        name = code.co_name if code.co_name.isidentifier() else "__" + code.co_name.strip("<>")
        source = "\n".join(header + [f"def {name}({', '.join(params)}):"] + body) + "\n"
        return Decompiled(source, name, dict(self.constants))

    # ---- regions -------------------------------------------------------------------------------

    def block(self, start: int, stop: int, stack: list, loop: _Loop | None, top: bool = False,
              entered_loop: int | None = None) -> _Block:
        """Statements of instructions [start, stop), entered with `stack`; `top` allows a forward
        jump past the rest (a resume function's prologue jumping into the body)."""
        lines: list[str] = []
        stack = list(stack)
        i = start
        while i < stop:
            inst = self.insts[i]
            name = inst.opname
            if i in self.loop_ends and i != entered_loop and name != "FOR_ITER" and (loop is None or loop.head != i):
                i = self.while_loop(i, stack, lines, loop)
                continue
            if inst.exn_tab_entry is not None:
                raise DecompileError("exception handling (a `with` or `try` block)")
            if name in ("RETURN_VALUE", "RETURN_CONST"):
                value = self.pop(stack) if name == "RETURN_VALUE" else self.const(inst.argval)
                lines.append(f"return {value}")
                return _Block(lines, stack, i + 1, True)
            if name == "RAISE_VARARGS":
                parts = [str(self.pop(stack)) for _ in range(inst.argval)][::-1]
                lines.append("raise" if not parts else f"raise {parts[0]}" + (f" from {parts[1]}" if len(parts) > 1 else ""))
                return _Block(lines, stack, i + 1, True)
            if name in ("JUMP", "JUMP_NO_INTERRUPT"):
                target = self.index[id(inst.target)]
                if loop is not None and target == loop.head:
                    lines.append("continue")
                    return _Block(lines, stack, i + 1, True)
                if loop is not None and target == loop.exit:
                    lines.append("break")
                    return _Block(lines, stack, i + 1, True)
                if target == stop:
                    return _Block(lines, stack, i + 1, False)
                if target < i and target in self.loop_ends and (loop is None or loop.head != target) \
                        and (top or self.loop_exit(target) <= stop):
                    # a resume function that entered a loop mid-iteration: the loop, from its head
                    self.materialize(stack, lines)
                    i = self.loop_from(target, stack, lines)
                    continue
                if target > i and top:
                    self.materialize(stack, lines)
                    i = target
                    continue
                raise DecompileError(f"a jump from offset {inst.offset} that is not structured")
            if name in _CONDITIONAL or name in ("JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"):
                i = self.conditional(i, stack, lines, loop, stop, top)
                if i < 0:
                    return _Block(lines, stack, -i, True)
                continue
            if name == "FOR_ITER":
                self.materialize(stack, lines, keep_top=1)
                i = self.for_loop(i, stack, lines)
                continue
            i = self.simple(i, stack, lines)
        return _Block(lines, stack, stop, False)

    def conditional(self, i: int, stack: list, lines: list[str], loop: _Loop | None, stop: int, top: bool) -> int:
        """An if statement, `and`/`or`, or a conditional expression; the index to go on at
        (negative: the block ends terminated there)."""
        inst = self.insts[i]
        target = self.index[id(inst.target)]
        if inst.opname in ("JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"):  # 3.11's and/or
            left = self.pop(stack)
            return self.short_circuit(left, "and" if "FALSE" in inst.opname else "or", i + 1, target, stack)
        previous = self.insts[i - 1] if i else None
        if previous is not None and previous.opname == "TO_BOOL" and i > 1:
            previous = self.insts[i - 2]
        if previous is not None and previous.opname == "COPY" and previous.argval == 1 \
                and self.insts[i + 1].opname == "POP_TOP" and target > i and inst.opname in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE"):
            self.pop(stack)  # the copy the jump consumes
            left = self.pop(stack)
            return self.short_circuit(left, "and" if inst.opname == "POP_JUMP_IF_FALSE" else "or", i + 2, target, stack)
        condition = self.pop(stack)
        self.materialize(stack, lines)
        if loop is not None and target in (loop.head, loop.exit):
            statement = "continue" if target == loop.head else "break"
            lines.append(f"if {_TAKEN[inst.opname].format(condition)}:")
            lines.append(f"    {statement}")
            return i + 1
        if target <= i and loop is None and top and self.loop_ends.get(target) == i:
            # a resume function entered a loop mid-iteration, whose last instruction jumps back
            # while the loop goes on: the loop, from its head, if it does
            lines.append(f"if {_TAKEN[inst.opname].format(condition)}:")
            looping: list[str] = []
            self.loop_from(target, list(stack), looping)
            lines += ["    " + line for line in looping]
            return i + 1
        if target <= i:
            raise DecompileError(f"a conditional jump back from offset {inst.offset} outside a loop")
        test = _CONDITIONAL[inst.opname].format(condition)
        then_stop, else_stop = target, None
        last = self.insts[target - 1]
        if last.opname in ("JUMP", "JUMP_NO_INTERRUPT") and target - 1 > i:
            after = self.index[id(last.target)]
            if after > target and (loop is None or after not in (loop.head, loop.exit)) and (after <= stop or top):
                then_stop, else_stop = target - 1, after
        then = self.block(i + 1, then_stop, stack, loop)
        other = self.block(target, else_stop, stack, loop) if else_stop is not None else None
        if other is not None and not then.lines and not other.lines \
                and len(then.stack) == len(other.stack) == len(stack) + 1:
            stack.append(_Expr(f"({then.stack[-1]} if {test} else {other.stack[-1]})"))
            return else_stop
        if len(then.stack) != len(stack) and not then.terminated \
                or other is not None and len(other.stack) != len(stack) and not other.terminated:
            raise DecompileError(f"a branch at offset {inst.offset} that leaves values on the stack")
        lines.append(f"if {test}:")
        lines += ["    " + line for line in then.lines or ["pass"]]
        if other is not None and other.lines:
            lines.append("else:")
            lines += ["    " + line for line in other.lines]
        if other is not None:
            if then.terminated and other.terminated:
                return -else_stop
            return else_stop
        return target

    def short_circuit(self, left, op: str, start: int, join: int, stack: list) -> int:
        right = self.block(start, join, stack, None)
        if right.lines or len(right.stack) != len(stack) + 1:
            raise DecompileError(f"an `{op}` whose right side is not an expression")
        stack.append(_Expr(f"({left} {op} {right.stack[-1]})"))
        return join

    def for_loop(self, i: int, stack: list, lines: list[str], entered: bool = False) -> int:
        """`for ... in <iterator on the stack>:`; the index after the loop."""
        inst = self.insts[i]
        # Everything up to where FOR_ITER ends the loop is its body: the compiler puts a
        # `break`'s path (pop the iterator, then return) after the last jump back.
        body_stop = self.index[id(inst.target)]
        exit_ = body_stop + len(versions.FOR_ITER_EXIT)
        if i not in self.loop_ends:
            raise DecompileError(f"a FOR_ITER at offset {inst.offset} with no jump back")
        iterator = stack[-1]
        # `for x in y` calls iter(y) itself; inside the body the iterator is the loop's
        header = iterator.iterable or str(iterator)
        item = _Expr("__item", simple=True)
        body = self.block(i + 1, body_stop, stack[:-1] + [_Expr(str(iterator), simple=True, iterator=True), item],
                          _Loop(i, exit_))
        statements = body.lines
        target = "__item"
        if statements and statements[0].endswith(" = __item") and not statements[0].startswith(" "):
            target, statements = statements[0][:-len(" = __item")], statements[1:]
        if statements and statements[-1] == "continue":
            statements = statements[:-1]
        lines.append(f"for {target} in {header}:")
        lines += ["    " + line for line in statements or ["pass"]]
        stack.pop()
        return exit_

    def loop_exit(self, head: int) -> int:
        inst = self.insts[head]
        if inst.opname == "FOR_ITER":
            return self.index[id(inst.target)] + len(versions.FOR_ITER_EXIT)
        return self.loop_ends[head] + 1

    def loop_from(self, head: int, stack: list, lines: list[str]) -> int:
        if self.insts[head].opname == "FOR_ITER":
            return self.for_loop(head, stack, lines)
        return self.while_loop(head, stack, lines, None)

    def while_loop(self, head: int, stack: list, lines: list[str], outer: _Loop | None) -> int:
        self.materialize(stack, lines)
        end = self.loop_ends[head]
        body = self.block(head, end + 1, stack, _Loop(head, end + 1), entered_loop=head)
        statements = body.lines
        if not body.terminated:
            statements = statements + ["break"]  # falling off the last instruction leaves the loop
        if statements and statements[-1] == "continue":
            statements = statements[:-1]
        lines.append("while True:")
        lines += ["    " + line for line in statements or ["pass"]]
        return end + 1

    # ---- one instruction -------------------------------------------------------------------------

    def simple(self, i: int, stack: list, lines: list[str]) -> int:
        inst = self.insts[i]
        name, arg = inst.opname, inst.argval
        push = stack.append
        if name in _SKIPPED:
            return i + 1
        if name in _LOADS:
            push(_Expr(arg, simple=arg not in self.assigned))
        elif name == "LOAD_CONST":
            push(self.const(arg))
        elif name == "PUSH_NULL":
            push(NULL)
        elif name == "LOAD_ATTR":
            push(_Expr(f"{self.pop(stack)}.{arg}"))
        elif name == "LOAD_METHOD":
            method = _Expr(f"{self.pop(stack)}.{arg}")
            stack.extend([method, NULL] if versions.NULL_AFTER_CALLABLE else [NULL, method])
        elif name == "LOAD_ASSERTION_ERROR":
            push(_Expr("AssertionError", simple=True))
        elif name in _STORES:
            value = self.pop(stack)
            if getattr(value, "inplace", None) is not None and value.inplace[0] == arg:
                self.statement(stack, lines, f"{arg} {value.inplace[1]} {value.inplace[2]}")
            else:
                self.statement(stack, lines, f"{arg} = {value}")
        elif name == "STORE_ATTR":
            obj, value = self.pop(stack), self.pop(stack)
            self.statement(stack, lines, f"{obj}.{arg} = {value}")
        elif name == "STORE_SUBSCR":
            key, container, value = self.pop(stack), self.pop(stack), self.pop(stack)
            self.statement(stack, lines, f"{container}[{key}] = {value}")
        elif name == "STORE_SLICE":
            end, begin, container, value = (self.pop(stack) for _ in range(4))
            self.statement(stack, lines, f"{container}[{_bound(begin)}:{_bound(end)}] = {value}")
        elif name in ("DELETE_FAST", "DELETE_DEREF", "DELETE_GLOBAL", "DELETE_NAME"):
            self.statement(stack, lines, f"del {arg}")
        elif name == "DELETE_ATTR":
            self.statement(stack, lines, f"del {self.pop(stack)}.{arg}")
        elif name == "DELETE_SUBSCR":
            key, container = self.pop(stack), self.pop(stack)
            self.statement(stack, lines, f"del {container}[{key}]")
        elif name == "POP_TOP":
            value = self.pop(stack)
            if not getattr(value, "simple", False) and not getattr(value, "iterator", False):
                self.statement(stack, lines, str(value))
        elif name == "BINARY_OP":
            right, left = self.pop(stack), self.pop(stack)
            if arg in _INPLACE:
                function = self.const(getattr(operator, _INPLACE[arg]))
                push(_Expr(f"{function}({left}, {right})", inplace=(str(left), arg, str(right))))
            else:
                push(_Expr(f"({left} {arg} {right})"))
        elif name == "COMPARE_OP":
            right, left = self.pop(stack), self.pop(stack)
            push(_Expr(f"({left} {arg} {right})"))
        elif name in ("IS_OP", "CONTAINS_OP"):
            right, left = self.pop(stack), self.pop(stack)
            op = ("is not" if arg else "is") if name == "IS_OP" else ("not in" if arg else "in")
            push(_Expr(f"({left} {op} {right})"))
        elif name in _UNARY:
            push(_Expr(f"({_UNARY[name]}{self.pop(stack)})"))
        elif name == "CALL_INTRINSIC_1" and arg in (5, 6):  # INTRINSIC_UNARY_POSITIVE, LIST_TO_TUPLE
            value = self.pop(stack)
            push(_Expr(f"(+{value})" if arg == 5 else f"{self.const(tuple)}({value})"))
        elif name == "BINARY_SUBSCR":
            key, container = self.pop(stack), self.pop(stack)
            push(_Expr(f"{container}[{key}]"))
        elif name == "BINARY_SLICE":
            end, begin, container = self.pop(stack), self.pop(stack), self.pop(stack)
            push(_Expr(f"{container}[{_bound(begin)}:{_bound(end)}]"))
        elif name == "BUILD_SLICE":
            parts = [str(self.pop(stack)) for _ in range(arg)][::-1]
            push(_Expr(f"{self.const(slice)}({', '.join(parts)})"))
        elif name in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"):
            parts = [str(self.pop(stack)) for _ in range(arg)][::-1]
            if name == "BUILD_TUPLE":
                push(_Expr(f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"))
            else:
                push(_Display("[]" if name == "BUILD_LIST" else "{}", parts))
        elif name == "BUILD_MAP":
            items = [(self.pop(stack), self.pop(stack)) for _ in range(arg)][::-1]
            push(_Display("dict", [f"{key}: {value}" for value, key in items]))
        elif name == "BUILD_CONST_KEY_MAP":
            keys = self.pop(stack).constant
            values = [str(self.pop(stack)) for _ in keys][::-1]
            push(_Display("dict", [f"{self.const(k)}: {v}" for k, v in zip(keys, values)]))
        elif name in ("LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE", "LIST_APPEND", "SET_ADD"):
            value = self.pop(stack)
            display = stack[-arg]
            if not isinstance(display, _Display) and name in ("LIST_APPEND", "SET_ADD"):
                # a comprehension's list or set, handed to a resume function: it is a real one
                self.statement(stack, lines, f"{display}.{'append' if name == 'LIST_APPEND' else 'add'}({value})")
                return i + 1
            if not isinstance(display, _Display):
                raise DecompileError(f"{name} outside a display")
            star = {"LIST_EXTEND": "*", "SET_UPDATE": "*", "DICT_UPDATE": "**", "DICT_MERGE": "**"}.get(name, "")
            display.parts.append(f"{star}{value}")
        elif name == "MAP_ADD":
            value, key = self.pop(stack), self.pop(stack)
            display = stack[-arg]
            if not isinstance(display, _Display):
                self.statement(stack, lines, f"{display}[{key}] = {value}")
                return i + 1
            display.parts.append(f"{key}: {value}")
        elif name == "BUILD_STRING":
            parts = [str(self.pop(stack)) for _ in range(arg)][::-1]
            push(_Expr("(" + " + ".join(parts) + ")" if parts else "''"))
        elif name == "FORMAT_VALUE":  # 3.11, 3.12
            spec = self.pop(stack) if arg & 4 else None
            value = self.pop(stack)
            if arg & 3:
                value = f"{self.const(_builtin(_CONVERSIONS[arg & 3]))}({value})"
            push(_Expr(f"{self.const(format)}({value}" + (f", {spec})" if spec is not None else ")")))
        elif name == "CONVERT_VALUE":  # 3.13
            push(_Expr(f"{self.const(_builtin(_CONVERSIONS[arg]))}({self.pop(stack)})"))
        elif name == "FORMAT_SIMPLE":
            push(_Expr(f"{self.const(format)}({self.pop(stack)})"))
        elif name == "FORMAT_WITH_SPEC":
            spec, value = self.pop(stack), self.pop(stack)
            push(_Expr(f"{self.const(format)}({value}, {spec})"))
        elif name == "KW_NAMES":
            self.kw_names = tuple(arg)
        elif name in ("CALL", "CALL_KW"):
            names = tuple(self.pop(stack).constant) if name == "CALL_KW" else self.kw_names
            self.kw_names = ()
            args = [str(self.pop(stack)) for _ in range(arg)][::-1]
            callee = self.callee(stack)
            positional = args[:len(args) - len(names)]
            keywords = [f"{k}={v}" for k, v in zip(names, args[len(args) - len(names):])]
            push(_Expr(f"{callee}({', '.join(positional + keywords)})"))
        elif name == "CALL_FUNCTION_EX":
            kwargs = self.pop(stack) if arg & 1 else None
            args = self.pop(stack)
            callee = self.callee(stack)
            push(_Expr(f"{callee}(*{args}" + (f", **{kwargs})" if kwargs is not None else ")")))
        elif name == "GET_ITER":
            iterable = self.pop(stack)
            push(_Expr(f"{self.const(iter)}({iterable})", iterator=True, iterable=str(iterable)))
        elif name == "UNPACK_SEQUENCE":
            value = self.pop(stack)
            following = self.insts[i + 1:i + 1 + arg]
            if len(following) == arg and all(f.opname in _STORES for f in following):
                target = ", ".join(f.argval for f in following)
                self.statement(stack, lines, f"{target}{',' if arg == 1 else ''} = {value}")
                return i + 1 + arg
            names = [self.temp() for _ in range(arg)]
            self.statement(stack, lines, f"{', '.join(names)}{',' if arg == 1 else ''} = {value}")
            stack.extend(_Expr(n, simple=True) for n in reversed(names))
        elif name == "COPY":
            self.materialize(stack, lines, depth=arg)
            push(stack[-arg])
        elif name == "SWAP":
            self.materialize(stack, lines, depth=arg)
            stack[-1], stack[-arg] = stack[-arg], stack[-1]
        elif name in ("MAKE_FUNCTION", "LOAD_CLOSURE"):
            raise DecompileError(f"a nested function, lambda or comprehension ({name} at offset {inst.offset})")
        elif name == "LOAD_FAST_AND_CLEAR":
            raise DecompileError(f"a comprehension (inlined; {name} at offset {inst.offset})")
        else:
            raise DecompileError(f"{name} (offset {inst.offset})")
        return i + 1

    # ---- helpers ----------------------------------------------------------------------------------

    def callee(self, stack: list) -> Any:
        second, first = self.pop(stack, raw=True), self.pop(stack, raw=True)
        if first is NULL and second is not NULL:
            return second
        if second is NULL and first is not NULL:
            return first
        raise DecompileError("a call whose callable is not where the version puts it")

    def pop(self, stack: list, raw: bool = False):
        if not stack:
            raise DecompileError("a value taken from an empty stack (the code reads what a caller left)")
        value = stack.pop()
        if value is NULL and not raw:
            raise DecompileError("a NULL used as a value")
        return value

    def statement(self, stack: list, lines: list[str], text: str) -> None:
        self.materialize(stack, lines)
        lines.append(text)

    def materialize(self, stack: list, lines: list[str], depth: int | None = None, keep_top: int = 0) -> None:
        """Keeps each pending value (the top `depth`, but the top `keep_top`) in a temporary,
        so that what runs next runs after it."""
        start = 0 if depth is None else len(stack) - depth
        for k in range(start, len(stack) - keep_top):
            value = stack[k]
            if value is NULL or getattr(value, "simple", False):
                continue
            name = self.temp()
            lines.append(f"{name} = {value}")
            stack[k] = _Expr(name, simple=True, iterator=getattr(value, "iterator", False))

    def temp(self) -> str:
        self.temps += 1
        return f"__t{self.temps - 1}"

    def const(self, value: Any) -> _Expr:
        if _is_literal(value):
            return _Expr(repr(value), simple=True, constant=value)
        builtin = getattr(value, "__name__", None)
        if getattr(value, "__module__", None) == "builtins" and getattr(builtins, builtin or "", None) is value \
                and builtin not in self.code.co_names and builtin not in self.code.co_varnames:
            # `format`, `iter` by name, unless the code names it itself (a global may shadow it)
            return _Expr(builtin, simple=True, constant=value)
        for name, known in self.constants.items():
            if known is value:
                return _Expr(name, simple=True, constant=value)
        name = f"__const{len(self.constants)}"
        self.constants[name] = value
        return _Expr(name, simple=True, constant=value)


def _is_literal(value: Any) -> bool:
    if value is None or value is Ellipsis or type(value) in (bool, int, str, bytes, complex):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) in (tuple, frozenset):
        return type(value) is tuple and all(_is_literal(v) for v in value)
    return False


def _bound(value) -> str:
    return "" if str(value) == "None" else str(value)


def _builtin(name: str) -> Any:
    return getattr(builtins, name)


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 100 else text[:97] + "..."
