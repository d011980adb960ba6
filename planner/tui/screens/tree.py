"""Step 6, Decision tree: the target's tree with the path the measurements took, its evidence, and the plan."""

from __future__ import annotations

from typing import Any, Mapping

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from planner.advice import tree_nodes
from planner.codec import to_data
from planner.tui.screens.base import StepPane
from planner.tui.screens.llm import DOES_NOT_APPLY

_UNSET = object()
VISITED = "✓"
STEP_LIST_COLUMNS = 20  # the step list, its border and the pane's padding
SCROLLBAR = 2
NO_WALK = "Answer the checklist (step 5) to walk the tree."


def label_words(view: Any, visit: dict | None) -> tuple[tuple[str, str], list[tuple[str, str]]]:
    """A node's label as styled words: the mark (✓ and bold when the walk visited it), then the branch it hangs on,
    its text and what it decided ('→ recommended' is one word, so it never splits)."""
    mark = (VISITED, "bold") if visit is not None else (" ", "")
    words = [(f"[{view.branch}]", "italic")] if view.branch else []
    words += [(word, "bold" if visit is not None else "dim") for word in str(view.text).split()]
    if visit is not None and visit.get("result") not in (None, "", "step"):
        words.append((f"→ {visit['result']}", "bold"))
    return mark, words


def wrap_words(words: list[tuple[str, str]], width: int) -> list[Text]:
    """Styled words in lines of at most `width` columns, broken between words (a word wider than a line is cut
    into pieces, never lost)."""
    width = max(width, 1)
    lines = [Text()]
    for word, style in words:
        while len(word) > width:  # only a word longer than the whole line is split
            if lines[-1]:
                lines.append(Text())
            lines[-1].append(word[:width], style=style)
            word = word[width:]
            lines.append(Text())
        line = lines[-1]
        if line and len(line) + 1 + len(word) > width:
            line = Text()
            lines.append(line)
        if line:
            line.append(" ")
        line.append(word, style=style)
    return [line for line in lines if line] or [Text()]


def tree_rows(root: Any, visits: dict[str, dict], width: int) -> list[tuple[Any, Text]]:
    """Every node of the tree (root first, in display order) with its label drawn `width` columns wide: the tree's
    guides, then the label wrapped under itself, so no sentence is cut at any width."""
    rows: list[tuple[Any, Text]] = []

    def add(view: Any, lead: str, last: bool, depth: int) -> None:
        first, rest = "", ""
        if depth:
            first, rest = lead + ("└── " if last else "├── "), lead + ("    " if last else "│   ")
        mark, words = label_words(view, visits.get(view.id))
        # Continuation lines start under the label's text (after its mark); a node with children carries the
        # line down to them.
        lines = wrap_words(words, max(width - len(first) - 2, 12))
        prompt = Text(first, style="dim")
        prompt.append(mark[0], style=mark[1])
        prompt.append(" ")
        prompt.append_text(lines[0])
        for line in lines[1:]:
            prompt.append("\n")
            prompt.append(rest + ("│ " if view.children else "  "), style="dim")
            prompt.append_text(line)
        rows.append((view, prompt))
        for i, child in enumerate(view.children):
            add(child, rest, i == len(view.children) - 1, depth + 1)

    add(root, "", True, 0)
    return rows


