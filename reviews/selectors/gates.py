"""The gates an author passes before submitting, each switched on per project
(reviews.models.ReviewPolicy). Every gate says whether it holds, what it measured and, when
it does not hold, what to do."""

from dataclasses import dataclass

from authoring.models import EnvTask, RubricVersion
from reviews.models import ReviewPolicy
from rollouts.models import Grade, GradeStatus, RolloutBatch
from verification import selectors as verification


@dataclass(frozen=True)
class Gate:
    key: str
    name: str
    passed: bool
    measured: str
    fix: str = ""


def graded_rollouts(*, env_task: EnvTask, rubric_version: RubricVersion) -> int:
    return Grade.objects.filter(rollout__batch__env_task=env_task, rubric_version=rubric_version, status=GradeStatus.GRADED).count()


def latest_graded_batch(*, env_task: EnvTask, rubric_version: RubricVersion) -> RolloutBatch | None:
    """The task's newest batch with at least one rollout graded on this rubric version."""
    return (RolloutBatch.objects.filter(env_task=env_task, rollouts__grades__rubric_version=rubric_version,
                                        rollouts__grades__status=GradeStatus.GRADED)
            .order_by("-created_at", "-id").distinct().first())


def unexplained_probes(*, env_task: EnvTask, rubric_version: RubricVersion) -> tuple[dict, list[dict]]:
    """The probe status for the rubric version and the flagged probes of its latest run that
    the author has not explained (each a probe_results row)."""
    status = verification.probe_status(env_task=env_task, rubric_version=rubric_version)
    if status["run"] is None or status["stale"] or status["state"] != "flagged":
        return status, []
    rows = verification.probe_results(run=status["run"])
    explained = set(status["run"].answers.filter(explanation__isnull=False).values_list("pk", flat=True))
    return status, [r for r in rows if r["flagged"] and r["probe"].pk not in explained]


def submit_gates(*, env_task: EnvTask, rubric_version: RubricVersion | None, policy: ReviewPolicy) -> list[Gate]:
    """The project's switched-on gates, measured on the task's current rubric version."""
    gates: list[Gate] = []
    if rubric_version is None:
        return gates
    if policy.gate_graded_rollouts:
        n = graded_rollouts(env_task=env_task, rubric_version=rubric_version)
        gates.append(Gate("graded_rollouts", f"At least {policy.min_graded_rollouts} graded rollouts on the current rubric",
                          n >= policy.min_graded_rollouts, f"{n} graded on rubric version {rubric_version.number}",
                          f"Run trials (Trials tab) until {policy.min_graded_rollouts} rollouts are graded on this rubric version, "
                          "or regrade an earlier batch with it."))
    if policy.gate_probes:
        status, open_probes = unexplained_probes(env_task=env_task, rubric_version=rubric_version)
        if status["run"] is None or status["stale"]:
            gates.append(Gate("probes", "Reward-hacking probes run, every flagged one explained", False,
                              "not run on this rubric version" if status["run"] is None or not status["stale"]
                              else f"last run on rubric version {status['rubric_number']}",
                              f"Run the probes (Verifier quality tab) on rubric version {rubric_version.number}."))
        elif status["state"] in ("running",):
            gates.append(Gate("probes", "Reward-hacking probes run, every flagged one explained", False, "the probes are still running",
                              "Wait for the probe run to finish."))
        elif status["state"] == "sample":
            gates.append(Gate("probes", "Reward-hacking probes run, every flagged one explained", False,
                              "judged by the scripted sample model, whose verdicts prove nothing",
                              "Run the probes again with a real judge model (Verifier quality tab)."))
        elif status["state"] == "not_graded":
            gates.append(Gate("probes", "Reward-hacking probes run, every flagged one explained", False, "the probes could not be graded",
                              "Run the probes again (Verifier quality tab)."))
        else:
            gates.append(Gate("probes", "Reward-hacking probes run, every flagged one explained", not open_probes,
                              f"{status['flagged']} flagged, {len(open_probes)} unexplained" if status["flagged"] else status["label"],
                              "Tighten the rubric and run the probes again, or explain each flagged probe below."))
    if policy.gate_difficulty:
        batch = latest_graded_batch(env_task=env_task, rubric_version=rubric_version)
        measured = verification.difficulty(batch=batch, rubric_version=rubric_version) if batch else None
        name = f"Learnable: pass@1 below {policy.pass1_ceiling:.0%} and pass@k above {policy.passk_floor:.0%}"
        if not measured or not measured["curve"]:
            gates.append(Gate("difficulty", name, False, "not measured on this rubric version",
                              "Run trials on the current rubric version to measure the difficulty."))
        else:
            pass1, (k, top) = measured["curve"][0][1], measured["curve"][-1]
            ok = pass1 < policy.pass1_ceiling and top > policy.passk_floor
            fix = ("The task is too easy: make the prompt or the rubric demand more." if pass1 >= policy.pass1_ceiling
                   else "No trial solves it: check the rubric is achievable and the world holds what the prompt needs.")
            gates.append(Gate("difficulty", name, ok, f"pass@1 {pass1:.0%}, pass@{k} {top:.0%} over {measured['n']} rollouts",
                              "" if ok else fix))
    return gates
