#!/usr/bin/env bash
# Walk the planner TUI in a detached 80x24 tmux session on demo:tiny and save every step's
# screen as plain text (tmux capture-pane), so a person can read what the TUI shows.
#
#   tests/tui/tmux_walkthrough.sh [CAPTURE_DIR]     (default: a new temporary folder)
#
# It measures for real (quick profile; optimize with cpu.onnxruntime only): about a minute.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PLANNER=${PLANNER:-$ROOT/.venv/bin/planner}
CAPTURES=${1:-$(mktemp -d -t planner-tui-captures-XXXX)}
WORK=$(mktemp -d -t planner-tui-work-XXXX)   # the TUI's working folder: reports/ goes here
SESSION="planner-walk-$$"
mkdir -p "$CAPTURES"

cleanup() { tmux kill-session -t "$SESSION" 2>/dev/null || true; }
trap cleanup EXIT

screen() { tmux capture-pane -p -t "$SESSION"; }
keys() { tmux send-keys -t "$SESSION" "$@"; sleep 0.4; }
snap() { screen > "$CAPTURES/$1.txt"; echo "captured $1"; }

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

tmux new-session -d -s "$SESSION" -x 80 -y 24 -c "$WORK" \
    "env TERM=xterm-256color $PLANNER tui --model demo:tiny; sleep 2"

# 1. Start-up: detect, measure the ceilings (quick, cached), load the model.
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

# 5–6. Checklist, Continue, and the decision tree with a visited node highlighted.
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
snap 07-optimize-chosen
keys r
wait_for "✓ 7 Optimize" 600
snap 07-optimize-done

# 8. Results: the table, sorting, and both plots.
keys 8;   snap 08-results-table
keys o;   snap 08-results-sorted-p95
keys ']'; snap 08-results-p50-plot
keys ']'; snap 08-results-throughput-plot

# 9. Report: save to the default folder and preview it.
keys 9 s
wait_for "Saved" 120
wait_for "Summary" 30
snap 09-report

# Help, the size guard, and quitting while a run is in progress.
keys '?'
wait_for "planner: keys" 10
snap 10-help
keys Escape
sleep 0.5
tmux resize-window -t "$SESSION" -x 60 -y 20; sleep 1; snap 11-too-small
tmux resize-window -t "$SESSION" -x 80 -y 24; sleep 1
keys 4 r
wait_for "running" 30
keys q; snap 12-quit-confirm
keys n
wait_for "done" 300
keys q
sleep 2
echo "captures in $CAPTURES"
echo "the TUI's working folder (the saved report and results.json): $WORK"
