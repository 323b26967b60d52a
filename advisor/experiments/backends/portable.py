"""The portability table and the portable variant of the model's own classes.

``table`` reads what ties each custom class to a backend (``probes.portability``) — from the live
classes, or for a saved ``.keras`` file from the source files of the modules its config names —
before anything is measured. ``port`` rewrites those modules with the ``keras.ops``
replacements (the parsed source's spans replaced, the rest of the file as written), into a
directory of its own: each candidate's process loads the rewritten module under its own name
(``child.py --ported NAME=PATH``), and the user gets the rewrite as a unified diff.
"""

from __future__ import annotations

import difflib
import json
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.errors import UsageError
from advisor.probes.portability import Blocker, Edit, Scanned, import_aliases, scan_source
from advisor.probes.portability_ops import FRAMEWORKS

LIBRARIES = ("keras", "tensorflow", "tf_keras", "jax", "torch", "builtins", "keras_hub", "numpy")


def saved_custom(model_path: Path) -> list[tuple[str, str]]:
    """(module, name) of every class or function a ``.keras`` file's config names outside the
    libraries (the model's own layers, its loss, its metrics)."""
    try:
        with zipfile.ZipFile(model_path) as archive:
            config = json.loads(archive.read("config.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise UsageError(f"{model_path}: not a Keras model file (.keras): {exc}") from None
    found: dict[tuple[str, str], None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            module, name = value.get("module"), value.get("class_name")
            if isinstance(module, str) and isinstance(name, str):
                if name == "function" and isinstance(value.get("config"), str):
                    name = value["config"]
                if module.split(".")[0] not in LIBRARIES:
                    found[(module, name)] = None
            for item in value.values():
                walk(item)

    walk(config)
    return list(found)


def module_file(module: str) -> Path | None:
    """The source file of ``module`` on this process's import path, found without importing it
    (importing would run the user's code and load Keras here)."""
    parts = module.split(".")
    for entry in [*sys.path, "."]:
        base = Path(entry or ".").joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate.resolve()
    return None


@dataclass
class Table:
    """The portability table: every custom class scanned, and the module file each came from."""

    scanned: list[Scanned] = field(default_factory=list)
    sources: dict[str, Path] = field(default_factory=dict)  # module → its file

    def rows(self) -> list[dict[str, Any]]:
        return [s.to_dict() for s in self.scanned]

    def blockers(self) -> list[Blocker]:
        return [b for s in self.scanned for b in s.blockers if b.blocks]

    def missing(self) -> list[Blocker]:
        """Blockers that have no replacement."""
        return [b for b in self.blockers() if b.replacement is None]


def table_of_saved(model_path: Path, imports: list[str]) -> Table:
    """The table of a saved model's custom classes, read from their modules' source files: the
    module its config names, else the ``--import`` modules."""
    table = Table()
    for module in [m for m, _ in saved_custom(model_path)] + list(imports):
        path = module_file(module) if module != "__main__" else None
        if path is not None:
            table.sources.setdefault(module, path)
    texts = {m: p.read_text(encoding="utf-8", errors="replace") for m, p in table.sources.items()}
    for module, name in saved_custom(model_path):
        where = module if module in texts else None
        if where is None:  # defined in a script, or a module not on the path: the imports
            where = next((m for m in imports if m in texts and _defines(texts[m], name)), None)
        if where is None:
            table.scanned.append(
                Scanned(
                    name,
                    "unknown",
                    None,
                    None,
                    unread=f"the source of {module}.{name} was "
                    "not found (pass the module that defines it with --import)",
                )
            )
            continue
        table.scanned += scan_source(texts[where], str(table.sources[where]), [name])
    return table


def _defines(text: str, name: str) -> bool:
    return f"class {name}" in text or f"def {name}" in text


def apply_edits(source: str, edits: list[Edit]) -> str:
    """``source`` with each edit's span replaced (UTF-8 byte columns), last first."""
    lines = [line.encode() for line in source.splitlines(keepends=True)]
    for edit in sorted(set(edits), key=lambda e: (e.line, e.col), reverse=True):
        first, last = lines[edit.line - 1], lines[edit.end_line - 1]
        joined = first[: edit.col] + edit.text.encode() + last[edit.end_col :]
        lines[edit.line - 1 : edit.end_line] = [joined]
    return b"".join(lines).decode()


def without_unused_imports(source: str) -> str:
    """``source`` without its one-line imports of a backend's module whose names the rewrite
    left unused (``import tensorflow as tf`` once no ``tf.`` remains)."""
    import ast

    tree = ast.parse(source)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    drop: set[int] = set()
    for node in tree.body:
        if not isinstance(node, ast.Import) or node.lineno != node.end_lineno:
            continue
        bound = [(a.asname or a.name.split(".")[0], a.name) for a in node.names]
        if all(name.split(".")[0] in FRAMEWORKS and local not in used for local, name in bound):
            drop.add(node.lineno)
    lines = source.splitlines(keepends=True)
    return "".join(line for number, line in enumerate(lines, 1) if number not in drop)


def with_keras_import(source: str) -> str:
    """``source`` with ``import keras`` after its first imports when ``keras`` is not bound to
    Keras there."""
    import ast

    tree = ast.parse(source)
    if import_aliases(tree).get("keras") == "keras":
        return source
    body = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    after = body[0].end_lineno if body else 0
    lines = source.splitlines(keepends=True)
    return "".join(lines[:after] + ["import keras\n"] + lines[after:])


@dataclass
class Ported:
    """The rewritten modules (module → its ported file) and the rewrite as a unified diff."""

    files: dict[str, Path]
    diff: str
    replaced: int


def check(table: Table, what: str) -> None:
    """Raise ``UsageError`` when there is nothing to port, naming every blocker that has no
    replacement, or every one in a helper of another file than its class's (not rewritten)."""
    if not table.blockers():
        raise UsageError(f"{what}: nothing to replace: no custom class calls a backend's own ops")
    missing = table.missing()
    if missing:
        listed = "; ".join(f"{b.owner} calls {b.call} ({_place(b)})" for b in missing)
        raise UsageError(f"{what}: no keras.ops replacement for {listed}")
    elsewhere = [b for s in table.scanned for b in s.blockers if b.blocks and b.file != s.file]
    if elsewhere:
        listed = "; ".join(f"{b.owner} calls {b.call} ({_place(b)})" for b in elsewhere)
        raise UsageError(
            f"{what}: a helper in another file than its class is not rewritten: {listed}; "
            f"replace the call there with its keras.ops replacement"
        )


def _place(b: Blocker) -> str:
    return f"{b.where}, {b.via}" if b.via else b.where


def count_replaced(blockers: list[Blocker]) -> int:
    """How many calls the rewrite replaces: a helper's call that two classes reach, once."""
    return len({(b.file, b.edits) for b in blockers if b.replacement})


def port(table: Table, directory: Path) -> Ported:
    """Rewrite every module with replaceable blockers into ``directory``; raises ``UsageError``
    naming the blockers that have no replacement."""
    check(table, "--port")
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    diffs: list[str] = []
    replaced = 0
    for module, path in table.sources.items():
        edits = [
            e for b in table.blockers() if b.file == str(path) and b.replacement for e in b.edits
        ]
        if not edits:
            continue
        original = path.read_text(encoding="utf-8")
        rewritten = without_unused_imports(with_keras_import(apply_edits(original, edits)))
        replaced += count_replaced([b for b in table.blockers() if b.file == str(path)])
        files[module] = directory / f"{module}.py"
        files[module].write_text(rewritten, encoding="utf-8")
        diffs.append(unified(original, rewritten, path))
    return Ported(files, "".join(diffs), replaced)


def unified(original: str, rewritten: str, path: Path) -> str:
    """The rewrite of ``path`` as a unified diff."""
    before, after = _names(path)
    return "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True), rewritten.splitlines(keepends=True), before, after
        )
    )


def _names(path: Path) -> tuple[str, str]:
    """The diff's file names: ``a/`` and ``b/`` before a path under the working directory (as
    ``git apply`` reads them), the absolute path twice for another (``patch -p0``)."""
    try:
        relative = path.relative_to(Path.cwd())
    except ValueError:
        return str(path), str(path)
    return f"a/{relative}", f"b/{relative}"


def render_table(rows: list[dict[str, Any]]) -> str:
    """The table for people: a line per class (runs / blocked on each backend), then a line per
    blocking call with its place, the backends it blocks and its replacement."""
    if not rows:
        return "Portability: the model has no custom classes (nothing ties it to a backend)"
    lines = ["Portability of the model's own classes (read from their source, before measuring):"]
    for row in rows:
        where = f" ({Path(row['file']).name}:{row['line']})" if row.get("line") else ""
        states = "  ".join(f"{b}: {s}" for b, s in row["backends"].items())
        lines.append(f"  {row['class']}{where}  {states}")
        if row.get("unread"):
            lines.append(f"    not read: {row['unread']}")
        for b in row["blockers"]:
            lines.append("    " + blocker_text(b))
    return "\n".join(lines)


def blocker_text(b: dict[str, Any]) -> str:
    """``mylayers.py:16 call: tf.nn.relu blocks jax, torch → keras.ops.relu``."""
    where = f"{Path(b['file']).name}:{b['line']} {b['method']}: {b['call']}"
    where += f" ({b['via']})" if b.get("via") else ""
    if not b["blocks"]:
        return f"{where} (note: {b['advice']})"
    text = f"{where} blocks {', '.join(b['blocks'])}"
    if b.get("replacement"):
        return f"{text} → replace with {b['replacement']}"
    return f"{text}; no keras.ops replacement" + (f" ({b['advice']})" if b.get("advice") else "")


@dataclass
class LivePort:
    """The portable variants of live classes (``id`` of the original → the variant) and the
    rewrite of their files as a unified diff."""

    swap: dict[int, Any]
    diff: str
    replaced: int


def port_live(targets: list[Any], scanned: list[Scanned]) -> LivePort:
    """Each target with replaceable blockers rebuilt from its rewritten source: the class (or
    function) definition alone, without its decorators (a registration would replace yours in
    this process), executed in a copy of its module's globals, after the helper functions of its
    file that it calls (rewritten too, so that it calls the rewrite). Raises ``UsageError``
    naming the blockers that have no replacement or are in a helper of another file."""
    table = Table(scanned)
    check(table, "port")
    import ast
    import linecache

    import keras

    edits_by_file: dict[str, list[Edit]] = {}
    swap: dict[int, Any] = {}
    for target, found in zip(targets, scanned):
        edits = [e for b in found.blockers if b.replacement for e in b.edits]
        if not edits or found.file is None:
            continue
        edits_by_file.setdefault(found.file, []).extend(edits)
        rewritten = apply_edits("".join(linecache.getlines(found.file)), edits)
        tree = ast.parse(rewritten)
        namespace = dict(vars(sys.modules[target.__module__]), keras=keras)
        for helper in (h for h in found.helpers if h.file == found.file):
            _execute(rewritten, tree, helper.name, helper.line, found.file, namespace)
        _execute(rewritten, tree, target.__name__, found.line or 0, found.file, namespace)
        swap[id(target)] = namespace[target.__name__]
    diffs = []
    for file, edits in edits_by_file.items():
        original = "".join(linecache.getlines(file))
        rewritten = without_unused_imports(with_keras_import(apply_edits(original, edits)))
        diffs.append(unified(original, rewritten, Path(file)))
    return LivePort(swap, "".join(diffs), count_replaced(table.blockers()))


def _execute(
    source: str, tree: Any, name: str, line: int, file: str, namespace: dict[str, Any]
) -> None:
    """Run the definition of ``name`` nearest ``line`` in ``source`` (its lines alone, at their
    own line numbers, without decorators) in ``namespace``."""
    import ast

    nodes = [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.ClassDef, ast.FunctionDef)) and n.name == name
    ]
    node = min(nodes, key=lambda n: abs(n.lineno - line))
    lines = source.splitlines(keepends=True)[node.lineno - 1 : node.end_lineno]
    code = "\n" * (node.lineno - 1) + "".join(lines)
    exec(compile(code, file, "exec"), namespace)  # noqa: S102 — the user's own code, rewritten
