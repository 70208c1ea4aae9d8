"""The README's new-user path, run exactly as written.

The block that follows the marker ``<!-- new-user path`` in README.md is run line by line by
bash in a fresh directory holding what the README assumes: ``runs/`` (TREC run files),
``qrels.txt``, and ``my-labels.txt``, the labels the reader's own judging tool would have
saved (here the qrels, which judge every pooled document). Every command must succeed, so the
README cannot drift from the command line.
"""

from __future__ import annotations

import ast
import math
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from sampleval.core.qrels import Qrels
from sampleval.core.run import Run
from sampleval.datasets.synthetic import make_collection
from sampleval.io import write_qrels, write_run

README = Path(__file__).resolve().parents[2] / "README.md"
MARKER = "<!-- new-user path"


def new_user_path() -> str:
    """The shell block after the marker."""
    text = README.read_text(encoding="utf-8")
    after = text[text.index(MARKER):]
    block = re.search(r"```sh\n(.*?)```", after, re.DOTALL)
    assert block is not None, "README: no ```sh block after the new-user path marker"
    return block.group(1)


@pytest.mark.slow
def test_the_readme_new_user_path_runs_as_written(tmp_path: Path) -> None:
    made = make_collection(np.random.default_rng(7), n_topics=5, n_runs=6, n_docs=300,
                           depth=30, pool_depth=20, rel_rate=0.08)
    (tmp_path / "runs").mkdir()
    for name, frame in made.runs.items():
        write_run(Run.from_frame(frame, name), tmp_path / "runs" / f"{name}.gz")
    write_qrels(Qrels.from_frame(made.qrels), tmp_path / "qrels.txt")
    shutil.copy(tmp_path / "qrels.txt", tmp_path / "my-labels.txt")
    script = new_user_path()
    commands = [line for line in script.splitlines() if line.strip() and not
                line.lstrip().startswith("#")]
    assert [c.split()[1] for c in commands] == ["evaluate", "sample", "judge", "estimate",
                                                "compare", "export"]
    # like with like: the exact evaluation at the depth the sample is pooled at
    depth = re.search(r"--depth (\d+)", commands[1])
    assert depth is not None and f"-M {depth.group(1)}" in commands[0]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}", "COLUMNS": "120"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "sample is complete" in done.stdout
    assert "Estimates (95% intervals)" in done.stdout and "frame share" in done.stdout
    assert "AP by AP~ht: paired differences" in done.stdout
    exported = (tmp_path / "my-qrels.txt").read_text().splitlines()
    assert exported and all(len(line.split()) == 4 for line in exported)
    # the library block, as written, on what the shell block made
    done = subprocess.run([sys.executable, "-c", library_block()], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def library_block() -> str:
    """The README's Python block (under "## The library")."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text[text.index("## The library"):], re.DOTALL)
    assert block is not None, "README: no ```python block under '## The library'"
    return block.group(1)


def test_the_library_block_imports_only_what_make_demo_installs() -> None:
    """``make demo`` installs sampleval and its dependencies (pyproject's ``dependencies``),
    no extra: the README's library block imports nothing else (before, it imported
    ir_measures, a test extra, and failed with ModuleNotFoundError after ``make demo``)."""
    pyproject = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))
    installed = {re.split(r"[<>=\[ ;]", d)[0].lower().replace("-", "_")
                 for d in pyproject["project"]["dependencies"]} | {"sampleval"}
    imported = set()
    for node in ast.walk(ast.parse(library_block())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported, "the library block imports nothing: the test cannot fail"
    assert imported - installed - set(sys.stdlib_module_names) == set()


def test_the_readme_is_the_front_door() -> None:
    """At most 250 lines (the project's rule; the rest is in docs/guide/), says how to run
    the command after `make demo`, and installs extras from the clone (sampleval is on no
    package index)."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert ".venv/bin/sampleval" in text and "source .venv/bin/activate" in text
    assert "pip install 'sampleval[" not in text and ".venv/bin/pip install -e '.[campaign]'" in text



def markdown_table(path: Path, header: str) -> list[list[str]]:
    """The cells of the Markdown table of ``path`` whose header row starts with ``header``
    (indented or not), its rule left out."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append([cell.strip() for cell in line.strip("|").split("|")])
    return [row for row in table if not set("".join(row)) <= set("-: ")]


DEFAULTS_TABLES = {"README.md": README, "docs/guide/estimating.md":
                   README.parent / "docs" / "guide" / "estimating.md"}


@pytest.mark.parametrize("name", DEFAULTS_TABLES)
def test_the_tables_of_default_estimators_are_the_code_s(name: str) -> None:
    """The "which estimator for which design" tables of the README and estimating.md are the
    defaults table's (sampleval.estimation.defaults): each method a row names, with the
    parameters it gives (`active:uniform=0`), is estimated by default as the row says,
    through its design and the guarantees its samples record; a row that names no method, by
    its design (the first word), and a row that says census, by the census's; every selection
    method is in a row, the deterministic ones where the row says exact. A column headed by
    several measures (`nDCG@10, P@10`) holds the family they share (`~ht`)."""
    from sampleval.declare import resolve
    from sampleval.estimation.defaults import DEFAULTS, default_name
    from sampleval.selection import METHODS

    header, *rows = markdown_table(DEFAULTS_TABLES[name], "| design (methods) |")
    columns = [[(base, int(cut) if cut else None) for base, _, cut in
                (measure.partition("@") for measure in cell.split(", "))]
               for cell in header[1:]]
    named = set()

    def check(row: list[str], design: str, reach: bool = False, simple: bool = False) -> None:
        shown = []
        for measures in columns:
            names = [default_name(design, base, cut, reach, simple) or "" for base, cut in measures]
            shown.append(names[0] if len(names) == 1 else
                         "~" + "".join({n.partition("~")[2] for n in names}))
        assert shown == [cell.strip("`") for cell in row[1:]], (name, row[0], shown)

    for row in rows:
        methods = [token for token in re.findall(r"`([^`]+)`", row[0])
                   if token.partition(":")[0] in METHODS]
        for token in methods:
            method, _, params = token.partition(":")
            cls = METHODS[method]
            named.add(method)
            if not cls.design.is_probability_design:
                assert row[1].startswith("exact"), (name, row)
                continue
            given = dict(param.split("=", 1) for param in params.split(";") if param)
            resolved = resolve(cls.parameters, given, method)
            check(row, cls.design, cls.draws_reach_every_document(resolved),
                  cls.simple_random_sample(resolved))
        design = re.split(r"[ (]", row[0])[0]
        if not methods and design in DEFAULTS:
            check(row, design)
        if "census" in row[0]:
            check(row, "census")
    assert named == set(METHODS), name


FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
TARGET = re.compile(r"\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")  # [text](target "title")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (links reduced to their words, code spans
    without backticks), lowercased, every character other than a letter, digit, '_', '-'
    or space dropped, each space turned to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = re.sub(r"<[^>]+>", "", text).lower()
    return "".join(c for c in text if c.isalnum() or c in "_- ").replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings (repeats get -1, -2, ...) and its
    explicit ``<a name=...>``/``id=...`` targets."""
    found: set[str] = set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
    seen: dict[str, int] = {}
    for line in FENCE.sub("", text).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(path: Path) -> list[str]:
    """Every relative link of a Markdown file whose file does not exist or whose
    ``#anchor`` names no heading of its (Markdown) target."""
    text = path.read_text(encoding="utf-8")
    broken = []
    for target in TARGET.findall(FENCE.sub("", text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in
                                 anchors(dest.read_text(encoding="utf-8"))):
            broken.append(target)
    return broken


def documents() -> list[Path]:
    """The README, benchmarks/README.md and every Markdown file under docs/."""
    root = README.parent
    return [README, root / "benchmarks" / "README.md", *sorted((root / "docs").rglob("*.md"))]


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(README.parent)))
def test_every_relative_link_and_anchor_resolves(doc: Path) -> None:
    broken = broken_links(doc)
    assert not broken, f"{doc.relative_to(README.parent)}: {broken}"


MENTION = re.compile(r"(?<![\w./-])(docs/[\w./-]*?\.(?:md|png|svg))(?:#([\w-]+))?")


def stale_mentions(text: str) -> list[str]:
    """Every ``docs/PATH.md[#anchor]`` a text names (a warning, a docstring, a test, a
    comment) whose file does not exist, or whose anchor names no heading of it."""
    root = README.parent
    stale = []
    for path, anchor in MENTION.findall(text):
        dest = root / path
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in
                                 anchors(dest.read_text(encoding="utf-8"))):
            stale.append(f"{path}#{anchor}" if anchor else path)
    return stale


