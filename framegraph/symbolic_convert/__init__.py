"""The symbolic bytecode translator (see translator.py for the main loop)."""

from .translator import InstructionTranslator

__all__ = ["InstructionTranslator"]
