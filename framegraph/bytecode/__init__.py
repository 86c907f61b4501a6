"""Bytecode toolkit: decode code objects into editable instructions and assemble them back.

Placeholder: the toolkit is being written. This package must never import torch.
"""
