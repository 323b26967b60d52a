"""What a name in the user's source stands for, and the user's own helper functions a custom
class's methods call, followed so that a blocker inside one is not missed.

A call ``gelu(h)`` in ``call`` is followed when ``gelu`` is a function defined at the top of the
same file, or — for a live class — a function its module's globals reach (``from helpers import
gelu``, ``helpers.gelu(h)``) whose source is the user's own: not a library's (``LIBRARIES``, or a
file under site-packages or the standard library). Helpers are followed ``MAX_DEPTH`` calls deep,
each once per class (which also ends recursion). Methods need no following: every method of the
class is scanned.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import sys
import sysconfig
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_DEPTH = 3
# top-level packages never followed: the libraries a model is written with, and the advisor
LIBRARIES = frozenset(
    "keras tf_keras keras_hub tensorflow jax jaxlib torch numpy scipy pandas optree ml_dtypes "
    "builtins advisor".split()
)
Method = ast.FunctionDef | ast.AsyncFunctionDef


def import_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name → the dotted module or object it stands for, from every import in ``tree``."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def global_aliases(module_name: str) -> dict[str, str]:
    """Names of a loaded module's globals that are modules (``tf`` → ``tensorflow``)."""
    module = sys.modules.get(module_name)
    found: dict[str, str] = {}
    for name, value in list(vars(module).items()) if module is not None else []:
        if inspect.ismodule(value):
            found[name] = value.__name__
    return found


@dataclass
class Scope:
    """One file as the scan reads it: its top-level functions, the names its imports bind and,
    for a loaded module, its globals."""

    file: str
    functions: dict[str, Method]
    aliases: dict[str, str]
    namespace: dict[str, Any] | None = None


def scope_of(
    tree: ast.Module, file: str, aliases: dict[str, str], namespace: dict[str, Any] | None = None
) -> Scope:
    functions = {
        n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    return Scope(file, functions, aliases, namespace)


@dataclass(frozen=True)
class Followed:
    """A helper the scan read for a class: its name and where it is defined."""

    name: str
    file: str
    line: int
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {"function": self.name, "file": self.file, "line": self.line, "via": self.note}


@dataclass(frozen=True)
class Helper:
    """A helper function followed from ``method`` of a class: its definition, the file it is
    read in, whether it runs traced, and the path that reaches it."""

    node: Method
    scope: Scope
    method: str
    traced: bool
    note: str  # in gelu(), called from MyLayer.call at line 12

    @property
    def followed(self) -> Followed:
        return Followed(self.node.name, self.scope.file, self.node.lineno, self.note)


def own_code(target: Any) -> bool:
    """Whether ``target`` is the user's own function: not a library's, and its source is a file
    of theirs (or a notebook cell)."""
    if not inspect.isfunction(target) or target.__qualname__ != target.__name__:
        return False
    if str(target.__module__ or "").split(".")[0] in LIBRARIES:
        return False
    try:
        file = inspect.getsourcefile(target)
    except TypeError:
        return False
    if not file:
        return False
    path = Path(file).resolve()
    if {"site-packages", "dist-packages"} & set(path.parts):
        return False
    paths = sysconfig.get_paths()
    return not any(path.is_relative_to(Path(paths[k]).resolve()) for k in ("stdlib", "platstdlib"))


def _lookup(func: ast.expr, namespace: dict[str, Any]) -> Any:
    """The object a called ``name`` or ``module.name`` stands for in ``namespace``, or None."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in namespace:
        return None
    found = namespace[func.id]
    for part in reversed(parts):
        if not inspect.ismodule(found):  # a module's function, not an object's method
            return None
        found = getattr(found, part, None)
    return found


def _live_scope(target: Any, scopes: dict[str, Scope]) -> tuple[Method, Scope] | None:
    """The definition of a loaded function of the user's and the scope of its file."""
    file = inspect.getsourcefile(target) or ""
    if file not in scopes:
        module = sys.modules.get(target.__module__)
        namespace = vars(module) if module is not None else None
        try:
            tree = ast.parse("".join(linecache.getlines(file, namespace)), filename=file)
        except SyntaxError:
            return None
        aliases = {**global_aliases(target.__module__), **import_aliases(tree)}
        scopes[file] = scope_of(tree, file, aliases, namespace)
    node = scopes[file].functions.get(target.__name__)
    return (node, scopes[file]) if node is not None else None


def resolve(func: ast.expr, scope: Scope, scopes: dict[str, Scope]) -> tuple[Method, Scope] | None:
    """The user's helper function a call's ``func`` names, with the scope it is read in."""
    if isinstance(func, ast.Name) and func.id in scope.functions:
        return scope.functions[func.id], scope
    if scope.namespace is None:
        return None
    found = _lookup(func, scope.namespace)
    return _live_scope(found, scopes) if own_code(found) else None


def helpers(
    owner: str,
    methods: Sequence[Method],
    scope: Scope,
    traced: Callable[[str], bool],
    is_class: bool,
) -> list[Helper]:
    """The helpers ``methods`` call, transitively up to ``MAX_DEPTH``, each once; traced methods
    are followed first, so a helper ``call`` reaches is read as traced."""
    seen = {id(m) for m in methods}
    found: list[Helper] = []
    scopes = {scope.file: scope}
    for method in sorted(methods, key=lambda m: not traced(m.name)):
        label = f"{owner}.{method.name}" if is_class else f"{owner}()"
        walk = _Walk(method.name, traced(method.name), seen, found, scopes)
        walk.follow(method, scope, label, "", 1)
    return found


@dataclass
class _Walk:
    method: str
    traced: bool
    seen: set[int]
    found: list[Helper]
    scopes: dict[str, Scope]

    def follow(self, node: Method, scope: Scope, label: str, tail: str, depth: int) -> None:
        calls = sorted(
            (n for n in ast.walk(node) if isinstance(n, ast.Call)),
            key=lambda n: (n.lineno, n.col_offset),
        )
        for call in calls:
            target = resolve(call.func, scope, self.scopes)
            if target is None or id(target[0]) in self.seen:
                continue
            helper, where = target
            self.seen.add(id(helper))
            at = f"line {call.lineno}"
            if where.file != scope.file:
                at = f"{Path(scope.file).name}:{call.lineno}"
            chain = f"called from {label} at {at}{tail}"
            note = f"in {helper.name}(), {chain}"
            self.found.append(Helper(helper, where, self.method, self.traced, note))
            if depth < MAX_DEPTH:
                self.follow(helper, where, f"{helper.name}()", f", {chain}", depth + 1)
