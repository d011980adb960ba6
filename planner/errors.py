"""The error hierarchy: every error a user can act on says what went wrong and what to do.

Also here: another library's error read into one plain line (`failure_reason`, `runtime_error_line`).
The measuring worker reports any candidate's failure that way, and the ONNX tools and plugins their
own, so the reading sits below all of them, beside the errors it words.
"""

from __future__ import annotations

import re


class PlannerError(Exception):
    """An error with a message a user can act on; the CLI prints it without a traceback."""

    exit_code = 2

    def __init__(self, problem: str, fix: str = "") -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}: {fix}" if fix else problem)


class ModelLoadError(PlannerError):
    """The model source could not be found, read, trusted or built."""


class InputSpecError(PlannerError):
    """The input shape is malformed or the model rejects it."""


class OutputDirError(PlannerError):
    """The output folder cannot be created or written."""


class RequirementsError(PlannerError):
    """A requirements file or flag is malformed."""


# Other libraries' errors in one line: exporters, ONNX Runtime, onnx's checks, OpenVINO.

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def failure_reason(exc: BaseException) -> str:
    """One readable line for an exporter failure: the unsupported op when one is named."""
    text = _ANSI.sub("", str(exc)).strip()
    op = _unsupported_op(text)
    if op:
        return f"unsupported op {op}"
    if "## Exception summary" in text:
        # torch.export-based exporter: a boilerplate header, then the real cause.
        text = text.split("## Exception summary", 1)[1]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    line = re.sub(r"^<class '(?:[\w.]+\.)?(\w+)'>:\s*", r"\1: ", line)
    if not line:
        return type(exc).__name__
    if not re.match(r"^\w+(Error|Exception|Node)\b", line):
        line = f"{type(exc).__name__}: {line}"
    return line if len(line) <= 240 else line[:237] + "..."


def _unsupported_op(text: str) -> str | None:
    patterns = (
        r"No ONNX function found for <OpOverload\(op='([^']+)'",  # torch.export-based exporter
        r"unrecognized namespace ([\w:.]+?)\.?\s",  # TorchScript exporter, custom namespace
        r"Exporting the operator '?([\w:.]+?)'? to ONNX opset version \d+ is not supported",
    )
    for pattern in patterns:
        match = re.search(pattern, text)
        if match:
            name = match.group(1)
            return name if "::" in name else name.replace(".", "::", 1)
    return None


_ORT_ERROR = re.compile(r"\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:\s*(.*)", re.S)
# onnx's C++ checks: "/path/convert.cc:101: convert_graph: Assertion `cond` failed: <why>".
_ONNX_ASSERTION = re.compile(r"^\S+\.(?:cc|cpp|h):\d+: \w+: Assertion `.*?` failed: (.+)", re.S)
_OV_SOURCE_LINE = re.compile(r"^(Exception from src/|Check '.*' failed at|While validating|FrontEnd API failed"
                             r"|Model wasn't fully converted|Summary:|-- )")


def runtime_error_line(exc: BaseException) -> str:
    """One plain line for a runtime's or converter's error: its message without source locations or node dumps.

    ONNX Runtime's '[ONNXRuntimeError] : 10 : INVALID_GRAPH : Load model ... , Error <why>' becomes '<why>';
    OpenVINO's conversion report becomes the ops it could not convert and the first reason given.
    """
    text = str(exc).strip()
    ort = _ORT_ERROR.search(text)
    if ort:
        body = ort.group(1).strip()
        why = body.rsplit(", Error ", 1)[-1] if ", Error " in body else body.split("failed:", 1)[-1]
        return _clip(why.strip().splitlines()[0] if why.strip() else body)
    assertion = _ONNX_ASSERTION.search(text)
    if assertion:
        return _clip(assertion.group(1).strip().splitlines()[0])
    failed_ops = re.search(r"Conversion is failed for:\s*(.+)", text)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    messages = [ln for ln in lines if not _OV_SOURCE_LINE.match(ln) and not ln.endswith(":")]
    if failed_ops:
        first = f" (first: {messages[0]})" if messages else ""
        return _clip(f"OpenVINO could not convert {failed_ops.group(1).strip()}{first}")
    if text.startswith("Exception from src/") and messages:
        return _clip(messages[0])
    return failure_reason(exc)


def _clip(line: str, limit: int = 240) -> str:
    return line if len(line) <= limit else line[:limit - 3] + "..."
