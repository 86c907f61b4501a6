"""Which code framegraph translates, and what it does with each callable it meets.

Three attitudes, decided here as data:
- inline: traced into. That is the default for every Python function: the program's own code
  and installed packages alike (real models live in site-packages), and torch's own Python on
  the `TORCH_INLINE` list (nn, optim, distributions, pytree...);
- skip: run as is. A frame of skipped code is never offered again (`skip_reason`) and a call
  to it is a graph break. Skipped are: modules named in `SKIP_MODULES` (the standard library
  framegraph does not model, a few third-party packages that are slow or pointless to trace,
  framegraph itself), the rest of torch, generated or frozen code, torch functions with
  effects outside the graph (`SKIPPED_TORCH_FUNCTIONS`) and functions marked with
  `framegraph.disable`;
- in the graph: torch functions become one node each, as do functions marked with
  `@allow_in_graph` (`is_allowed_in_graph`); variables/functions.py decides `torch.*`.

Rules are by module name, so they read the same on every machine. A code object's module is
found from its file (the longest `sys.path` entry it lives under) once per file.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
import types

import torch

_HEAPTYPE = 1 << 9  # a class made by a class statement, not written in C
CO_GENERATOR_LIKE = 0x20 | 0x80 | 0x100 | 0x200  # GENERATOR, COROUTINE, ITERABLE_COROUTINE, ASYNC_GENERATOR

# torch's own Python is skipped except these packages and modules (and what they contain):
# ordinary Python over torch functions, which models call on every forward.
TORCH_INLINE = (
    "torch.nn",
    "torch.optim",
    "torch.distributions",
    "torch.utils._pytree",
    "torch.utils._foreach_utils",
    "torch.utils.checkpoint",
    "torch.autograd.function",
    "torch.backends.mha",  # the fast-path switch is a module global, read and guarded as one
)
# Inside the inlined packages, what must still run as is: parallel wrappers (they start
# threads and talk to process groups), and what is one graph node per call: the functional
# API is operator-like, and a node keeps graphs readable (`torch.nn.functional.relu`, as
# torch.compile records it). Every other Python function of torch is a node too
# (`variables/functions.py`).
TORCH_SKIP_INSIDE_INLINE = (
    "torch.nn.parallel",
    "torch.nn.utils.prune",
    "torch.optim.lr_scheduler",
    "torch.nn.functional",
    "torch.nn.init",
)

# Modules (and packages, with everything below them) whose code is never traced. A name of the
# standard library counts only for files of the standard library: a program's own `copy.py`
# is the program's.
SKIP_MODULES = frozenset({
    "framegraph",
    # the standard library that framegraph does not model by tracing its code
    "abc", "argparse", "ast", "asyncio", "bdb", "codecs", "collections", "concurrent",
    "copy", "copyreg", "ctypes", "dataclasses", "datetime", "dis", "email", "encodings", "enum",
    "functools", "gc", "genericpath", "gettext", "glob", "hashlib", "heapq", "http", "importlib",
    "inspect", "io", "itertools", "json", "keyword", "linecache", "locale", "logging", "multiprocessing",
    "numbers", "opcode", "operator", "os", "pathlib", "pdb", "pickle", "pkgutil", "platform", "posixpath",
    "pprint", "queue", "random", "re", "reprlib", "selectors", "shutil", "signal", "site", "socket",
    "sre_compile", "sre_parse", "ssl", "string", "struct", "subprocess", "sysconfig", "tempfile",
    "textwrap", "threading", "time", "timeit", "token", "tokenize", "traceback", "types", "typing",
    "unittest", "urllib", "uuid", "warnings", "weakref", "zipfile", "_weakrefset",
    "_py_abc", "_pydecimal", "_strptime", "_threading_local", "_compat_pickle", "statistics",
    "cProfile", "profile", "pstats", "trace", "tracemalloc", "zoneinfo", "fractions", "decimal",
    # third-party packages that are slow or pointless to trace
    "tqdm", "pandas", "hypothesis", "pytest", "_pytest", "pluggy", "numpy", "scipy", "sympy", "mpmath",
    "matplotlib", "PIL", "IPython", "ipykernel", "triton", "requests", "urllib3", "certifi", "idna",
    "charset_normalizer", "filelock", "fsspec", "huggingface_hub", "tokenizers", "safetensors", "regex",
    "packaging", "typing_extensions", "setuptools", "pkg_resources", "_distutils_hack", "jinja2",
    "markupsafe", "networkx", "yaml", "tensorboard", "wandb", "psutil", "onnx", "google", "rich",
    "tqdm_joblib", "joblib", "sentencepiece", "accelerate", "datasets", "pyarrow", "xxhash", "dill",
})


# Standard-library modules whose functions are traced where the program calls them (frames of
# the standard library, run from eager code, are left alone: `skip_reason`): the mixin methods
# of collections.abc (Mapping.get, Sequence.__iter__...) are plain Python over the object's own
# special methods, as are collections' Counter and ChainMap and contextlib's managers.
STDLIB_TRACED_CALLS = ("_collections_abc", "collections", "contextlib")
# Modules of skipped packages that are traced all the same: huggingface_hub's strict
# dataclasses wrap transformers' configs' __setattr__ and __init__ (a check of the value
# against the field's validators, then the class's own __setattr__).
TRACED_INSIDE_SKIPPED = ("huggingface_hub.dataclasses",)


def _search_roots() -> tuple[str, ...]:
    """Directories module names are relative to, longest first (site-packages lies under the
    prefix of the standard library on some layouts)."""
    paths = sysconfig.get_paths()
    roots = {paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"]}
    roots.update(p for p in sys.path if p and os.path.isdir(p))
    return tuple(sorted({os.path.abspath(r) + os.sep for r in roots}, key=len, reverse=True))


_ROOTS = _search_roots()
_STDLIB_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")})
_SITE_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep for k in ("purelib", "platlib")})
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_FRAMEGRAPH_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# framegraph's stand-ins for C functions of the standard library are traced like user code.
_POLYFILLS_DIR = os.path.join(_FRAMEGRAPH_DIR, "polyfills") + os.sep


@functools.lru_cache(maxsize=4096)
def module_name(filename: str) -> str | None:
    """The dotted module a source file defines (`torch.nn.modules.linear`), or None for
    code that is not in a file under an import root (scripts, `<string>`, notebooks)."""
    if filename.startswith("<"):
        return None
    path = os.path.abspath(filename)
    for package_dir in (_TORCH_DIR, _FRAMEGRAPH_DIR):
        # Found wherever they are installed (an editable install is not on sys.path).
        if path.startswith(package_dir):
            root = os.path.dirname(package_dir.rstrip(os.sep)) + os.sep
            break
    else:
        root = next((r for r in _ROOTS if path.startswith(r)), None)
        if root is None:
            return None
    relative = os.path.splitext(path[len(root):])[0]
    parts = relative.split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(part.isidentifier() for part in parts):
        return None  # e.g. site-packages/foo-1.0.data/... is not importable by that name
    return ".".join(parts)


_STDLIB_NAMES = frozenset(sys.stdlib_module_names)


def inline_torch_modules(*names: str) -> None:
    """Adds torch modules whose Python is traced (a capability package's: the tensor-parallel
    styles' hooks for framegraph.distributed)."""
    global TORCH_INLINE
    TORCH_INLINE += tuple(n for n in names if n not in TORCH_INLINE)
    file_reason.cache_clear()


def _within(name: str, packages) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


@functools.lru_cache(maxsize=4096)
def file_reason(filename: str) -> str | None:
    """Why code from `filename` runs as is, or None when it is traced."""
    if filename.startswith("<frozen ") and _within(filename[len("<frozen "):-1], STDLIB_TRACED_CALLS):
        return None  # _collections_abc is frozen into the interpreter
    if filename.startswith("<eval_with_key>") or filename.startswith("<frozen "):
        return "generated or frozen code"
    if filename.startswith(_POLYFILLS_DIR):
        return None
    name = module_name(filename)
    if name is None:
        return None  # the program's own code: scripts, notebooks, exec'd source
    parts = name.split(".")
    if parts[0] == "torch":
        if _within(name, TORCH_INLINE) and not _within(name, TORCH_SKIP_INSIDE_INLINE):
            return None
        return f"module {name} is torch's own code, which is skipped outside trace_rules.TORCH_INLINE"
    path = os.path.abspath(filename)
    if parts[0] in _STDLIB_NAMES and not (path.startswith(_STDLIB_DIRS) and not path.startswith(_SITE_DIRS)):
        return None
    if _within(name, STDLIB_TRACED_CALLS) or _within(name, TRACED_INSIDE_SKIPPED):
        return None
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in SKIP_MODULES:
            return f"module {name} is in the skip list ({prefix!r} in trace_rules.SKIP_MODULES)"
    return None


# Of torch's own Python, frames are compiled only for the modules' methods (a forward reached
# from eager code, after a graph break, is compiled as a frame of its own). Module's machinery
# (__call__, __setattr__, train...) and the rest (parameter metaclass checks, init, utils) run
# on every eager module call: their calls are traced, their frames run as is.
TORCH_FRAMES = ("torch.nn.modules", "torch.optim")
TORCH_FRAMES_SKIPPED = ("torch.nn.modules.module",)


# Functions whose calls are modelled (variables/optimizer.py): their own frames, reached from
# eager code, run as is, so they keep what they do eagerly.
_MODELLED_CODES: set[types.CodeType] = set()


def run_frames_as_is(fn: types.FunctionType) -> None:
    _MODELLED_CODES.add(fn.__code__)


def skip_reason(code: types.CodeType) -> str | None:
    """Why a frame of `code` must run as is, or None when it may be translated."""
    if code.co_flags & CO_GENERATOR_LIKE:
        return "generator and coroutine frames run eagerly"
    if code in _MODELLED_CODES:
        return "its calls are modelled while tracing; its frames, called eagerly, run as is"
    reason = file_reason(code.co_filename)
    name = module_name(code.co_filename) or ""
    if reason is None and _stdlib_file(code.co_filename):
        # As torch.compile does: a standard-library frame run from eager code (strptime's
        # helpers, called at a graph break) holds no model code worth a graph, and compiling
        # it costs time and recompiles.
        return f"frames of the standard library ({name}) run as is; calls to it from traced code are traced"
    if reason is None and name.startswith("torch.") and (
            not _within(name, TORCH_FRAMES) or _within(name, TORCH_FRAMES_SKIPPED)):
        return (f"frames of module {name} run as is (calls to it are traced): "
                "trace_rules.TORCH_FRAMES")
    return reason


def is_inlineable(fn: types.FunctionType) -> bool:
    """Whether a call to `fn` is traced into (rather than run eagerly at a graph break)."""
    return file_reason(fn.__code__.co_filename) is None


def in_stdlib(fn: types.FunctionType) -> bool:
    """Whether `fn` is the standard library's own Python (not an installed package's)."""
    return _stdlib_file(fn.__code__.co_filename)


@functools.lru_cache(maxsize=4096)
def _stdlib_file(filename: str) -> bool:
    if filename.startswith("<frozen "):  # io, os, _collections_abc... are frozen into the interpreter
        return filename[len("<frozen "):-1].partition(".")[0] in _STDLIB_NAMES
    path = os.path.abspath(filename)
    return path.startswith(_STDLIB_DIRS) and not path.startswith(_SITE_DIRS)


def is_user_class(cls: type) -> bool:
    """A class whose Python is traced (the program's, an installed package's, torch.nn's):
    its attributes are read the way the class defines them, not folded as a library's. A
    class written in C (OrderedDict, deque, in a module whose Python is traced) is not."""
    if not cls.__flags__ & _HEAPTYPE:
        return False
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    if filename is None:
        return cls.__module__ == "__main__"
    return file_reason(os.path.abspath(filename)) is None


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
# torch.library, `custom_op` bodies, higher-order operators) or under a "no compiler here"
# wrapper (`torch._disable_dynamo`, `torch._dynamo.disable`, whose wrappers live in the two
# files named): what it calls runs as it is.
_DISABLE_WRAPPERS = (os.path.join(_TORCH_DIR, "_compile.py"), os.path.join(_TORCH_DIR, "_dynamo", "eval_frame.py"))
# A higher-order operator run eagerly (torch.cond at a break) compiles its functions with
# torch.compile itself: what runs under it is torch's, not the program's.
_OPERATOR_RUNNERS = (os.path.join(_TORCH_DIR, "_ops.py"), *_DISABLE_WRAPPERS,
                     os.path.join(_TORCH_DIR, "_library") + os.sep, os.path.join(_TORCH_DIR, "_higher_order_ops") + os.sep)
_ENTRY_FILE = os.path.join(_FRAMEGRAPH_DIR, "eval_frame.py")  # where a compiled function is entered


def disabled_by_torch(fn: object) -> bool:
    """A function wrapped with `torch._disable_dynamo` (Optimizer.zero_grad, state_dict...)
    or `torch._dynamo.disable`: the marks torch and programs put on code no compiler may
    trace, so calling it is a graph break. (torch.compile, once used, also wraps every
    optimizer's `_init_group` this way; framegraph then runs it eagerly too.)"""
    if not isinstance(fn, types.FunctionType):
        return False
    return fn.__code__.co_filename == _DISABLE_WRAPPERS[0] or fn.__dict__.get("_torchdynamo_disable") is True


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


def is_installed_module(module) -> bool:
    """Whether a module is an installed package's (its file under site-packages), not the
    program's own or the standard library's."""
    filename = getattr(module, "__file__", None)
    return isinstance(filename, str) and os.path.abspath(filename).startswith(_SITE_DIRS)
