"""The README and docs/ stay true: a short front page, links that resolve, commands the CLI accepts.

Commands are read from fenced code blocks: every line of a ``bash``/``sh``/``shell`` block, and the
``$ `` lines of a ``console`` block. A line that is a usage synopsis (a token holding ``[``, ``]``,
``|`` or ``...``, as in ``grade PATH... [--policy FILE]``) is skipped; every other ``otel-traj`` line
must parse with the CLI's own parser, and the repository paths it names must exist.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from otel_traj.cli import build_parser
from otel_traj.dialects.fields import TABLE
from otel_traj.dialects.recognize import vocabulary_rows
from otel_traj.sinks import evaluation_records
from otel_traj.versions import Versions

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
MAX_README_LINES = 250

FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`[^`]*`")
SHELL_BLOCKS = {"bash", "sh", "shell", "console"}
SHELL_OPERATORS = {"|", "||", "&&", ";", ">", ">>", "2>", "2>&1", "<", "&"}
# Top-level directories of this repository: a command argument starting with one names a file here.
REPO_DIRS = ("examples/", "tests/", "collectors/", "dashboards/", "docs/", "benchmarks/", "otel_traj/")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    lines: tuple[str, ...]


def split_page(page: Path) -> tuple[list[str], list[Block]]:
    """The page's prose lines (code blocks blanked, so line numbers stay) and its fenced blocks."""
    prose: list[str] = []
    blocks: list[Block] = []
    fence: str | None = None
    start, lang, body = 0, "", []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line.strip())
        if fence is None and match:
            fence, start, lang, body = match.group(1), number, match.group(2).lower(), []
            prose.append("")
        elif fence is not None and line.strip().startswith(fence) and not line.strip()[len(fence) :]:
            blocks.append(Block(page, start, lang, tuple(body)))
            fence = None
            prose.append("")
        elif fence is not None:
            body.append(line)
            prose.append("")
        else:
            prose.append(line)
    assert fence is None, f"{page.name}:{start}: code block never closed"
    return prose, blocks


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    result: set[str] = set()
    for line in split_page(page)[0]:
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def links(page: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(split_page(page)[0], 1):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            found.append((number, target))
    return found


def command_lines(block: Block) -> list[tuple[int, str]]:
    """``(line number, command)`` for each shell command of a block, continuations joined."""
    if block.lang not in SHELL_BLOCKS:
        return []
    commands: list[tuple[int, str]] = []
    pending, first = "", 0
    for offset, raw in enumerate(block.lines, 1):
        line = raw.rstrip()
        if not pending:
            if block.lang == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            first = block.line + offset
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        commands.append((first, pending + line))
        pending = ""
    return commands


def otel_traj_args(command: str) -> list[str] | None:
    """The arguments of an ``otel-traj`` command line, or None for other commands and synopses."""
    tokens = shlex.split(command, comments=True)
    for i, token in enumerate(tokens):
        if token in SHELL_OPERATORS:
            tokens = tokens[:i]
            break
    while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", tokens[0]):
        tokens = tokens[1:]  # environment assignments before the command
    if not tokens or Path(tokens[0]).name != "otel-traj":
        return None
    args = tokens[1:]
    if any(mark in token for token in args for mark in ("[", "]", "|", "...")):
        return None
    return args


def documented_commands() -> list[tuple[str, list[str]]]:
    found = []
    for page in PAGES:
        for block in split_page(page)[1]:
            for number, command in command_lines(block):
                args = otel_traj_args(command)
                if args is not None:
                    found.append((f"{page.relative_to(ROOT)}:{number}", args))
    return found


def test_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines, at most {MAX_README_LINES}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for number, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto: ...
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(ROOT)}:{number}: {target}"
        if not file.exists():
            broken.append(f"{where}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{where}: no heading with that anchor in {file.name}")
    assert not broken, "\n".join(broken)


def test_docs_are_linked_from_the_readme() -> None:
    targets = {(README.parent / t.partition("#")[0]).resolve() for _, t in links(README)}
    unlinked = [d.name for d in DOCS if d.resolve() not in targets]
    assert not unlinked, f"docs not linked from README.md: {unlinked}"


def test_documented_commands_are_found() -> None:
    # Guards the test below against passing because it found nothing to check.
    commands = documented_commands()
    assert len(commands) >= 8
    assert {args[0] for _, args in commands if args} >= {"grade", "report", "serve", "policy"}


@pytest.mark.parametrize(("where", "args"), documented_commands(), ids=lambda v: str(v))
def test_documented_command_parses(where: str, args: list[str]) -> None:
    parser = build_parser()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            parser.parse_args(args)
        except SystemExit as exc:
            if exc.code != 0 or not {"-h", "--help"} & set(args):
                pytest.fail(f"{where}: otel-traj {shlex.join(args)}\n{err.getvalue()}")
    missing = [a for a in args if a.startswith(REPO_DIRS) and not (ROOT / a).exists()]
    assert not missing, f"{where}: no such file in the repository: {missing}"


def test_the_recognition_table_is_the_code() -> None:
    """docs/dialects.md lists every kind vocabulary's defined values as the recognizer reads them."""
    text = (ROOT / "docs" / "dialects.md").read_text()
    documented = text.split("<!-- vocabulary-table -->\n", 1)[1].split("\n<!-- /vocabulary-table -->", 1)[0]
    assert documented == "\n".join(vocabulary_rows())


def test_the_dialect_evidence_table_is_the_code() -> None:
    """docs/dialects.md reproduces the per-field table the dialects read spans with."""
    rows = ["| field | sources, first that has a value wins |", "|---|---|"]
    rows += [
        f"| {field} | " + " · ".join(s.label for s in sources) + " |" for field, sources in TABLE.items()
    ]
    text = (ROOT / "docs" / "dialects.md").read_text()
    documented = text.split("<!-- evidence-table -->\n", 1)[1].split("\n<!-- /evidence-table -->", 1)[0]
    assert documented == "\n".join(rows)


def test_the_evaluation_attribute_table_is_the_code() -> None:
    """docs/conversations.md lists every attribute the `gen_ai.evaluation.result` records carry: the
    attribute names evaluation_records.py defines, each version of ``Versions`` under its prefix."""
    names = {
        value
        for key, value in vars(evaluation_records).items()
        if key.isupper() and isinstance(value, str) and value.startswith(("gen_ai.", "otel_traj."))
    }
    prefixes = {evaluation_records.PREFIX, evaluation_records.VERSION_PREFIX}
    values = {evaluation_records.EVENT_NAME, evaluation_records.OUTCOME}
    emitted = names - prefixes - values
    emitted |= {evaluation_records.VERSION_PREFIX + name for name in Versions().to_dict()}
    text = (ROOT / "docs" / "conversations.md").read_text()
    table = text.split("<!-- evaluation-attributes -->\n", 1)[1].split(
        "\n<!-- /evaluation-attributes -->", 1
    )[0]
    documented = re.findall(r"^\| `([^`]+)` \|", table, re.MULTILINE)
    assert len(documented) == len(set(documented))
    assert set(documented) == emitted
