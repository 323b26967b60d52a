"""What ties the model's own classes to one Keras backend, read from their source before anything
is measured: calls into ``tf.*``, ``jax.*``/``jnp.*`` or ``torch.*`` (each with its
``keras.ops`` replacement where one has the same meaning, ``portability_ops.py``), Python side
effects in a traced method (``print``, ``.numpy()``, appending to a list), and a ``train_step``
written for one backend's autodiff (``tf.GradientTape``, ``jax.grad``, ``loss.backward()``).

The source is parsed, never run: names are resolved through the module's imports (and, for a
live class, its module's globals), so ``import tensorflow as tf`` makes ``tf.nn.relu`` read as
``tensorflow.nn.relu``; the user's own helper functions the methods call are read too
(``portability_calls.py``). It is a prediction — a call in a branch that never runs blocks
nothing — which the backend what-if's measurement then confirms or refutes.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.probes.portability_calls import (
    Followed,
    Scope,
    global_aliases,
    helpers,
    import_aliases,
    scope_of,
)
from advisor.probes.portability_ops import (
    ADVICE,
    BACKENDS,
    CONSTANTS,
    FRAMEWORKS,
    NOT_LOCKED,
    REPLACEMENTS,
    SIDE_EFFECTS,
)

TRACED = {"call", "train_step", "test_step", "predict_step", "compute_loss", "update_state"}
TRACED |= {"result", "__call__"}
AUTODIFF = {"backward": "torch.autograd"}  # a method that is one backend's autodiff


@dataclass(frozen=True)
class Edit:
    """Replace the source between (line, col) and (end_line, end_col) — 1-based lines, UTF-8
    byte columns as ``ast`` gives them — by ``text``."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


@dataclass(frozen=True)
class Blocker:
    """One backend-specific use in a custom class: where, what, which backends it blocks, and
    its replacement (None when there is none)."""

    owner: str
    method: str
    file: str
    line: int
    call: str  # as written, e.g. tf.nn.relu
    canonical: str  # e.g. tensorflow.nn.relu
    kind: str  # call | constant | side_effect | train_step
    blocks: tuple[str, ...]
    replacement: str | None = None
    advice: str | None = None
    edits: tuple[Edit, ...] = ()
    via: str | None = None  # the helper it is in: in gelu(), called from MyLayer.call at line 12

    @property
    def where(self) -> str:
        return f"{Path(self.file).name}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "file": self.file,
            "line": self.line,
            "call": self.call,
            "kind": self.kind,
            "blocks": list(self.blocks),
            "replacement": self.replacement,
            "advice": self.advice,
            "via": self.via,
        }


@dataclass
class Scanned:
    """A custom class (or function) and what in it is backend-specific."""

    name: str
    kind: str
    file: str | None
    line: int | None
    blockers: list[Blocker] = field(default_factory=list)
    unread: str | None = None  # why its source could not be read
    helpers: list[Followed] = field(default_factory=list)  # the helper functions it calls

    def status(self, backend: str) -> str:
        if self.unread:
            return "unknown"
        return "blocked" if any(backend in b.blocks for b in self.blockers) else "runs"

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.name,
            "kind": self.kind,
            "file": self.file,
            "line": self.line,
            "backends": {b: self.status(b) for b in BACKENDS},
            "blockers": [b.to_dict() for b in self.blockers],
            "unread": self.unread,
            "helpers": [h.to_dict() for h in self.helpers],
        }


