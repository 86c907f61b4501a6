# The C extension lives here because pyproject.toml cannot yet declare one without
# experimental setuptools features.
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "framegraph._C",
            sources=["framegraph/_C/eval_frame.c"],
            depends=["framegraph/_C/compat.h"],
            extra_compile_args=["-O2", "-Wall", "-Werror=implicit-function-declaration"],
        )
    ]
)
