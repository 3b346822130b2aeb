"""PTX as a kernel writes it: statement parsing and register files that execute it."""

from .regfile import PTXError, Warp

__all__ = ["PTXError", "Warp"]
