"""What users read can be followed: no work-log or tracker history, no files outside the repo.

The code, the rule files, the docs, README.md and CHANGELOG.md are read by users (`advisor rule`
prints a rule's references; docstrings are the API's help). They must not cite the project's
own tracker or work log ("issue 13", "pass 56", "session 39", "stays open on it"), nor files
that are not shipped (the maintainers' shared notes). Upstream bugs are cited with their
repository: "keras-team/keras#20585", "tensorflow#61791" or "keras issue 20585" are fine; an
issue number with no repository or project name before it is the project's own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from advisor.diagnosis.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("advisor", "rules", "docs", "README.md", "CHANGELOG.md")
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".json", ".sh", ".tcss", ".html"}

# Projects whose issue numbers may be cited as "<project> issue N" (else: owner/repo#N).
UPSTREAM = {
    "keras",
    "tf-keras",
    "tf_keras",
    "tensorflow",
    "jax",
    "torch",
    "pytorch",
    "horovod",
    "ray",
    "moto",
    "boto3",
    "botocore",
    "xla",
    "openxla",
    "xprof",
    "mlflow",
    "textual",
    "hypothesis",
    "pytest",
    "numpy",
    "cpython",
    "slurm",
}
ISSUE = re.compile(r"(?:(\S+)\s+)?\b[Ii]ssues?\s+#?\d+")
WORK_LOG = {
    "a fresh-clone or review pass": re.compile(r"(?<!· )\b[Pp]ass(?:es)?\s+\d+\b"),
    "a work session": re.compile(r"\b[Ss]essions?\s+\d+\b"),
    "a tracker's state": re.compile(r"\bstays open\b"),
    "a tracker's history": re.compile(r"\b[Aa]dded (?:by|in) (?:the )?[\w -]{0,40}\bissue\b"),
    "the maintainers' shared folder": re.compile(r"(?<![\w/.~-])shared/|(?<![\w.-])/work/"),
    "a file that is not in the repository": re.compile(r"\b(?:CHECKLIST|DESIGN|STYLE)\.md\b"),
    "the maintainers' seed texts": re.compile(r"\bseeds/"),
    "a commit of the work log": re.compile(r"\bcommit\s+`?[0-9a-f]{7,40}\b"),
}
# A reference that is neither a URL nor a repository path: a published work, by title.
PUBLISHED = ('Chaim Rand, "Cloud ML Performance Checklist"',)
URL = re.compile(r"https://[^\s)>\]]+")
REPO_PATH = re.compile(
    r"(?<![\w/.-])((?:advisor|docs|rules|tests|scripts|benchmarks|examples)/[\w./-]*\w)"
)


def problems(text: str) -> list[str]:
    """What in ``text`` cites the work log or the tracker, each as 'kind: the text found'."""
    found = []
    for match in ISSUE.finditer(text):
        before = (match.group(1) or "").strip("([{\"'`").lower()
        if before not in UPSTREAM and not re.fullmatch(r"[\w.-]+/[\w.-]+", before):
            found.append(f"a tracker number: {match.group(0).strip()!r}")
    for kind, pattern in WORK_LOG.items():
        found += [f"{kind}: {m.group(0)!r}" for m in pattern.finditer(text)]
    return found


def scanned_files() -> list[Path]:
    files = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [
                p
                for p in sorted(path.rglob("*"))
                if p.suffix in TEXT_SUFFIXES and p.is_file() and "__pycache__" not in p.parts
            ]
    return files


@pytest.mark.parametrize(
    "text",
    [
        "Added by issue 13 (stable shares).",
        "Derivations: issue 6 (telemetry).",
        "the overhead (issues 2 and 7)",
        "see issue #38",
        "fresh-clone pass 48 passed",
        "Passes 41–43 are over the 10 minutes",
        "session 39 took them out",
        "so issue 36 stays open on that criterion",
        "# Added by the telemetry issue.",
        "Cloud ML Performance Checklist, project (shared/seeds)",
        "read /work/shared/CHECKLIST.md",
        "# M1 — Measuring performance. Codes: CHECKLIST.md.",
        "with DESIGN.md's thresholds",
        "seeds/cloud-ml-performance-checklist.txt",
        "measured on commit 84a6098",
    ],
)
def test_the_patterns_find_work_log_and_tracker_text(text):
    assert problems(text), text


@pytest.mark.parametrize(
    "text",
    [
        "keras-team/keras#20585 — https://github.com/keras-team/keras/issues/20585",
        "a known bug (tensorflow#61791)",
        "keras issue 20585 makes it fail",
        "keras-team/keras issue 20585",
        "XLA known issues (dynamic shapes) — https://openxla.org/xla/known_issues",
        "decided 33/61 (54%) · fail 12 · pass 21 · n/a 19 · unknown 9",
        "--runs-dir /shared/me/advisor-runs",
        "a profile session folder; self.session.event(...)",
        "random seeds, the shuffle's seed",
        "the code table: docs/checklist.md",
        "rules that pass and fail; the test passes",
    ],
)
def test_the_patterns_leave_ordinary_text_alone(text):
    assert problems(text) == [], text


def test_no_work_log_or_tracker_text_in_what_users_read():
    found = []
    for path in scanned_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{number}: {p}" for p in problems(line)]
    assert not found, "\n".join(found)


def test_every_rule_reference_can_be_followed():
    """A URL, a published title, or a path in this repository; any path it names exists."""
    unresolved = []
    for rule in load_rules():
        for reference in rule.references:
            rest = URL.sub("", reference)
            paths = REPO_PATH.findall(rest)
            followable = (
                URL.search(reference)
                or reference.startswith(PUBLISHED)
                or (paths and rest.startswith(paths[0]))
            )
            missing = [p for p in paths if not (ROOT / p).exists()]
            if not followable or missing or "http://" in reference:
                unresolved.append(f"{rule.code}: {reference}")
    assert not unresolved, "\n".join(unresolved)


def test_paths_in_rule_texts_exist():
    """`advisor rule CODE` and the rule pages print these texts: a path they name must exist."""
    missing = []
    for path in sorted((ROOT / "rules").glob("*.yaml")):
        text = URL.sub("", path.read_text())
        missing += [f"{path.name}: {p}" for p in REPO_PATH.findall(text) if not (ROOT / p).exists()]
    assert not missing, "\n".join(missing)


def test_relative_links_in_the_docs_resolve():
    broken = []
    for page in [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        if not page.is_file():
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "\n".join(broken)
