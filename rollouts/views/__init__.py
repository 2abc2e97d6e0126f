from rollouts.views.batches import batch_cancel, batch_compare, batch_detail, task_trials
from rollouts.views.trajectories import rollout_detail, rollout_steps, step_comment_add, step_criterion, step_exchange_view

__all__ = [
    "batch_cancel",
    "batch_compare",
    "batch_detail",
    "rollout_detail",
    "rollout_steps",
    "step_comment_add",
    "step_criterion",
    "step_exchange_view",
    "task_trials",
]
