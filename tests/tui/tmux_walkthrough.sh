#!/usr/bin/env bash
# Walk the planner TUI in detached tmux sessions on demo:tiny, once at 80x24 and once at 120x40,
# and save every step's screen as plain text (tmux capture-pane) after a first Optimize run, a
# re-run and a cancelled run; then check the captures for what a reviewer must never see:
# duplicate candidate rows, an efficiency above 100%, internal ids or "seed" words.
#
#   tests/tui/tmux_walkthrough.sh [CAPTURE_DIR]     (default: a new temporary folder)
#   SIZES="80x24" tests/tui/tmux_walkthrough.sh      (one size only)
#
# It measures for real (quick profile; optimize with cpu.onnxruntime only): a few minutes per size.
# Exit status 1 when a check fails (each failure is listed with its capture file).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PLANNER=${PLANNER:-$ROOT/.venv/bin/planner}
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
CAPTURES=${1:-$(mktemp -d -t planner-tui-captures-XXXX)}
SIZES=${SIZES:-"80x24 120x40"}
SESSION=""
mkdir -p "$CAPTURES"

cleanup() { [ -n "$SESSION" ] && tmux kill-session -t "$SESSION" 2>/dev/null || true; }
trap cleanup EXIT

screen() { tmux capture-pane -p -t "$SESSION"; }
keys() { tmux send-keys -t "$SESSION" "$@"; sleep 0.4; }
snap() { screen > "$CAPTURES/$PREFIX-$1.txt"; echo "captured $PREFIX-$1"; }

# wait_for TEXT SECONDS: poll the screen until TEXT shows (fail loudly with the screen if not).
wait_for() {
    local text=$1 limit=${2:-60} waited=0
    until screen | grep -qF -- "$text"; do
        sleep 0.5
        waited=$((waited + 1))
        if [ "$waited" -ge $((limit * 2)) ]; then
            echo "timed out after ${limit}s waiting for: $text" >&2
            screen >&2
            exit 1
        fi
    done
    sleep 0.5
}

# wait_gone TEXT SECONDS: poll until TEXT is no longer on screen (a run's "running…" status).
wait_gone() {
    local text=$1 limit=${2:-60} waited=0
    while screen | grep -qF -- "$text"; do
        sleep 0.5
        waited=$((waited + 1))
        if [ "$waited" -ge $((limit * 2)) ]; then
            echo "timed out after ${limit}s waiting for this to go: $text" >&2
            screen >&2
            exit 1
        fi
    done
    sleep 0.5
}

# Every tab of the Results step: the table, the detail of the first row, and both plots.
results_tabs() {
    keys 8
    wait_for "step 8/9" 30
    snap "$1-08-results-table"
    keys o;   snap "$1-08-results-sorted"
    keys ']'; snap "$1-08-results-p50-plot"
    keys ']'; snap "$1-08-results-throughput-plot"
    keys ']'
}

# Save the report and capture its preview.
save_report() {
    keys 9
    wait_for "step 9/9" 30
    keys s
    wait_for "Saved" 120
    wait_for "Summary" 30
    snap "$1-09-report"
}

