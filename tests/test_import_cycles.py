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
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
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


def test_the_cycle_finder_finds_a_cycle():
    """The check can fail: a graph with a two-module and a three-module cycle."""
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.a"), ("p.c", "p.d"), ("p.d", "p.e"), ("p.e", "p.c"),
                 ("p.c", "p.a"), ("p.f", "p.c")):
        graph.add_import(importer=a, imported=b)
    assert sorted(cycles(graph)) == [["p.a", "p.b"], ["p.c", "p.d", "p.e"]]


def test_no_module_of_advisor_is_part_of_an_import_cycle():
    graph = grimp.build_graph("advisor", exclude_type_checking_imports=False)
    assert len(graph.modules) > 150  # the whole package was read
    assert cycles(graph) == []
