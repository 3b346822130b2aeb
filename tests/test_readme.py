"""The README's example runs as written, and its catalog table is the one the code generates."""

import re
from pathlib import Path

from warpsim.cli import docs as _docs

README = Path(__file__).resolve().parent.parent / "README.md"


def test_catalog_table_is_current():
    text = README.read_text()
    block = text.split(_docs.BEGIN, 1)[1].split(_docs.END, 1)[0]
    assert block.strip() == _docs.catalog_markdown().strip(), "run `python -m warpsim.cli.docs` to regenerate"


def test_arch_table_is_current():
    text = README.read_text()
    block = text.split(_docs.ARCH_BEGIN, 1)[1].split(_docs.ARCH_END, 1)[0]
    assert block.strip() == _docs.arch_markdown().strip(), "run `python -m warpsim.cli.docs` to regenerate"


def test_python_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
