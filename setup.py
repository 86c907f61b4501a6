# The C extension lives here because pyproject.toml cannot yet declare one without
# experimental setuptools features.
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "framegraph._C",
            sources=["framegraph/_C/eval_frame.c", "framegraph/_C/cache.c", "framegraph/_C/guards.c",
                     "framegraph/_C/guard_tensor.c", "framegraph/_C/guard_memo.c"],
            depends=["framegraph/_C/compat.h", "framegraph/_C/cache.h", "framegraph/_C/guards.h",
                     "framegraph/_C/guard_tensor.h", "framegraph/_C/guard_ops.h"],
            # hidden: only PyInit__C leaves the shared object
            extra_compile_args=["-O2", "-Wall", "-Werror=implicit-function-declaration", "-fvisibility=hidden"],
        )
    ]
)