def test_every_docs_path_named_in_the_repository_exists() -> None:
    """Code, tests, studies, benchmarks, scripts, the Makefile and the docs name docs pages
    by path (warnings such as "docs/guide/estimating.md#frame-share"): each must exist, its
    anchor a heading. CHANGELOG.md is left out: its history names pages where they were."""
    root = README.parent
    texts = [root / "Makefile", root / "pyproject.toml", *documents()]
    for folder in ("src", "tests", "studies", "benchmarks", "scripts"):
        texts += [p for p in (root / folder).rglob("*") if p.suffix in {".py", ".md", ".html"}]
    stale = {str(p.relative_to(root)): found for p in texts
             if p.is_file() and p != Path(__file__).resolve()  # its own examples
             and (found := stale_mentions(p.read_text(encoding="utf-8")))}
    assert not stale, stale


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# The `compare` command: differences, 95%\n## Speed\n"
                                   "## Speed\n```\n# not a heading\n```\n")
    (tmp_path / "a.md").write_text(
        "[ok](b.md) [ok](b.md#the-compare-command-differences-95) [ok](b.md#speed-1) "
        "[ok](#here) [web](https://x.org/y.md)\n## Here\n"
        "[gone](c.md) [no anchor](b.md#speed-2) [fenced](b.md#not-a-heading) [self](#there)\n")
    assert broken_links(tmp_path / "a.md") == ["c.md", "b.md#speed-2", "b.md#not-a-heading",
                                               "#there"]
    assert stale_mentions("see docs/guide/estimating.md#frame-share, `docs/research/`, "
                          "docs/research/methods.md") == []
    assert stale_mentions("see docs/methods_gone.md and docs/guide/estimating.md#no-such "
                          "(mydocs/x.md)") == ["docs/methods_gone.md",
                                               "docs/guide/estimating.md#no-such"]


