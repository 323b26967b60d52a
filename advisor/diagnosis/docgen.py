"""The rule reference, generated from rules/: one Markdown page per rule plus an index.

    python -m advisor.diagnosis.docgen            # write docs/rules/
    python -m advisor.diagnosis.docgen --check    # exit 1 when docs/rules is stale

``advisor rule CODE`` prints the same page; its JSON form is :func:`rule_dict`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.diagnosis.rules import DOC_TITLES, SECTIONS, Rule, load_rules

FOOTER = (
    "<!-- generated from rules/{file} by `python -m advisor.diagnosis.docgen`; do not edit -->\n"
)


def _code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


def _facts(rule: Rule) -> str:
    parts = []
    if rule.requires:
        parts.append(", ".join(_code(f) for f in rule.requires))
    if rule.requires_any:
        parts.append("one of " + ", ".join(_code(f) for f in rule.requires_any))
    if rule.optional:
        parts.append("optional: " + ", ".join(_code(f) for f in rule.optional))
    return "; ".join(parts) or "none"


FIX_CONTEXTS = {
    "fit:tensorflow": "a Keras fit on TensorFlow",
    "fit:jax": "a Keras fit on JAX",
    "fit:torch": "a Keras fit on torch",
    "track": "a custom loop (`advisor.track`)",
    "track:tensorflow": "a custom TensorFlow loop (`advisor.track`)",
    "track:jax": "a custom JAX loop (`advisor.track`)",
    "track:torch": "a custom PyTorch loop (`advisor.track`)",
    "input:tf.data": "a Keras fit reading a tf.data.Dataset",
    "input:numpy": "a Keras fit reading arrays (NumPy, tensors)",
    "input:generator": "a Keras fit reading a Python generator",
    "input:pydataset": "a Keras fit reading a keras.utils.PyDataset",
    "input:torch": "a Keras fit reading a torch DataLoader",
}


def rule_markdown(rule: Rule) -> str:
    """The documentation page of one rule."""
    rows = [
        ("Section", f"{rule.section} — {SECTIONS[rule.section]}"),
        (
            "Severity",
            rule.severity
            + "".join(f"; {level} when {_code(e.source)}" for level, e in rule.severity_when),
        ),
        ("Facts", _facts(rule)),
    ]
    if rule.applies is not None:
        rows.append(("Applies when", _code(rule.applies.source)))
    if rule.fit_only:
        rows.append(("Custom loops", f"n/a under `advisor.track`: {rule.fit_only}"))
    if rule.advice:
        rows.append(("Decision", "advice: needs a human decision (status stays unknown)"))
    elif rule.condition is not None:
        rows.append(("Fails when", _code(rule.condition.source)))
    if rule.params:
        rows.append(
            ("Thresholds", ", ".join(f"{_code(k)} = {v!r}" for k, v in rule.params.items()))
        )
    if rule.impact is not None:
        rows.append(("Impact", _code(rule.impact.source)))
    if rule.whatif:
        rows.append(
            (
                "Fix tried by",
                "the what-if candidates "
                + ", ".join(_code(c) for c in rule.whatif)
                + " ([whatif.md](../whatif.md))",
            )
        )
    if rule.ceiling:
        rows.append(
            (
                "Measured ceiling",
                ", then ".join(_code(c) for c in rule.ceiling)
                + ": the most the fix can gain ([whatif.md](../whatif.md))",
            )
        )
    if rule.symptom:
        rows.append(("Ranking", "a symptom: on a tie, the rules that name its cause come first"))
    if rule.gated:
        rows.append(
            (
                "Evidence gate",
                "reported as info with fewer than `min-measured-steps` measured steps",
            )
        )
    lines = [f"# {rule.code} {rule.name}", "", f"> {rule.summary}", "", "| | |", "|---|---|"]
    lines += ["| " + k + " | " + v.replace("|", "\\|") + " |" for k, v in rows]
    for key in ("what", "why", "how", "impact"):
        lines += ["", f"## {DOC_TITLES[key]}", "", rule.docs[key]]
        if key == "how":
            fix = rule.fix.source.replace("[[", "").replace("]]", "").replace("\n", " ")
            lines += [
                "",
                "The finding's fix reads (fields in braces are filled in from the run):",
                "",
                "> " + fix,
            ]
            for context, variant in rule.fix_for:
                text = variant.source.replace("[[", "").replace("]]", "").replace("\n", " ")
                lines += ["", f"In {FIX_CONTEXTS[context]}:", "", "> " + text]
    lines += ["", f"## {DOC_TITLES['references']}", ""]
    lines += [f"- {ref}" for ref in rule.references]
    configure = (
        f"Configure: `[tool.advisor.thresholds.{rule.code}]` in pyproject.toml; select or ignore "
        f"with `--select {rule.code}` / `--ignore {rule.code}`."
    )
    lines += ["", configure, ""]
    return "\n".join(lines) + "\n" + FOOTER.format(file=Path(rule.file).name)


def index_markdown(rules: Sequence[Rule]) -> str:
    lines = [
        "# Rule reference",
        "",
        "Every item of the performance checklist is a rule; `advisor rules` lists them and",
        "`advisor rule CODE` explains one. The file format is described in "
        "[../rules.md](../rules.md).",
        "",
    ]
    for section, title in SECTIONS.items():
        members = [r for r in rules if r.section == section]
        if not members:
            continue
        lines += [
            f"## {section} — {title}",
            "",
            "| Code | Name | Severity | Checks |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| [{r.code}]({r.code}.md) | {r.name} | {r.severity} | {r.summary} |" for r in members
        ]
        lines.append("")
    return "\n".join(lines) + FOOTER.format(file="*.yaml")


def rule_dict(rule: Rule) -> dict[str, Any]:
    """A rule as plain data (``advisor rule CODE --format json``)."""
    return {
        "code": rule.code,
        "name": rule.name,
        "section": rule.section,
        "section_title": SECTIONS[rule.section],
        "summary": rule.summary,
        "severity": rule.severity,
        "severity_when": {level: e.source for level, e in rule.severity_when},
        "requires": list(rule.requires),
        "requires_any": list(rule.requires_any),
        "optional": list(rule.optional),
        "applies": rule.applies.source if rule.applies else None,
        "condition": rule.condition.source if rule.condition else None,
        "advice": rule.advice,
        "gated": rule.gated,
        "symptom": rule.symptom,
        "impact": rule.impact.source if rule.impact else None,
        "params": dict(rule.params),
        "message": rule.message.source,
        "pass_message": rule.pass_message.source if rule.pass_message else None,
        "fix": rule.fix.source,
        "fix_for": {context: t.source for context, t in rule.fix_for},
        "fit_only": rule.fit_only,
        "measure": rule.measure,
        "docs": dict(rule.docs),
        "file": Path(rule.file).name,
        "line": rule.line,
    }


def expected_files(rules: Sequence[Rule]) -> dict[str, str]:
    files = {f"{r.code}.md": rule_markdown(r) for r in rules}
    files["index.md"] = index_markdown(rules)
    return files


def stale_files(out_dir: Path, rules: Sequence[Rule]) -> list[str]:
    """Pages that are missing, different, or left over (no rule any more)."""
    expected = expected_files(rules)
    stale = []
    for name, text in expected.items():
        path = out_dir / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    if out_dir.is_dir():
        stale += sorted(p.name for p in out_dir.glob("*.md") if p.name not in expected)
    return sorted(stale)


def write(out_dir: Path, rules: Sequence[Rule]) -> list[str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    expected = expected_files(rules)
    for name, text in expected.items():
        (out_dir / name).write_text(text, encoding="utf-8")
    removed = [p.name for p in out_dir.glob("*.md") if p.name not in expected]
    for name in removed:
        (out_dir / name).unlink()
    return sorted(expected)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m advisor.diagnosis.docgen", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--out", default=None, help="output folder (default: docs/rules beside rules/)"
    )
    parser.add_argument("--rules-dir", default=None)
    parser.add_argument("--check", action="store_true", help="exit 1 when the pages are stale")
    args = parser.parse_args(argv)
    from advisor.diagnosis.rules import default_rules_dir

    rules_dir = Path(args.rules_dir) if args.rules_dir else default_rules_dir()
    rules = load_rules(rules_dir)
    out = Path(args.out) if args.out else rules_dir.resolve().parent / "docs" / "rules"
    if args.check:
        stale = stale_files(out, rules)
        if stale:
            print(
                f"{out}: stale rule docs: {', '.join(stale)}; run `python -m "
                "advisor.diagnosis.docgen`",
                file=sys.stderr,
            )
            return 1
        print(f"{out}: {len(rules)} rule pages up to date")
        return 0
    written = write(out, rules)
    print(f"{out}: wrote {len(written)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
