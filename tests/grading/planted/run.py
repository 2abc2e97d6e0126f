"""Run the planted set through the real services: for each task and rubric, a task with that
rubric, a batch of the labelled answers graded by the (scripted) judge, the expert's ranking
as the labels give it, the probe suite; then what flagged the rubric: the probes
(verification.selectors.probe_results) and the ranking check (ranking_agreement).

Work that the services queue on Celery is run here, in this process, one job after the other
(`quiet` swallows the messages the services send: in tests, django_capture_on_commit_callbacks
without executing them; in bench/probes.py, a broker that keeps them in memory)."""

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from authoring import services as authoring_services
from rollouts import services as rollout_services
from rollouts.agent import rollout_execute
from rollouts.grading.services import grade_execute
from rollouts.models import Grade, GradeStatus, RolloutStatus
from tests.grading.planted.judge import ScriptedJudge
from tests.grading.planted.tasks import PlantedTask, Rubric
from verification.selectors import probe_results, ranking_agreement
from verification.services import probe_run_start, ranking_set


@dataclass
class Outcome:
    task: PlantedTask
    variant: str  # "strong" or "weak"
    env_task: object = None
    batch: object = None
    probe_run: object = None
    flagged_probes: list[str] = field(default_factory=list)
    ranking_warnings: list[str] = field(default_factory=list)  # warning kinds
    culprits: list[str] = field(default_factory=list)  # criterion texts
    scores: list[float] = field(default_factory=list)  # the rubric's scores of the labelled answers, best first
    reference_passes: bool | None = None

    @property
    def flagged(self) -> bool:
        return bool(self.flagged_probes or self.ranking_warnings)

    def describe(self) -> str:
        what = []
        if self.flagged_probes:
            what.append(f"probes: {'; '.join(self.flagged_probes)}")
        if self.ranking_warnings:
            what.append(f"ranking: {', '.join(self.ranking_warnings)}")
        scores = " ".join(f"{s:.2f}" for s in self.scores)
        return (f"{self.task.profession:<11} {self.variant:<6} {'FLAGGED' if self.flagged else 'clear':<7} scores [{scores}]"
                + (f" — {' | '.join(what)}" if what else ""))


def _grade_queued(quiet: Callable[[], AbstractContextManager], **where) -> None:
    for grade in Grade.objects.filter(status=GradeStatus.QUEUED, **where).order_by("pk"):
        with quiet():
            grade_execute(grade_id=grade.pk)


def build_task(task: PlantedTask, rubric: Rubric, *, world, author, title_suffix: str = ""):
    env_task = authoring_services.env_task_create(world=world, user=author, title=f"{task.title}{title_suffix}", prompt=task.prompt,
                                                  reference_answer=task.reference)
    for criterion in rubric.criteria:
        current = env_task.rubric_versions.order_by("-number").first()
        tag = "pitfall" if criterion.points < 0 else "essential" if criterion.points >= 3 else "important"
        authoring_services.criterion_add(env_task=env_task, user=author, base_revision=current.revision, text=criterion.text,
                                         points=criterion.points, tag=tag)
    current = env_task.rubric_versions.order_by("-number").first()
    authoring_services.rubric_settings_update(env_task=env_task, user=author, base_revision=current.revision,
                                              pass_threshold=rubric.pass_threshold, all_must_pass=rubric.all_must_pass, judge_samples=1)
    return env_task


def evaluate(task: PlantedTask, variant: str, *, world, author, endpoint, judge: ScriptedJudge,
             quiet: Callable[[], AbstractContextManager]) -> Outcome:
    rubric = task.strong if variant == "strong" else task.weak
    env_task = build_task(task, rubric, world=world, author=author, title_suffix=f" ({variant} rubric)")
    outcome = Outcome(task=task, variant=variant, env_task=env_task)

    # A trial batch that answers the labelled answers, graded by the judge.
    judge.queue_answers(task)
    with quiet():
        batch = rollout_services.rollout_batch_start(env_task=env_task, user=author, endpoint=endpoint, n=len(task.answers))
    for rollout in batch.rollouts.order_by("index"):
        with quiet():
            rollout_execute(rollout_id=rollout.pk)
    _grade_queued(quiet, rollout__batch=batch)
    outcome.batch = batch

    # The expert ranks the trajectories as the labels do (best first).
    position = {answer.text: i for i, answer in enumerate(task.answers)}
    completed = list(batch.rollouts.filter(status=RolloutStatus.COMPLETED))
    order = sorted(completed, key=lambda r: position[r.final_answer.strip()])
    ranking_set(batch=batch, user=author, order=[r.pk for r in order])
    scores = dict(Grade.objects.filter(rollout__batch=batch, status=GradeStatus.GRADED).values_list("rollout_id", "score"))
    outcome.scores = [scores.get(r.pk) or 0.0 for r in order]

    # The probe suite, graded by the same judge.
    with quiet():
        run = probe_run_start(env_task=env_task, user=author, judge_endpoint=endpoint)
    _grade_queued(quiet, probe__run=run)
    outcome.probe_run = run
    rows = probe_results(run=run)
    outcome.flagged_probes = [row["probe"].label for row in rows if row["flagged"]]
    control = next((row["grade"] for row in rows if row["control"]), None)
    outcome.reference_passes = bool(control and control.passed)

    agreement = ranking_agreement(batch=batch, user=author) or {}
    outcome.ranking_warnings = [w["kind"] for w in agreement.get("warnings", [])]
    outcome.culprits = [c["criterion"].text for c in agreement.get("culprits", [])]
    return outcome


def evaluate_set(tasks: tuple[PlantedTask, ...], *, world, author, endpoint, judge: ScriptedJudge,
                 quiet: Callable[[], AbstractContextManager]) -> list[Outcome]:
    return [evaluate(task, variant, world=world, author=author, endpoint=endpoint, judge=judge, quiet=quiet)
            for task in tasks for variant in ("strong", "weak")]


def summary(outcomes: list[Outcome]) -> str:
    weak = [o for o in outcomes if o.variant == "weak"]
    strong = [o for o in outcomes if o.variant == "strong"]
    return (f"weak rubrics flagged: {sum(o.flagged for o in weak)}/{len(weak)}; "
            f"strong flagged: {sum(o.flagged for o in strong)}/{len(strong)}")