def _dotted(node: ast.AST) -> tuple[str, str] | None:
    """(the first name, the rest) of ``a.b.c``; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return node.id, ".".join(reversed(parts))


def _locked(canonical: str) -> str | None:
    root = canonical.split(".")[0]
    if root not in FRAMEWORKS or canonical.startswith(NOT_LOCKED):
        return None
    return FRAMEWORKS[root]


def _others(framework: str) -> tuple[str, ...]:
    return tuple(b for b in BACKENDS if b != framework)


def _span(node: ast.expr, text: str) -> Edit:
    end_line = node.end_lineno or node.lineno
    return Edit(node.lineno, node.col_offset, end_line, node.end_col_offset or 0, text)


class _Visitor(ast.NodeVisitor):
    def __init__(self, owner: str, method: str, file: str, aliases: dict[str, str]) -> None:
        self.owner, self.method, self.file, self.aliases = owner, method, file, aliases
        self.found: list[Blocker] = []
        self.traced = traced(owner, method)
        self.seen_funcs: set[int] = set()

    def _resolve(self, node: ast.AST) -> tuple[str, str] | None:
        """(as written, canonical) of a dotted name bound to an import."""
        dotted = _dotted(node)
        if dotted is None or dotted[0] not in self.aliases:
            return None
        first, rest = dotted
        written = f"{first}.{rest}" if rest else first
        return written, f"{self.aliases[first]}.{rest}" if rest else self.aliases[first]

    def _add(self, node: ast.expr, written: str, canonical: str, kind: str, **kw: Any) -> None:
        line = node.lineno
        self.found.append(
            Blocker(self.owner, self.method, self.file, line, written, canonical, kind, **kw)
        )

    def visit_Call(self, node: ast.Call) -> None:
        self.seen_funcs.add(id(node.func))
        resolved = self._resolve(node.func)
        if resolved is not None:
            self._framework_call(node, *resolved)
        elif isinstance(node.func, ast.Name) and node.func.id == "print" and self.traced:
            self._add(
                node, "print", "print", "side_effect", blocks=(), advice=SIDE_EFFECTS["print"]
            )
        elif isinstance(node.func, ast.Attribute):
            self._method_call(node, node.func)
        self.generic_visit(node)

    def _method_call(self, node: ast.Call, func: ast.Attribute) -> None:
        if func.attr in AUTODIFF:
            canonical = AUTODIFF[func.attr]
            self._add(
                node,
                f".{func.attr}()",
                canonical,
                "train_step",
                blocks=_others("torch"),
                advice=ADVICE[canonical],
            )
        elif func.attr == "numpy" and self.traced:
            self._add(
                node,
                ".numpy()",
                "numpy",
                "side_effect",
                blocks=BACKENDS,
                advice=SIDE_EFFECTS["numpy"],
            )
        elif func.attr == "append" and self.traced and _on_self(func.value):
            self._add(
                node,
                f"{ast.unparse(func)}()",
                "append",
                "side_effect",
                blocks=(),
                advice=SIDE_EFFECTS["append"],
            )

    def _framework_call(self, node: ast.Call, written: str, canonical: str) -> None:
        framework = _locked(canonical)
        if framework is None:
            return
        advice = next((a for k, a in ADVICE.items() if canonical.startswith(k)), None)
        kind = "train_step" if advice and "train_step" in advice else "call"
        found = REPLACEMENTS.get(canonical)
        blocks = _others(framework)
        if found is not None and (found.positional is None or len(node.args) <= found.positional):
            edits = [_span(node.func, found.target)]
            for keyword in node.keywords:
                new = found.renames.get(keyword.arg or "")
                if new and new != keyword.arg:
                    edits.append(
                        Edit(
                            keyword.lineno,
                            keyword.col_offset,
                            keyword.lineno,
                            keyword.col_offset + len(keyword.arg or ""),
                            new,
                        )
                    )
            self._add(
                node,
                written,
                canonical,
                kind,
                blocks=blocks,
                replacement=found.target,
                edits=tuple(edits),
            )
            return
        if found is not None:
            advice = f"{found.target} takes other arguments beyond the first {found.positional}"
        self._add(node, written, canonical, kind, blocks=blocks, advice=advice)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if id(node) not in self.seen_funcs:
            resolved = self._resolve(node)
            if resolved is not None and resolved[1] in CONSTANTS:
                written, canonical = resolved
                framework = _locked(canonical) or ""
                target = CONSTANTS[canonical]
                self._add(
                    node,
                    written,
                    canonical,
                    "constant",
                    blocks=_others(framework),
                    replacement=target,
                    edits=(_span(node, target),),
                )
                return
        self.generic_visit(node)


def traced(owner: str, method: str) -> bool:
    """Whether ``method`` of ``owner`` runs while a step is traced (a function: itself)."""
    return method in TRACED or method == owner


def _on_self(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _kind(node: ast.ClassDef | ast.FunctionDef) -> str:
    if isinstance(node, ast.FunctionDef):
        return "function"
    bases = " ".join(ast.unparse(b) for b in node.bases)
    for word, kind in (
        ("Model", "model"),
        ("Loss", "loss"),
        ("metrics", "metric"),
        ("Metric", "metric"),
    ):
        if word in bases:
            return kind
    return "layer"


def scan_node(node: ast.ClassDef | ast.FunctionDef, scope: Scope) -> Scanned:
    """The blockers in one class (each of its methods) or function, and in the user's helper
    functions they call (``portability_calls``), reported against the class."""
    scanned = Scanned(node.name, _kind(node), scope.file, node.lineno)
    methods = (
        [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if isinstance(node, ast.ClassDef)
        else [node]
    )
    for method in methods:
        visitor = _Visitor(node.name, method.name, scope.file, scope.aliases)
        for statement in method.body:
            visitor.visit(statement)
        scanned.blockers += visitor.found

    is_class = isinstance(node, ast.ClassDef)
    for helper in helpers(node.name, methods, scope, lambda m: traced(node.name, m), is_class):
        visitor = _Visitor(node.name, helper.method, helper.scope.file, helper.scope.aliases)
        visitor.traced = helper.traced
        for statement in helper.node.body:
            visitor.visit(statement)
        scanned.blockers += [replace(b, via=helper.note) for b in visitor.found]
        scanned.helpers.append(helper.followed)
    return scanned


def definitions(tree: ast.AST) -> dict[str, list[ast.ClassDef | ast.FunctionDef]]:
    found: dict[str, list[ast.ClassDef | ast.FunctionDef]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            found.setdefault(node.name, []).append(node)
    return found


def scan_source(
    source: str, file: str, names: list[str], extra: dict[str, str] | None = None
) -> list[Scanned]:
    """Each class or function of ``names`` defined at the top level of ``source``."""
    tree = ast.parse(source, filename=file)
    aliases = {**(extra or {}), **import_aliases(tree)}
    top = {
        n.name: n
        for n in getattr(tree, "body", [])
        if isinstance(n, (ast.ClassDef, ast.FunctionDef))
    }
    return [
        scan_node(top[name], scope_of(tree, file, aliases))
        if name in top
        else Scanned(name, "unknown", file, None, unread=f"not defined at the top of {file}")
        for name in names
    ]


def scan_live(target: Any) -> Scanned:
    """A live class or function: its module's source through ``linecache`` (a script, a module,
    a notebook cell), its names resolved through the module's imports and globals."""
    name = getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
    try:
        file = inspect.getsourcefile(target) or inspect.getfile(target)
        _, start = inspect.getsourcelines(target)
    except (OSError, TypeError) as exc:
        return Scanned(name, "unknown", None, None, unread=f"its source cannot be read ({exc})")
    module_globals = (
        vars(sys.modules[target.__module__]) if target.__module__ in sys.modules else None
    )
    text = "".join(linecache.getlines(file, module_globals))
    try:
        tree = ast.parse(text, filename=file)
    except SyntaxError as exc:
        return Scanned(name, "unknown", file, start, unread=f"its file does not parse ({exc})")
    aliases = {**global_aliases(target.__module__), **import_aliases(tree)}
    candidates = definitions(tree).get(target.__name__, [])
    if not candidates:
        return Scanned(name, "unknown", file, start, unread="its definition was not found")
    node = min(candidates, key=lambda n: abs(n.lineno - start))
    found = scan_node(node, scope_of(tree, file, aliases, module_globals))
    found.name = name
    return found


def scan_targets(targets: list[Any]) -> list[Scanned]:
    """The user's own classes and functions (``experiments.backends.custom.collect``)."""
    return [scan_live(t) for t in targets]
