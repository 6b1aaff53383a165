"""docs/index.md and the README point to every page under docs/, and every link between pages resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(page.name for page in DOCS.glob("*.md") if page.name != "index.md")
LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def links(page: Path) -> set[str]:
    """The pages a page links to, as paths relative to the repository."""
    return {str((page.parent / target).resolve().relative_to(ROOT)) for target in LINK.findall(page.read_text())}


@pytest.mark.parametrize("listing", ["docs/index.md", "README.md"])
def test_the_listing_links_to_every_page_under_docs(listing: str) -> None:
    missing = [name for name in PAGES if f"docs/{name}" not in links(ROOT / listing)]
    assert PAGES and not missing, f"{listing} does not link to {missing}"


def test_the_index_lists_no_page_as_still_to_come() -> None:
    index = (DOCS / "index.md").read_text()
    assert not re.search(r"^coming\b", index, re.IGNORECASE | re.MULTILINE), "docs/index.md still has a 'Coming' list"


@pytest.mark.parametrize("page", ["README.md", "CHANGELOG.md", *(f"docs/{p.name}" for p in sorted(DOCS.glob("*.md")))])
def test_every_link_of_a_page_to_another_page_resolves(page: str) -> None:
    if not (ROOT / page).exists():
        pytest.fail(f"{page} does not exist")
    broken = [
        target
        for target in LINK.findall((ROOT / page).read_text())
        if not (ROOT / page).parent.joinpath(target).exists()
    ]
    assert not broken, f"{page} links to pages that do not exist: {broken}"
