"""An example server shown on several pages is kept once, under docs/examples/, and every page shows it as it is.

A page's block says so in its info string: ```python file=quitter.py src=examples/quitter.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import docs_support as docs

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
SHOWN = [(page, block) for page in PAGES for block in docs.parse(page.read_text()) if block.src]


@pytest.mark.parametrize(("page", "block"), SHOWN, ids=[f"{p.relative_to(ROOT)}:{b.line}" for p, b in SHOWN])
def test_a_block_naming_a_shared_example_shows_that_file_exactly(page: Path, block: docs.Block) -> None:
    source = DOCS / str(block.src)
    assert source.is_file(), f"{page.relative_to(ROOT)}:{block.line} names {block.src}, which is not under docs/"
    assert "\n".join(block.body) + "\n" == source.read_text(), (
        f"{page.relative_to(ROOT)}:{block.line} shows something else than docs/{block.src}"
    )


def test_every_shared_example_is_shown_by_some_page() -> None:
    shown = {str(block.src) for _, block in SHOWN}
    kept = {str(path.relative_to(DOCS)) for path in (DOCS / "examples").iterdir() if path.is_file()}
    assert "examples/quitter.py" in kept and kept == shown, f"not shown by any page: {sorted(kept - shown)}"


def test_the_src_of_a_block_is_read_from_its_info_string() -> None:
    block = docs.parse("```python file=q.py src=examples/q.py\nx\n```\n")[0]
    assert (block.file, block.src, block.language) == ("q.py", "examples/q.py", "python")
    assert docs.parse("```python file=q.py\nx\n```\n")[0].src is None
