"""All output: Rich tables and text for humans, one JSON document for scripts.

The only package that uses Rich. Server-provided text (names, descriptions, results, stderr) only
ever reaches Rich as `Text` objects after `literal()`, so it is never read as markup, and control
characters are shown as visible escapes instead of reaching the terminal.
"""
