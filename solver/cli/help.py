"""How ``fairpack ... --help`` shows an option's default.

argparse's ``ArgumentDefaultsHelpFormatter`` appends ``(default: None)`` to every option without one and
says nothing about options without help text. Here an option shows ``(default: X)`` only when it has a
real default (not None, not the off state of a flag) and its help does not already say what the default
is in words ("default: the method's own"). ``tests/test_cli_help.py`` walks every parser and checks it.
"""

from __future__ import annotations

import argparse


class HelpFormatter(argparse.HelpFormatter):
    """Help text with each option's default, where it has one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if not action.option_strings or "default" in text.lower():
            return text
        if action.default is None or action.default is False or action.default is argparse.SUPPRESS:
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"
