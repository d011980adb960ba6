"""Step 5, Checklist: the profiling checklist, answered from measurements, with the open items for the user."""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Label, Select, Static

from planner.errors import PlannerError
from planner.tui.screens.base import StepPane
from planner.tui.screens.llm import DOES_NOT_APPLY
from planner.tui.widgets.notice import Notice

_UNSET = object()

# How each answer status reads in the list (a word, so it reads without colour too).
STATUS_MARK = {"auto": "✓ measured", "user": "✓ you said", "ask-user": "? your turn",
               "not-measured": "– not measured"}


def reply_options(question: Any) -> list[tuple[str, str]]:
    """The replies a question offers, as (shown, value) pairs: yes/no, or the alternatives it names."""
    return [(label, label) for label, _ in getattr(question, "choices", (("yes", True), ("no", False)))]


def reply_id(question_id: str) -> str:
    """A widget id for a question's reply control."""
    return "reply-" + re.sub(r"[^A-Za-z0-9_-]", "-", question_id)


def answer_text(answer: Any) -> Text:
    """A checklist item: status, question (and hint), the answer, and the evidence behind it."""
    status = str(answer.status)
    text = Text()
    text.append(f"{STATUS_MARK.get(status, status)}  ", style="bold")
    text.append(answer.question.text, style="bold")
    if answer.question.hint:
        text.append(f"  ({answer.question.hint})", style="dim")
    text.append(f"\n{answer.answer}")
    if answer.evidence:
        text.append("\nevidence: ", style="italic")
        text.append(answer.evidence)
    if status == "ask-user" and answer.prompt:
        text.append(f"\n{answer.prompt}", style="italic")
    return text


class ChecklistPane(StepPane):
    """Every answer; an open item offers its replies (yes/no, or an either/or's alternatives); Continue re-plans."""

    STEP_ID = "checklist"
    RUN_LABEL = "Continue with these answers"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: object = _UNSET

    def compose(self) -> ComposeResult:
        """Intro, the items, and the Continue button."""
        yield Label("Run the Profile step (4) first: the answers come from the baseline.", id="intro",
                    classes="hint")
        yield VerticalScroll(id="items")
        with Horizontal(classes="toolbar"):
            yield Button("Continue (r)", id="continue", compact=True)
            yield Label("", id="status", classes="status")
        yield Notice(id="notice")

    def forget_runs(self, model: str) -> None:
        """A new model: 'planned with N of your answers' was about the checklist of the one before."""
        self.query_one("#status", Label).update("")
        self.query_one(Notice).clear()

    def sync(self) -> None:
        """Rebuild the items when the session holds new answers."""
        answers = self.session.answers
        llm = self.session.state.llm is not None
        if (answers, llm) == self._shown:
            return
        self._shown = (answers, llm)
        items = self.query_one("#items", VerticalScroll)
        if not answers:
            self.replace_children(items, [])
            self.query_one("#intro", Label).update(
                f"The checklist {DOES_NOT_APPLY}." if llm else
                "Run the Profile step (4) first: the answers come from the baseline.")
            return
        open_items = sum(1 for a in answers if str(a.status) in ("ask-user", "user"))
        self.query_one("#intro", Label).update(
            f"{len(answers)} items for target {self.session.target}: {len(answers) - open_items} from "
            f"measurements, {open_items} for you. Answer, then Continue (r).")
        widgets = []
        # The items waiting for the user come first: they are what this step asks of them.
        for answer in sorted(answers, key=lambda a: str(a.status) not in ("ask-user", "user")):
            status = str(answer.status)
            children: list = [Static(answer_text(answer))]
            if status in ("ask-user", "user"):
                options = reply_options(answer.question)
                previous = self.session.replies.get(answer.question.id, "").strip().lower()
                value = previous if previous in {v for _, v in options} else Select.NULL
                prompt = "your answer: " + " or ".join(shown for shown, _ in options)
                children.append(Select(options, prompt=prompt, value=value,
                                       id=reply_id(answer.question.id), compact=True))
            widgets.append(Vertical(*children, classes=f"check-item -{status}"))
        self.replace_children(items, widgets)

    def replies(self) -> dict[str, str]:
        """The user's answers by question id (unanswered items are left out)."""
        out = {}
        for answer in self.session.answers:
            for select in self.query(f"#{reply_id(answer.question.id)}").results(Select):
                if isinstance(select.value, str):
                    out[answer.question.id] = select.value
        return out

    def run_step(self) -> None:
        """Re-plan with the replies and go on to the decision tree."""
        if self.session.state.llm is not None:
            self.query_one(Notice).show_error(f"the checklist {DOES_NOT_APPLY}", "press 7, then r")
            return
        if self.session.baseline is None:
            self.query_one(Notice).show_error("there is no baseline to answer the checklist from",
                                              "run the Profile step first (press 4, then r)")
            return
        if self.planner.job is not None:
            self.notify(f"{self.planner.job.title} is running: continue when it finishes.",
                        severity="warning")
            return
        replies = self.replies()
        try:
            # Deciding is pure computation over the baseline (milliseconds), so no worker is needed.
            # The session keeps the replies, and records the checklist as answered.
            self.session.decide(replies=replies)
        except PlannerError as exc:
            self.query_one(Notice).show_exception(exc)
            return
        self.query_one(Notice).clear()
        self.query_one("#status", Label).update(f"planned with {len(replies)} of your answers")
        self.planner.session_changed()
        self.planner.goto("tree")

    @on(Button.Pressed, "#continue")
    def _continue_pressed(self) -> None:
        self.run_step()
