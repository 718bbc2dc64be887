"""The Lambda face of Fair-Forge Agentic: HTTP, AWS, and nothing of statistics."""

from fair_forge_core import __version__

__all__ = ["__version__"]
