"""The dataflow graph a LayerReport recorded: which layer call or functional op fed which."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from planner.analysis.layers import INPUT_NODE, FunctionalOp, LayerReport, LayerStats

Node = LayerStats | FunctionalOp


class Dataflow:
    """Producer/consumer edges between layer calls, functional ops, the input and the output."""

    def __init__(self, report: LayerReport) -> None:
        self.report = report
        self.nodes: dict[str, Node] = {n.key: n for n in report.nodes}
        self.consumers: dict[str, list[str]] = defaultdict(list)
        for key, node in self.nodes.items():
            for src in node.inputs_from:
                self.consumers[src].append(key)

    def producers(self, key: str) -> tuple[str, ...]:
        """The keys of the nodes (or `<input>`) whose outputs feed this node."""
        node = self.nodes.get(key)
        return node.inputs_from if node is not None else ()

    def descendants(self, key: str) -> set[str]:
        """Every node that depends, directly or not, on this node's output."""
        seen: set[str] = set()
        pending = list(self.consumers.get(key, ()))
        while pending:
            k = pending.pop()
            if k not in seen:
                seen.add(k)
                pending.extend(self.consumers.get(k, ()))
        return seen

    def reaches_back(self, key: str, target: str, *, through: Callable[[Node], bool]) -> bool:
        """Whether `target` feeds `key` along a path whose intermediate nodes all pass `through`."""
        pending = list(self.producers(key))
        seen: set[str] = set()
        while pending:
            k = pending.pop()
            if k == target:
                return True
            if k in seen or k not in self.nodes or not through(self.nodes[k]):
                continue
            seen.add(k)
            pending.extend(self.producers(k))
        return False

    def fed_by_input(self, key: str) -> bool:
        """Whether the model input reaches this node with only functional ops in between."""
        return self.reaches_back(key, INPUT_NODE, through=lambda n: isinstance(n, FunctionalOp))

    def feeds_output(self, key: str) -> bool:
        """Whether this node's output becomes the model output with only functional ops in between."""
        pending = list(self.report.output_from)
        seen: set[str] = set()
        while pending:
            k = pending.pop()
            if k == key:
                return True
            if k in seen or not isinstance(self.nodes.get(k), FunctionalOp):
                continue
            seen.add(k)
            pending.extend(self.producers(k))
        return False
