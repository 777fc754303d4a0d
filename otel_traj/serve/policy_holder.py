"""The service's current policy, swapped atomically on reload.

The pipeline is built once, with :meth:`PolicyHolder.grade` (and ``grade_all``) and
:meth:`PolicyHolder.live` as its grade and live functions; they read the grader of the moment, so a
reload affects every trace graded after it and never one half-graded.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from otel_traj.config import AssemblerConfig
from otel_traj.grader import Grader
from otel_traj.live import live_scope, subject_attributes
from otel_traj.pipeline import LiveChecker, LiveFactory, ungraded
from otel_traj.policy import Policy, PolicyError, load_policy
from otel_traj.records import TraceContext
from otel_traj.redact import default_sensitive_key
from otel_traj.stats import PipelineStats
from otel_traj.trajectory import Trajectory
from otel_traj.verdict import Verdict

logger = logging.getLogger("otel_traj.serve")


class PolicyHolder:
    """Holds the policy loaded from ``path`` (None: trajectories are recorded ungraded).

    The constructor raises :class:`PolicyError` for an invalid file: a service must not start on a
    policy it cannot read. :meth:`reload` keeps the old policy instead. ``stats`` counts the custom
    checks that raise (``check_errors``), under every policy loaded.
    """

    def __init__(self, path: str | None, stats: PipelineStats | None = None) -> None:
        self.path = path
        self._stats = stats
        self._state: tuple[Policy, Grader, LiveFactory] | None = None
        if path is not None:
            self._install(load_policy(path))

    def _install(self, policy: Policy) -> None:
        self._state = (policy, Grader(policy, self._stats), live_scope(policy))

    @property
    def policy(self) -> Policy | None:
        state = self._state
        return state[0] if state is not None else None

    def assembler_config(self, config: AssemblerConfig) -> AssemblerConfig:
        """``config`` capturing the span attributes the policy's scope subjects are read from."""
        policy = self.policy
        return config.with_capture(subject_attributes(policy)) if policy is not None else config

    def grade(self, trajectory: Trajectory) -> Verdict:
        state = self._state
        return state[1].grade(trajectory) if state is not None else ungraded(trajectory)

    def grade_all(self, trajectories: Sequence[Trajectory]) -> list[Verdict]:
        state = self._state
        return state[1].grade_all(trajectories) if state is not None else [ungraded(t) for t in trajectories]

    def live(self, context: TraceContext) -> LiveChecker | None:
        state = self._state
        return state[2](context) if state is not None else None

    def is_sensitive(self, tool: str, key: str) -> bool:
        """The redaction predicate for sinks that publish arguments (Langfuse)."""
        policy = self.policy
        return policy.is_sensitive(tool, key) if policy is not None else default_sensitive_key(tool, key)

    def reload(self, captured: tuple[str, ...], judging: bool = False) -> None:
        """Load the file again; raises :class:`PolicyError` and keeps the old policy if it is invalid.

        ``captured``: the attributes the running assembler captures; a new policy that reads its
        subject from others takes full effect only after a restart, which is logged. ``judging``:
        whether the service runs judges (it does when started on a policy with judges); judges new
        to a service without them run only after a restart, which is logged too.
        """
        if self.path is None:
            raise PolicyError("<none>", [("", "the service was started without a policy file")])
        policy = load_policy(self.path)
        missing = [key for key in subject_attributes(policy) if key not in captured]
        if missing:
            logger.warning(
                "policy %s reads subject attributes %s that this process does not capture; "
                "restart the service for them to take effect",
                self.path,
                ", ".join(missing),
            )
        if policy.has_judges() and not judging:
            logger.warning(
                "policy %s has LLM judges; this process was started without any: "
                "restart the service for them to run",
                self.path,
            )
        self._install(policy)
        logger.info("policy reloaded from %s: %s", self.path, policy.policy_version)


__all__ = ["PolicyError", "PolicyHolder"]