walk() {
    local width=$1 height=$2 work
    PREFIX="${width}x${height}"
    work=$(mktemp -d -t planner-tui-work-XXXX)   # the TUI's working folder: reports/ goes here
    SESSION="planner-walk-$$-$width"
    tmux new-session -d -s "$SESSION" -x "$width" -y "$height" -c "$work" \
        "env TERM=xterm-256color $PLANNER tui --model demo:tiny; sleep 2"

    # 1-3. Start-up: detect, load the model, measure the ceilings (quick, cached).
    wait_for "✓ 2 Model" 180
    snap 01-hardware
    keys 2;  snap 02-model
    keys 3;  snap 03-requirements

    # 4. Profile (quick), then its tabs.
    keys 4 r
    wait_for "✓ 4 Profile" 300
    snap 04-profile-summary
    keys ']'; snap 04-profile-chart
    keys ']'; snap 04-profile-layers
    keys ']'; snap 04-profile-findings

    # 5-6. Checklist, Continue, and the decision tree with a visited node highlighted.
    keys 5;  snap 05-checklist
    keys r
    wait_for "✓ 5 Checklist" 30
    snap 06-tree
    keys Tab Down; snap 06-tree-detail
    keys Escape

    # 7. Optimize with ONNX Runtime only: walk the list and untick every other ticked plugin.
    keys 7
    wait_for "planned plugins preselected" 60
    keys Tab
    screen | grep -F "▐" | while IFS= read -r line; do
        if [[ $line == *"▐✓▌"* && $line != *"cpu.onnxruntime"* ]]; then keys Space; fi
        keys Down
    done
    keys Escape
    snap 07-optimize-chosen
    keys r
    wait_for "✓ 7 Optimize" 600
    wait_for "done:" 60
    snap run1-07-optimize-done
    results_tabs run1
    save_report run1

    # A re-run: its results replace the first run's (no label twice), and the saved report goes stale.
    keys 7 r
    wait_for "running…" 30
    wait_gone "running…" 600
    snap run2-07-optimize-done
    results_tabs run2
    keys 9
    wait_for "step 9/9" 30
    snap run2-09-report-stale
    save_report run2

    # A cancelled run: c stops it after the current candidate, and it counts only what it measured.
    keys 7 r
    wait_for "running…" 30
    keys c
    wait_for "cancelled:" 600
    snap run3-07-optimize-cancelled
    results_tabs run3
    save_report run3

    # A cancelled profile: c ends its measurement; the step says cancelled, not failed.
    keys 4 r
    wait_for "running…" 30
    keys c
    wait_gone "cancelling…" 120
    snap 13-profile-cancelled

    # Help, the size guard, and quitting while a run is in progress.
    keys '?'
    wait_for "planner: keys" 10
    snap 10-help
    keys Escape
    sleep 0.5
    tmux resize-window -t "$SESSION" -x 60 -y 20; sleep 1; snap 11-too-small
    tmux resize-window -t "$SESSION" -x "$width" -y "$height"; sleep 1; snap 11-size-restored
    keys 4 r
    wait_for "running…" 30
    keys q; snap 12-quit-confirm
    keys n
    wait_gone "running…" 300
    keys q
    sleep 2
    tmux kill-session -t "$SESSION" 2>/dev/null || true
    SESSION=""
    echo "the TUI's working folder at $PREFIX (the saved report and results.json): $work"
}

for size in $SIZES; do
    walk "${size%x*}" "${size#*x}"
done
echo "captures in $CAPTURES"

# What no capture may show: checked on the plain-text screens a person would read.
"$PYTHON" - "$CAPTURES" <<'PY'
import re
import sys
from pathlib import Path

captures = sorted(Path(sys.argv[1]).glob("*.txt"))
internal = re.compile(r"\bseed\b|pitfall \d|\b(cpu|gpu|edge)\.\d(\.\w+)?\b", re.IGNORECASE)
over = re.compile(r"\b(\d{3,}(?:\.\d+)?|1\d\d(?:\.\d+)?)%")
efficiency_words = re.compile(r"roofline|efficien|of peak|bound|ceiling", re.IGNORECASE)
problems = []
for path in captures:
    lines = path.read_text(errors="replace").splitlines()
    for line in lines:
        if internal.search(line):
            problems.append(f"{path.name}: internal word: {line.strip()}")
        for match in over.finditer(line):
            if float(match.group(1)) > 100 and efficiency_words.search(line):
                problems.append(f"{path.name}: efficiency above 100%: {line.strip()}")
    if "results-table" in path.name or "results-sorted" in path.name:
        # Table rows sit after the header line ("candidate ... p50 ms"): the label is the cell
        # before the first number; the same label twice is a duplicated candidate.
        rows, cut = [], None
        for line in lines:
            body = line.split("▕", 1)[-1]
            if cut is None:
                if "candidate" in body and "p50 ms" in body:
                    cut = body.index("p50 ms") - 1  # numbers are right-aligned: the label ends before
                continue
            if not re.match(r"\s*[\d—][\d—.,x ]*", body[cut:]) or not body[:cut].strip():
                break  # past the table: the details panel
            rows.append(body[:cut].strip())
        repeated = sorted({r for r in rows if rows.count(r) > 1})
        if repeated:
            problems.append(f"{path.name}: duplicate rows: {', '.join(repeated)}")
print(f"checked {len(captures)} captures")
for problem in problems:
    print("FAIL", problem)
sys.exit(1 if problems else 0)
PY
