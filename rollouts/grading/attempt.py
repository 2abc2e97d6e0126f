from dataclasses import dataclass, field

from rollouts.models import Rollout, StepKind


@dataclass
class Attempt:
    """Everything a grader may look at. Probes have no trajectory and no overlay."""

    prompt: str
    answer: str
    trajectory: str = ""
    changed_files: list[tuple[str, str]] = field(default_factory=list)  # (path, text after)
    overlay: object = None
    world: object = None
    env_task_id: int | None = None  # its input files are laid over the world, as the agent saw them
    _workspace: object = field(default=None, repr=False, compare=False)

    def workspace(self):
        """The world (with the task's input files) merged with the attempt's overlay, loaded
        once for all its checks."""
        if self._workspace is None:
            from workspace.tools import Workspace
            from workspace.tools.world import world_items_of

            self._workspace = Workspace(self.world, self.overlay, world_items=world_items_of(self.world.pk, self.env_task_id))
        return self._workspace


def attempt_of_rollout(rollout: Rollout) -> Attempt:
    from workspace.selectors import overlay_diff

    lines = []
    # Numbered as the trajectory page numbers them, so the judge can name the steps a verdict rests on.
    for step in rollout.steps.order_by("index").defer("raw_response"):
        if step.kind == StepKind.MODEL:
            calls = ", ".join(f"{c['name']}({c.get('raw_arguments') or c.get('arguments')})" for c in step.tool_calls)
            lines.append(f"[step {step.index + 1}, assistant] {step.text}" + (f"\n  calls: {calls}" if calls else ""))
        else:
            lines.append(f"[step {step.index + 1}, tool {step.tool_name}] {step.text[:2000]}")
    changes = []
    if rollout.overlay_id:
        diff = overlay_diff(overlay=rollout.overlay, env_task_id=rollout.batch.env_task_id)
        changes = [(c.path, c.after or "") for c in diff if c.action != "deleted"]
    return Attempt(
        prompt=rollout.batch.task_snapshot["prompt"], answer=rollout.final_answer, trajectory="\n".join(lines)[-60_000:],
        changed_files=changes, overlay=rollout.overlay, world=rollout.batch.env_task.world, env_task_id=rollout.batch.env_task_id,
    )
