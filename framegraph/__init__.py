"""framegraph: capture PyTorch programs as torch.fx graphs at the bytecode level.

Importing this package must stay cheap and free of torch and of the C extension:
the bytecode toolkit is used on interpreters that have neither.
"""

__version__ = "0.1.0"
