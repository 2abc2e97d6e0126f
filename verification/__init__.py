"""Verifier quality: how far a task's rubric can be trusted. Judge vs expert verdicts and
agreement per criterion, the expert's ranking against the rubric's scores, judge
stability, difficulty (pass@k), reward-hacking probes, and the rubric's grading settings
as the Verifier panel shows them. It sits between rollouts and reviews: it imports
rollouts (and what rollouts imports), and nothing below it imports it. The built-in probes
are built from the task's own material by verification.probes (pure functions); when a
rubric can be gamed, and how to fix it, is verification.rubric_checks.

Its tables stay in rollouts (rollouts.models: ExpertVerdict, Ranking, ProbeRun,
ProbeAnswer), on purpose. A Grade (grading stays with rollouts) is the grade of a rollout
or of a probe answer: `Grade.probe` is a foreign key to ProbeAnswer, and
rollouts.grading.services.grade_request takes one. Moving ProbeRun/ProbeAnswer here would
make rollouts' models and migrations depend on this app, the one direction imports must
not point. Moving only ExpertVerdict and Ranking would split this app's data between two
apps for no gain in layering (they point at rollouts' Rollout and RolloutBatch either
way). So this app has no models.py; it reads and writes those rows through its own
selectors and services, and no other app writes them."""
