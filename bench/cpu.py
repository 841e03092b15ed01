"""Where a benchmark's processor time goes: the CPU seconds of groups of this machine's
processes (read from /proc) and how busy its processors were, between two snapshots.

A group is a set of process trees (a worker and its pool processes, the LLM server) or every
process of a name (PostgreSQL's backends, Redis); what no group holds is "other". A database
on another machine is simply not seen: its group is then left out of the figures.
"""

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
PROCESSORS = os.cpu_count() or 1


@dataclass(frozen=True)
class Group:
    name: str
    roots: tuple[int, ...] = ()  # these processes and everything under them
    commands: tuple[str, ...] = ()  # or every process whose command name starts so


def _processes() -> Iterable[tuple[int, int, str, float]]:
    """(pid, parent pid, command name, CPU seconds) of every process readable now."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        # utime and stime: fields 14 and 15 of proc(5), 12th and 13th after the name
        yield int(entry.name), int(fields[1]), name, (int(fields[11]) + int(fields[12])) / TICKS


def _busy() -> tuple[float, float]:
    """(busy, all) processor seconds since boot, every processor together."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle and iowait
    total = sum(values[:8])  # user .. steal; guest time is counted inside user
    return (total - idle) / TICKS, total / TICKS


@dataclass
class Snapshot:
    by_group: dict[str, float]
    busy: float
    total: float


def snapshot(groups: list[Group]) -> Snapshot:
    processes = list(_processes())
    children: dict[int, list[int]] = {}
    for pid, parent, _, _ in processes:
        children.setdefault(parent, []).append(pid)
    cpu = {pid: seconds for pid, _, _, seconds in processes}
    taken: set[int] = set()
    by_group: dict[str, float] = {}
    for group in groups:
        members: set[int] = set()
        stack = [pid for pid in group.roots if pid in cpu]
        while stack:
            pid = stack.pop()
            if pid not in members:
                members.add(pid)
                stack += children.get(pid, [])
        if group.commands:
            members |= {pid for pid, _, name, _ in processes if name.startswith(group.commands)}
        members -= taken
        taken |= members
        by_group[group.name] = sum(cpu[pid] for pid in members) if members else float("nan")
    busy, total = _busy()
    return Snapshot(by_group, busy, total)


def report(before: Snapshot, after: Snapshot, units: int, what: str) -> str:
    """One line: CPU milliseconds per unit for each group seen, the rest of the machine's busy
    time as "other", and how busy the processors were."""
    parts, accounted = [], 0.0
    for name, start in before.by_group.items():
        spent = after.by_group[name] - start
        if spent == spent:  # not NaN: the group was seen
            parts.append(f"{name} {spent * 1000 / units:.1f}")
            accounted += spent
    busy = after.busy - before.busy
    parts.append(f"other {(busy - accounted) * 1000 / units:.1f}")
    share = busy / (after.total - before.total) if after.total > before.total else 0.0
    return (
        f"CPU ms a {what}: {', '.join(parts)} (all {busy * 1000 / units:.1f}); "
        f"processors {share:.0%} busy ({PROCESSORS})"
    )
