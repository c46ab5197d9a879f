"""Prints the figures the reliability tests recorded (see rel_helpers.figure)."""

from __future__ import annotations

from rel_helpers import FIGURES


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for test, values in FIGURES:
        terminalreporter.write_line(f"{test}: " + ", ".join(f"{k}={v}" for k, v in values.items()))
