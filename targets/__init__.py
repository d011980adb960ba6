"""Built-in optimization plugins, registered through the `planner.targets` entry-point group."""
