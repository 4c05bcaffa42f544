"""Servers for tests and benchmarks (serve-sim). No pipeline job imports this package, so
editing it reruns nothing."""
