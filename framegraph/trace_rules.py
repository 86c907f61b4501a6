"""Which code framegraph translates, and what it does with each callable it meets.

Three attitudes, decided here as data:
- inline: user code (and torch's nn.Module implementations) is traced into (`is_inlineable`);
- skip: library code runs as is: a frame of it is never offered again (`skip_reason`), and
  a call to it is a graph break; so are torch functions with effects outside the graph
  (`SKIPPED_TORCH_FUNCTIONS`) and functions marked with `framegraph.disable`;
- in the graph: torch functions become one node each, as do functions marked with
  `@allow_in_graph` (`is_allowed_in_graph`); variables/functions.py decides `torch.*`.
Path prefixes and filename patterns are checked once per code object.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import types

import torch

import framegraph

CO_GENERATOR_LIKE = 0x20 | 0x80 | 0x100 | 0x200  # GENERATOR, COROUTINE, ITERABLE_COROUTINE, ASYNC_GENERATOR


def _directory(module: types.ModuleType) -> str:
    return os.path.dirname(os.path.abspath(module.__file__)) + os.sep


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    prefixes = {paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"]}
    return tuple(os.path.abspath(p) + os.sep for p in prefixes)


_FRAMEGRAPH_DIR = _directory(framegraph)
_TORCH_DIR = _directory(torch)
_TORCH_NN_MODULES_DIR = os.path.join(_TORCH_DIR, "nn", "modules") + os.sep
_LIBRARY_PREFIXES = _library_prefixes()


def skip_reason(code: types.CodeType) -> str | None:
    """Why `code` must run as is, or None when it may be translated."""
    if code.co_flags & CO_GENERATOR_LIKE:
        return "generator and coroutine frames run eagerly"
    return _library_reason(code.co_filename)


def is_inlineable(fn: types.FunctionType) -> bool:
    """Whether a call to `fn` is traced into (rather than run eagerly at a graph break).

    User code is; so are torch's nn.Module implementations, whose forward methods are
    ordinary Python over torch functions.
    """
    filename = fn.__code__.co_filename
    return filename.startswith(_TORCH_NN_MODULES_DIR) or _library_reason(filename) is None


# Torch functions with effects outside the graph, and why: they run eagerly, in order, at a break.
_CHANGES_GLOBAL_STATE = "changes global state"
_RANDOM_STATE = "reads or sets the random number generator's state, which a graph cannot replay"
_AUTOGRAD = "runs autograd's backward pass, which is not part of a forward graph (as in torch.compile)"
SKIPPED_TORCH_FUNCTIONS: dict[object, str] = {
    torch.set_grad_enabled: _CHANGES_GLOBAL_STATE, torch.set_default_dtype: _CHANGES_GLOBAL_STATE,
    torch.set_printoptions: _CHANGES_GLOBAL_STATE, torch.use_deterministic_algorithms: _CHANGES_GLOBAL_STATE,
    torch.set_num_threads: _CHANGES_GLOBAL_STATE, torch.save: _CHANGES_GLOBAL_STATE,
    torch.load: _CHANGES_GLOBAL_STATE,
    torch.manual_seed: _RANDOM_STATE, torch.seed: _RANDOM_STATE, torch.initial_seed: _RANDOM_STATE,
    torch.get_rng_state: _RANDOM_STATE, torch.set_rng_state: _RANDOM_STATE,
    torch.random.fork_rng: _RANDOM_STATE,
    torch.autograd.backward: _AUTOGRAD, torch.autograd.grad: _AUTOGRAD,
}


# Torch code that runs Python it was handed as part of an operator (kernels registered with
# torch.library, `custom_op` bodies, higher-order operators) or under torch's own "no compiler
# here" wrapper (`torch._disable_dynamo`): what it calls runs as it is, inside the dispatcher.
_OPERATOR_RUNNERS = (os.path.join(_TORCH_DIR, "_ops.py"), os.path.join(_TORCH_DIR, "_compile.py"),
                     os.path.join(_TORCH_DIR, "_library") + os.sep)
_ENTRY_FILE = os.path.join(_FRAMEGRAPH_DIR, "eval_frame.py")  # where a compiled function is entered


def run_by_operator(caller: types.FrameType | None) -> bool:
    """Whether the frame about to run (called from `caller`) runs inside an operator: some
    frame between it and the compiled function's entry is torch's operator machinery. A
    function compiled explicitly inside a kernel is entered anew, and compiles."""
    frame = caller
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_OPERATOR_RUNNERS):
            return True
        if filename == _ENTRY_FILE:
            return False
        frame = frame.f_back
    return False


# Functions the user vouched for with @allow_in_graph: one opaque node each, never traced.
_ALLOWED_IN_GRAPH: dict[int, object] = {}


def allow_in_graph(fn):
    """Puts every call of `fn` into the graph as one node, its body uninspected.

    `fn` must be pure and take and return tensors (and constants): framegraph runs it on
    fake tensors to learn its outputs' shapes, and the backend runs it as it is.
    """
    if not callable(fn):
        raise TypeError(f"framegraph.allow_in_graph expects a function, got {type(fn).__name__}")
    _ALLOWED_IN_GRAPH[id(fn)] = fn
    code = getattr(fn, "__code__", None)
    if code is not None:
        from .eval_frame import skip_code

        skip_code(code)  # when the graph runs it, its frame is not a new frame to compile
    return fn


def is_allowed_in_graph(value: object) -> bool:
    return _ALLOWED_IN_GRAPH.get(id(value)) is value


def is_user_class(cls: type) -> bool:
    """A class defined by the program (not the standard library, torch or a package)."""
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    if filename is None:
        return cls.__module__ == "__main__"
    return _library_reason(os.path.abspath(filename)) is None


def _library_reason(filename: str) -> str | None:
    if filename.startswith(_FRAMEGRAPH_DIR):
        return "framegraph's own code"
    if filename.startswith(_TORCH_DIR):
        return "torch's own code"
    if filename.startswith("<eval_with_key>") or filename.startswith("<frozen "):
        return "generated or frozen code"
    if filename.startswith(_LIBRARY_PREFIXES):
        return "library code (standard library or an installed package)"
    return None
