"""No import cycles anywhere in advisor/: between any two modules, inside packages too, lazy
imports in functions and type-only imports (``if TYPE_CHECKING:``) counted."""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp")  # installed with import-linter (the test extra)


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def described(graph, component: list[str]) -> str:
    """A cycle as the imports that close it, each with its line: what to change to break it."""
    members = set(component)
    lines = [" <-> ".join(component)]
    for importer in component:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            for detail in graph.get_import_details(importer=importer, imported=imported) or [{}]:
                where = f"line {detail['line_number']}: {detail['line_contents']}" if detail else ""
                lazy = " (lazy)" if detail.get("is_lazy") else ""
                lines.append(f"    {importer} -> {imported}  {where}{lazy}")
    return "\n".join(lines)


def test_the_cycle_finder_finds_a_cycle():
    """The check can fail: a graph with a two-module and a three-module cycle, and a package whose
    ``__init__`` imports a submodule that imports the package back (not excluded: it is a cycle)."""
    graph = grimp.ImportGraph()
    for a, b in (
        ("p.a", "p.b"),
        ("p.b", "p.a"),
        ("p.c", "p.d"),
        ("p.d", "p.e"),
        ("p.e", "p.c"),
        ("p.c", "p.a"),
        ("p.f", "p.c"),
        ("p.q", "p.q.r"),
        ("p.q.r", "p.q"),
        ("p.q.s", "p.q"),
    ):
        graph.add_import(importer=a, imported=b)
    assert sorted(cycles(graph)) == [["p.a", "p.b"], ["p.c", "p.d", "p.e"], ["p.q", "p.q.r"]]
    assert described(graph, ["p.a", "p.b"]).splitlines() == [
        "p.a <-> p.b",
        "    p.a -> p.b  ",
        "    p.b -> p.a  ",
    ]


def test_no_module_of_advisor_is_part_of_an_import_cycle():
    graph = grimp.build_graph("advisor", exclude_type_checking_imports=False)
    assert len(graph.modules) > 150  # the whole package was read
    found = cycles(graph)
    assert not found, f"{len(found)} import cycle(s):\n" + "\n".join(
        described(graph, c) for c in found
    )
