"""Tests in a real browser: Playwright (PyPI) driving Debian's headless `chromium` on file:// pages.

The fixtures and helpers are in conftest.py (`page`, `phone_page`, `new_page`, `log_of`, `axe_violations`).
"""
