"""The bridge's counters as /rynn/status and /diagnostics carry them, read from its ROS-free parts in one place,
so a test builds the diagnostics from what the node publishes."""

from __future__ import annotations

from rynn_common.pipeline_stats import PipelineStats
from rynn_robot_bridge.bridge.commander import RobotCommander
from rynn_robot_bridge.bridge.lcm_link import LcmRobotLink
from rynn_robot_bridge.bridge.rate_loop import FixedRateThread


def mirror_bridge_counters(stats: PipelineStats, commander: RobotCommander, command_loop: FixedRateThread,
                           link: LcmRobotLink, frames_forwarded: int) -> None:
    """Copy the totals the commander, the command loop and the LCM link keep into ``stats``: rejected inputs,
    dropped ones, and events (counted, neither: Ruckig re-plans of the approach, loop periods skipped).

    ``command_deadlines_missed`` counts only periods a command was owed in (the robot commanded), so
    ``command_deadlines_missed / (command_deadlines_missed + commands_sent)`` is the share of owed commands
    that did not go out; ``command_loop_periods_skipped`` is every period the loop skipped, in any mode."""
    state_rejects = {f"robot_state_{reason.removeprefix('rejected_')}": count
                     for reason, count in vars(commander.state_validator.counters).items()
                     if reason.startswith("rejected_") and count}
    stats.set_totals(
        outputs=frames_forwarded + link.commands_sent,
        rejected={**link.rejected(), **state_rejects},
        dropped={"command_cycle_errors": command_loop.errors,
                 "stale_action_watchdog_trips": commander.watchdog_trips,
                 "command_deadlines_missed": command_loop.missed_deadlines},
        events={"approach_unsynchronized_steps": commander.approach_unsynchronized_steps,
                "command_loop_periods_skipped": command_loop.skipped_periods,
                "commands_sent": link.commands_sent})