@pytest.mark.slow
@pytest.mark.shared
def test_the_readme_s_trec_covid_figures_are_what_its_commands_print(
        tmp_path: Path, covid: Path) -> None:
    """"UPrrf93-wt-r5's AP at 20 is X with all of round 5's qrels, Y with the depth-20
    pool's, and estimated Z ± W from 40 documents a topic": the README's commands on round 5
    print these (the ± went stale once: 0.0332 where the command printed 0.0419)."""
    from conftest import run_cli

    text = " ".join(README.read_text(encoding="utf-8").split())
    said = re.search(r"UPrrf93-wt-r5's AP at 20 is (\S+) with all of round 5's qrels, (\S+) "
                     r"with the depth-20 pool's, and estimated (\S+) ± (\S+) from 40", text)
    assert said is not None, "README: the TREC-COVID sentence moved"
    runs, qrels = str(covid / "round5" / "runs"), str(covid / "qrels" / "qrels.covid-round5.txt")
    ours = str(covid / "round5" / "runs" / "UPrrf93-wt-r5.gz")

    def ap(*args: str) -> tuple[float, float, float]:
        done = run_cli(*args, "-f", "tsv")
        assert done.code == 0, done.stderr
        row = next(r.split("\t") for r in done.stdout.splitlines()
                   if r.startswith("UPrrf93-wt-r5\tall\t"))
        lo, hi = (float(v) for v in row[4:6]) if len(row) > 5 else (math.nan, math.nan)
        return float(row[3]), lo, hi

    assert run_cli("sample", "depth-k", runs, "--qrels", qrels, "--rate", "1", "--depth",
                   "20", "-o", tmp_path / "pool20").code == 0
    assert run_cli("sample", "stratified", runs, "--qrels", qrels, "--budget", "40",
                   "--depth", "20", "--seed", "1", "-o", tmp_path / "s").code == 0
    estimated, lo, hi = ap("estimate", str(tmp_path / "s"), runs, "-m", "AP")
    got = [ap("evaluate", qrels, ours, "-M", "20", "-m", "AP")[0],
           ap("evaluate", str(tmp_path / "pool20"), ours, "-M", "20", "-m", "AP")[0],
           estimated, (hi - lo) / 2]
    assert [f"{v:.4f}" for v in got] == list(said.groups())


@pytest.mark.slow
@pytest.mark.shared
def test_estimating_md_s_first_example_is_what_its_command_prints(
        tmp_path: Path, covid: Path) -> None:
    """docs/guide/estimating.md opens with an estimate of UPrrf93-wt-r5 from an active
    sample of round 5 (value, lo, hi) and quotes its AP~ht over the whole ranking: the
    commands it names print these (they had gone stale: 0.3453 [0.3280, 0.3627] and 0.5325
    where the commands printed 0.3265 [0.3006, 0.3524] and 0.5046)."""
    from conftest import run_cli

    page = README.parent / "docs" / "guide" / "estimating.md"
    text = " ".join(page.read_text(encoding="utf-8").split())
    shown = re.search(r"UPrrf93-wt-r5 all AP~ht (\S+) (\S+) (\S+) 1\.0", text)
    deep = re.search(r"UPrrf93-wt-r5's AP~ht is (\S+) over its whole ranking \(`--depth 1000`, "
                     r"frame share (\S+)\) against (\S+) at depth 100", text)
    assert shown is not None and deep is not None, "estimating.md: the example moved"
    runs = str(covid / "round5" / "runs")
    assert run_cli("sample", "active", runs, "--qrels",
                   str(covid / "qrels" / "qrels.covid-round5.txt"), "--rate", "0.1",
                   "--depth", "100", "--seed", "1", "-o", tmp_path / "s").code == 0

    def row(*args: str) -> list[float]:
        done = run_cli("estimate", tmp_path / "s", str(covid / "round5" / "runs" /
                       "UPrrf93-wt-r5.gz"), "-m", "AP~ht", "-f", "tsv", *args)
        assert done.code == 0, done.stderr
        return [float(v) for v in done.stdout.splitlines()[1].split("\t")[3:7]]

    value, lo, hi, _ = row()
    whole, _, _, share = row("--depth", "1000")
    assert [f"{v:.4f}" for v in (value, lo, hi)] == list(shown.groups())
    assert [f"{whole:.4f}", f"{share:.2f}", f"{value:.4f}"] == list(deep.groups())
