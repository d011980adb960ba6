"""Step 6, Decision tree: the target's tree with the path the measurements took, its evidence, and the plan."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static, Tree

from planner.advice import tree_nodes
from planner.codec import to_data
from planner.tui.formatting import truncate
from planner.tui.screens.base import StepPane

_UNSET = object()
VISITED = "✓"
STEP_LIST_COLUMNS = 20  # the step list, its border and the pane's padding
SCROLLBAR = 2
NO_WALK = "Answer the checklist (step 5) to walk the tree."


def node_label(view: Any, visit: dict | None, width: int | None = None) -> Text:
    """A node's label: ✓ and bold when the walk visited it, the branch it hangs on, and what it decided.

    Given the columns the label has (`width`), a long node text is shortened so that what the walk decided
    still shows at the end (the detail panel below has the whole text); the tree itself never wraps.
    """
    result = f" → {visit['result']}" if visit is not None and visit.get("result") not in (None, "", "step") else ""
    lead = 2 + (len(f"[{view.branch}] ") if view.branch else 0)
    body = str(view.text)
    if width is not None and lead + len(body) + len(result) > width:
        body = truncate(body, max(width - lead - len(result), 12))
    text = Text()
    if visit is not None:
        text.append(f"{VISITED} ", style="bold")
    else:
        text.append("  ")
    if view.branch:
        text.append(f"[{view.branch}] ", style="italic")
    text.append(body, style="bold" if visit is not None else "dim")
    if result:
        text.append(result, style="bold")
    return text


def node_detail(view: Any, visit: dict | None, actions: list[dict]) -> Text:
    """The detail panel for a node: what it is, what the walk decided, and the evidence."""
    text = Text()
    text.append(view.text, style="bold")
    facts = [str(view.kind)] + ([f"plugin {', '.join(view.plugins)}"] if view.plugins else []) + (
        [f"{view.branch} branch"] if view.branch else [])
    if visit is None:
        text.append(f"\n{' · '.join(facts)} · not visited: the measured path does not pass here")
        return text
    text.append(f"\n{' · '.join(facts)} · ")
    text.append(f"result: {visit.get('result')}", style="bold")
    if visit.get("evidence"):
        text.append(f"\nevidence: {visit['evidence']}")
    for action in actions:
        text.append(f"\nrecommends: {action.get('title')}", style="bold")
    return text


def plan_text(plan: Any) -> Text:
    """The plan: its summary, then the steps in order with plugin, phase and why."""
    text = Text()
    text.append("Plan", style="bold underline")
    text.append(f"\n{plan.summary}\n")
    for step in plan.steps:
        tags = [f"phase {step.phase}", str(step.kind)]
        if step.optional:
            tags.append("optional")
        if step.fidelity_gated:
            tags.append("kept only if its outputs match the original's")
        text.append(f"\n{step.order}. {step.title}", style="bold")
        text.append(f"  [{', '.join(step.plugins) or 'advice'}; {', '.join(tags)}]")
        text.append(f"\n   why: {step.why}")
        if step.expected:
            text.append(f"\n   expected: {step.expected}", style="italic")
    return text


def _walk(node: Any) -> list[Any]:
    """A tree node and all its descendants, in display order."""
    nodes = [node]
    for child in node.children:
        nodes += _walk(child)
    return nodes


class TreePane(StepPane):
    """A Tree widget of every node; the detail panel follows the highlighted node."""

    STEP_ID = "tree"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: object = _UNSET
        self._visits: dict[str, dict] = {}
        self._actions: dict[str, list[dict]] = {}

    def compose(self) -> ComposeResult:
        """Intro, tree, node detail and the plan."""
        yield Label(NO_WALK, id="intro", classes="hint")
        yield Tree("decision tree", id="tree")
        with VerticalScroll(id="node-box"):
            yield Static("", id="node-detail")
        with VerticalScroll(id="plan-box"):
            yield Static("", id="plan")

    def on_mount(self) -> None:
        """Show the root, so the whole tree is one widget."""
        self.query_one(Tree).show_root = True

    def sync(self) -> None:
        """Rebuild the tree when the session holds a new decision path."""
        path = self.session.path
        if path == self._shown:
            return
        self._shown = path
        tree = self.query_one(Tree)
        if path is None or self.session.plan is None:
            tree.reset("decision tree")
            self.query_one("#intro", Label).update(NO_WALK)
            self.query_one("#node-detail", Static).update("")
            self.query_one("#plan", Static).update("")
            return
        data = to_data(path)
        self._visits = {v["id"]: v for v in data["visited"]}
        self._actions = {}
        for action in data["actions"]:
            self._actions.setdefault(action["node"], []).append(action)
        root_view = tree_nodes(self.session.target or path.target, self.session.catalog())
        tree.reset(node_label(root_view, self._visits.get(root_view.id)), data=root_view)
        self._add_branch(tree.root, root_view)
        tree.root.expand_all()
        visited = sum(1 for n in _walk(tree.root) if n.data is not None and n.data.id in self._visits)
        total = len(_walk(tree.root))
        self.query_one("#intro", Label).update(
            f"{self.session.target} tree · ✓ visited: {visited} of {total} nodes · ↑↓ shows a node's evidence")
        self.query_one("#plan", Static).update(plan_text(self.session.plan))
        self._show_detail(root_view)
        # Start on the first node whose decision has evidence: it shows what the panel is for.
        first = next((n for n in _walk(tree.root) if n.data is not None
                      and (self._visits.get(n.data.id) or {}).get("evidence")), None)
        if first is not None:
            # Node line numbers exist once the tree has laid out its new nodes.
            self.call_after_refresh(tree.move_cursor, first)
            self._show_detail(first.data)

    def _label_width(self, depth: int, branch: bool) -> int:
        """The columns a node's label has at `depth`: the tree's width less its guides, expand icon and scrollbar."""
        tree = self.query_one(Tree)
        # Hidden (another step on screen), the tree has no width yet: the pane's share of the terminal.
        width = tree.size.width or self.app.size.width - STEP_LIST_COLUMNS
        return width - SCROLLBAR - tree.guide_depth * depth - (2 if branch else 0)

    def _add_branch(self, node: Any, view: Any, depth: int = 1) -> None:
        for child in view.children:
            label = node_label(child, self._visits.get(child.id), self._label_width(depth, bool(child.children)))
            if child.children:
                self._add_branch(node.add(label, data=child), child, depth + 1)
            else:
                node.add_leaf(label, data=child)

    def _show_detail(self, view: Any) -> None:
        self.query_one("#node-detail", Static).update(
            node_detail(view, self._visits.get(view.id), self._actions.get(view.id, [])))

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        if event.node.data is not None:
            self._show_detail(event.node.data)
