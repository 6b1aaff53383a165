"""All output: Rich tables and text for humans, one JSON document for scripts.

The only package that uses Rich. Server-provided text (names, descriptions, results, stderr) only
ever reaches Rich as `Text` objects after `literal()`, so it is never read as markup, and control
characters are shown as visible escapes instead of reaching the terminal.
"""

from miroctl.render.checks import CHECK_LOG_WIDTH, CHECK_WIDE, check_table, lock_changes
from miroctl.render.listing import list_tables
from miroctl.render.output import Output, dumps, literal
from miroctl.render.results import call_result, fetched_result, policy_notes
from miroctl.render.serving import serve_report

__all__ = ["CHECK_LOG_WIDTH", "CHECK_WIDE", "Output", "call_result", "check_table", "dumps", "fetched_result",
           "list_tables", "literal", "lock_changes", "policy_notes", "serve_report"]
