"""Every ```python example of docs/python.md runs as written."""

import re

from conftest import MINILM_DIR, REPO


def examples():
    text = (REPO / "docs" / "python.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_examples_of_docs_python_md_run(tmp_path):
    blocks = examples()
    assert len(blocks) >= 3
    for block in blocks:
        exec(compile(block, "docs/python.md", "exec"), {"MINILM": str(MINILM_DIR), "tmp": str(tmp_path)})


def test_the_stubs_name_exactly_what_the_native_module_exports():
    import ast

    from modelbin import _native

    stubs = ast.parse((REPO / "crates" / "python" / "python" / "modelbin" / "_native.pyi")
                      .read_text())
    stubbed = {node.name for node in stubs.body
               if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    exported = {name for name in dir(_native) if not name.startswith("_")}
    assert stubbed == exported


def test_the_python_lines_of_the_readme_tours_run(tmp_path, monkeypatch):
    """The README's Python snippets, run where its console examples run:
    the repository's tests/data beside the files those examples make in
    target/tour/ (minilm.embd, w.safetensors)."""
    import modelbin

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "data").symlink_to(REPO / "tests" / "data")
    tour = tmp_path / "target" / "tour"
    tour.mkdir(parents=True)
    modelbin.convert(MINILM_DIR, tour / "minilm.embd", progress=False)
    modelbin.convert(REPO / "tests" / "data" / "worked-example.bt", tour / "w.safetensors",
                     progress=False)
    monkeypatch.chdir(tmp_path)
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 4
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