def node_detail(view: Any, visit: dict | None, actions: list[dict], titles: Mapping[str, str] | None = None) -> Text:
    """The detail panel for a node: what it is, the plugins that measure it (by `titles`: name to plain title), what
    the walk decided, and the evidence."""
    titles = titles or {}
    text = Text()
    text.append(view.text, style="bold")
    plugins = [titles.get(name, name) for name in view.plugins]
    facts = [str(view.kind)] + ([f"measured by {', '.join(plugins)}"] if plugins else []) + (
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


def plan_text(plan: Any, titles: Mapping[str, str] | None = None) -> Text:
    """The plan: its summary, then the steps in order with the plugins that measure them (by `titles`: name to plain
    title), phase and why."""
    titles = titles or {}
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
        text.append(f"  [{', '.join(titles.get(p, p) for p in step.plugins) or 'advice'}; {', '.join(tags)}]")
        text.append(f"\n   why: {step.why}")
        if step.expected:
            text.append(f"\n   expected: {step.expected}", style="italic")
    return text


class TreePane(StepPane):
    """The tree as a list of its nodes, one option each (guides drawn in, labels wrapped to the width); the detail
    panel follows the highlighted node."""

    STEP_ID = "tree"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: object = _UNSET
        self._visits: dict[str, dict] = {}
        self._actions: dict[str, list[dict]] = {}
        self._root: Any = None
        self._titles: dict[str, str] = {}  # plugin name -> its plain title
        self._order: list[Any] = []  # the options' nodes, in order
        self._width = 0  # the width the labels were wrapped to

    def compose(self) -> ComposeResult:
        """Intro, tree, node detail and the plan."""
        yield Label(NO_WALK, id="intro", classes="hint")
        yield OptionList(id="tree", compact=True)
        with VerticalScroll(id="node-box"):
            yield Static("", id="node-detail")
        with VerticalScroll(id="plan-box"):
            yield Static("", id="plan")

    @property
    def nodes(self) -> list[Any]:
        """The tree's nodes in the order shown (root first)."""
        return list(self._order)

    def sync(self) -> None:
        """Rebuild the tree when the session holds a new decision path."""
        path = self.session.path
        llm = self.session.state.llm is not None
        if (path, llm) == self._shown:
            return
        self._shown = (path, llm)
        if path is None or self.session.plan is None:
            self._root, self._order = None, []
            self.query_one(OptionList).clear_options()
            self.query_one("#intro", Label).update(f"The decision tree {DOES_NOT_APPLY}." if llm else NO_WALK)
            self.query_one("#node-detail", Static).update("")
            self.query_one("#plan", Static).update("")
            return
        data = to_data(path)
        self._visits = {v["id"]: v for v in data["visited"]}
        self._actions = {}
        for action in data["actions"]:
            self._actions.setdefault(action["node"], []).append(action)
        catalog = self.session.catalog()
        self._titles = {d.name: d.title or d.name for d in catalog.declarations}
        self._root = tree_nodes(self.session.target or path.target, catalog)
        self._fill()
        visited = sum(1 for n in self._order if n.id in self._visits)
        self.query_one("#intro", Label).update(
            f"{self.session.target} tree · ✓ visited: {visited} of {len(self._order)} nodes · ↑↓ shows a node's "
            "evidence")
        self.query_one("#plan", Static).update(plan_text(self.session.plan, self._titles))
        # Start on the first node whose decision has evidence: it shows what the panel is for.
        first = next((i for i, n in enumerate(self._order) if (self._visits.get(n.id) or {}).get("evidence")), 0)
        self.query_one(OptionList).highlighted = first
        self._show_detail(self._order[first])

    def _label_width(self) -> int:
        """The columns a label has: the list's width less its scrollbar (before it is shown: the pane's share)."""
        tree = self.query_one(OptionList)
        width = tree.size.width or self.app.size.width - STEP_LIST_COLUMNS
        return width - SCROLLBAR

    def _fill(self) -> None:
        """One option per node, wrapped to the list's width, keeping the highlighted node."""
        tree = self.query_one(OptionList)
        highlighted = tree.highlighted
        self._width = self._label_width()
        rows = tree_rows(self._root, self._visits, self._width)
        self._order = [view for view, _ in rows]
        tree.clear_options()
        tree.add_options([Option(prompt, id=view.id) for view, prompt in rows])
        if highlighted is not None and highlighted < len(rows):
            tree.highlighted = highlighted

    def on_resize(self) -> None:
        """Wrap the labels to the new width."""
        if self._root is not None and self._label_width() != self._width:
            self._fill()

    def on_show(self) -> None:
        """A tree filled while this step was hidden was wrapped to a guessed width: wrap it to the real one."""
        self.on_resize()

    def _show_detail(self, view: Any) -> None:
        self.query_one("#node-detail", Static).update(
            node_detail(view, self._visits.get(view.id), self._actions.get(view.id, []), self._titles))

    @on(OptionList.OptionHighlighted, "#tree")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_index < len(self._order):
            self._show_detail(self._order[event.option_index])
