"""Rule files as YAML: read safely and within bounds, with the line of every key.

Files are read with YAML's safe loader, at most ``MAX_RULE_FILE_BYTES`` each, without anchors or
aliases (which could expand a small file into a huge document), with bounded size and nesting.
Every problem is a :class:`~advisor.errors.RuleError` that names ``file:line``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.bounded_reads import read_text
from advisor.errors import PARSER_LIMITS, RuleError, first_line, parser_limit

MAX_RULE_FILE_BYTES = 1 << 20  # the shipped rule files are ~30 KB each
MAX_YAML_NODES = 200_000
MAX_YAML_DEPTH = 64


def compose(path: Path) -> Any:
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    text = read_text(path, MAX_RULE_FILE_BYTES, RuleError)
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise RuleError(f"{path}:1: empty rule file")
        check_tree(path, node)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise RuleError(f"{path}:{line}: YAML syntax error: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise RuleError(f"{path}: YAML error: {first_line(exc, 200)}") from None
    except PARSER_LIMITS as exc:
        raise RuleError(f"{path}: YAML {parser_limit(exc)}") from None
    finally:
        loader.dispose()
    return node, data


def check_tree(path: Path, root: Any) -> None:
    """No anchors or aliases (a node reached twice), bounded size and nesting."""
    import yaml

    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        line = node.start_mark.line + 1
        if id(node) in seen:
            raise RuleError(
                f"{path}:{line}: YAML anchors and aliases are not allowed in rule files"
            )
        seen.add(id(node))
        if len(seen) > MAX_YAML_NODES:
            raise RuleError(f"{path}: more than {MAX_YAML_NODES} YAML nodes; refused")
        if depth > MAX_YAML_DEPTH:
            raise RuleError(f"{path}:{line}: YAML nested deeper than {MAX_YAML_DEPTH} levels")
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in node.value)


def key_lines(node: Any) -> dict[str, int]:
    """Line numbers (1-based) of a mapping node's keys."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
