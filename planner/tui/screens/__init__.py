"""The step panes (one module per step) and the modal screens (help, quit confirmation)."""
