"""Health checks: phased probes of each server (spawn, initialize, tools, ping, smoke call), the run's
report, the tool-surface lock and its drift, and JUnit XML for CI."""
