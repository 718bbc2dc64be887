"""The Lambda face of Fair-Forge Agentic: HTTP, AWS, and nothing of statistics."""

__version__ = "0.1.0"
