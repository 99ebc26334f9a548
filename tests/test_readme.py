"""The README's and the user docs' Python examples run as written; the docs name no path outside the repository."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parents[1]
README = ROOT / "README.md"
# user docs with examples the README points to instead of carrying them
EXAMPLES = [README, ROOT / "docs" / "INTEGRATIONS.md", ROOT / "docs" / "SUPPORT.md"]


@pytest.mark.parametrize("page", EXAMPLES, ids=lambda p: p.name)
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(page), "exec"), {})


def test_readme_quick_start_has_exactly_two_commands():
    text = README.read_text(encoding="utf-8")
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"```sh\n(.*?)\n```", quick, re.S) == ['pip install . && imij demo', 'pip install -e ".[test]" && python -m pytest']


def test_readme_sections_in_order():
    """Quick start first, then the core API, the Pillow and imageio plugins, integrations, the CLI."""
    headings = re.findall(r"^## (.+)$", README.read_text(encoding="utf-8"), re.M)
    assert headings[:5] == ["Quick start", "Core API", "Pillow and imageio", "Integrations", "Command line"]


def test_docs_link_only_what_the_repository_holds():
    """Every `docs/...` or `benchmarks/...` path the README names exists, and no user doc names
    a path outside the repository (the specification is cited by name and version)."""
    text = README.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:docs|benchmarks)/[\w./-]+)`", text)) | set(re.findall(r"\((docs/[\w./-]+)\)", text))
    assert named and [p for p in sorted(named) if not (ROOT / p).exists()] == []
    outside = [p.name for p in [README, *(ROOT / "docs").glob("*.md")] if re.search(r"/work/|\.\./", p.read_text(encoding="utf-8"))]
    assert outside == []
