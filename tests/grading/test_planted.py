"""The Must-show of issue 15: on a planted set of six professional tasks, each with a strong and
a weak rubric and labelled answers including hacks (tests/grading/planted), the probe suite
plus the ranking check flag every weak rubric and none of the strong ones. The judge is
scripted at the wire (tests/grading/planted/judge.py): the labelled verdict for a known
answer, a rule-based one otherwise. bench/probes.py prints the same count."""

import pytest

from tests.grading.planted.judge import ScriptedJudge, parse_judge_request, rule_met
from tests.grading.planted.run import evaluate, evaluate_set, summary
from tests.grading.planted.tasks import LAW, TASKS, C


@pytest.fixture
def judge(fake_llm):
    scripted = ScriptedJudge(TASKS)
    fake_llm.responder = scripted.responder
    return scripted


@pytest.fixture
def quiet(django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=False)


def test_the_planted_set_covers_six_professions_with_hacks_among_the_answers():
    assert len(TASKS) >= 6 and len({t.profession for t in TASKS}) == len(TASKS)
    for task in TASKS:
        keys = {c.key for c in (*task.strong.criteria, *task.weak.criteria)}
        assert all(answer.meets <= keys for answer in task.answers), task.title
        assert any(answer.note for answer in task.answers), task.title  # hacks and confident wrong answers are labelled as such


def test_probes_and_the_ranking_check_flag_every_weak_rubric_and_no_strong_one(team, world, endpoint, judge, quiet):
    outcomes = evaluate_set(TASKS, world=world, author=team.author, endpoint=endpoint, judge=judge, quiet=quiet)
    report = "\n".join(o.describe() for o in outcomes)
    assert summary(outcomes) == f"weak rubrics flagged: {len(TASKS)}/{len(TASKS)}; strong flagged: 0/{len(TASKS)}", report
    # Every probe was graded by the judge (no failed grade hides a flag), and the reference answer passes every strong rubric.
    assert all(o.reference_passes for o in outcomes if o.variant == "strong"), report
    assert judge.calls["rule"] > 0 and judge.calls["labelled"] > 0 and judge.calls["other"] == 0
    # The probes alone catch most weak rubrics, not only the ranking: each mechanism pulls its weight.
    weak = [o for o in outcomes if o.variant == "weak"]
    assert sum(bool(o.flagged_probes) for o in weak) >= len(TASKS) - 1, report
    assert sum(bool(set(o.ranking_warnings) - {"probe_passes"}) for o in weak) >= len(TASKS) // 2, report


def test_a_near_miss_fools_a_rubric_that_pins_no_value_and_the_fix_names_the_value(team, world, endpoint, judge, quiet):
    outcome = evaluate(LAW, "weak", world=world, author=team.author, endpoint=endpoint, judge=judge, quiet=quiet)
    from verification.selectors import probe_rows

    rows = {
        row["probe"].label: row
        for row in probe_rows(run=outcome.probe_run, current=list(outcome.env_task.rubric_versions.get().criteria.all()))
    }
    near_miss = rows["Near miss: $48.5 million → $53.4 million"]
    assert near_miss["flagged"] and [c.text for c in near_miss["fooled"]] == ["States the purchase price"]
    [fix] = near_miss["fixes"]
    assert fix["evidence"] == ["$48.5 million"] and fix["text"].startswith("States the purchase price: $48.5 million, given as the answer")
    assert "said $53.4 million where the reference answer says $48.5 million" in fix["why"]
    assert (
        near_miss["pitfall"]["text"] == "Gives $53.4 million as the purchase price (the reference answer gives $48.5 million)"
        and near_miss["pitfall"]["points"] == -9
    )
    # The same near miss against the strong rubric: the price criterion notices, the answer fails, no flag.
    strong = evaluate(LAW, "strong", world=world, author=team.author, endpoint=endpoint, judge=judge, quiet=quiet)
    assert not strong.flagged_probes and not strong.ranking_warnings


def test_the_ranking_check_names_the_criteria_that_reward_the_answers_ranked_lowest(team, world, endpoint, judge, quiet):
    from tests.grading.planted.tasks import HR

    outcome = evaluate(HR, "weak", world=world, author=team.author, endpoint=endpoint, judge=judge, quiet=quiet)
    assert {"ceiling", "no_separation"} <= set(outcome.ranking_warnings)
    assert outcome.culprits == ["Addresses her notice entitlement", "Addresses statutory redundancy pay", "Mentions consultation"]


def test_the_scripted_judge_reads_the_judge_prompt_and_is_strict_about_hedges():
    from rollouts.grading.attempt import Attempt
    from rollouts.grading.judge import judge_messages

    messages = judge_messages(criterion_text="States the purchase price of $48.5 million", points=4,
                              attempt=Attempt(prompt=LAW.prompt, answer="It is $48.5 million."), sees=["answer"])
    assert parse_judge_request(messages[1]["content"]) == (LAW.prompt, "It is $48.5 million.", "States the purchase price of $48.5 million")
    price = C("p", "States the price of $48.5 million", 4, (r"\$48\.5 ?million",), strict=True)
    assert rule_met(price, "The price is $48.5 million.")
    assert not rule_met(price, "The price is $43.7 million, $48.5 million or $53.4 million, depending on the reading.")
    assert rule_met(C("e", "Mentions the escrow", 2, ("escrow",)), "Escrow: $4.85 million or $5 million.")  # not strict
