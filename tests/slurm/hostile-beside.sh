#!/bin/sh
# hostile-beside.sh - hostile.sh with conf/slurm/beside/: Slurm's own
# proctrack/cgroup and task/cgroup beside cgpool's memory slot.
S_HOSTILE_VARIANT=beside
. "${top_srcdir:-.}/tests/slurm/hostile.sh"
