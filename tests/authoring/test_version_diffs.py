"""Any two versions of a document (line diff with word marks; a spreadsheet by the values it
shows) and of a task's rubric (criteria added, removed, changed; grading settings), and the
shared text diff in core.textdiff."""

import pytest
from django.urls import reverse

from authoring import services
from authoring.models import Criterion
from authoring.selectors import rubric_version_current
from core.textdiff import line_diff_marked, pair_items, text_diff
from tests import factories

SCRIPT = "<script>alert(1)</script>"
HX = {"HTTP_HX_REQUEST": "true"}


def edit(document, user, content: str):
    document.refresh_from_db()
    return services.document_update(document=document, user=user, base_revision=document.revision, content=content)


@pytest.fixture
def memo(team, world):
    doc = factories.document(world, team.author, path="Deal/Memo.md")
    edit(doc, team.author, "# Memo\n\nThe price is $12m.\nClosing on 31 March.\n")           # v1
    edit(doc, team.author, "# Memo\n\nThe price is $14m.\nClosing on 31 March.\nEscrow 10%.\n")  # v2
    edit(doc, team.author, f"# Memo\n\nThe price is $14m.\n{SCRIPT} on 30 April.\n")          # v3
    doc.refresh_from_db()
    return doc


# --- core.textdiff ---------------------------------------------------------------------------------

def test_line_diff_marks_the_changed_words_inside_a_changed_line():
    diff = line_diff_marked(["Intro", "The price is $12m.", "End"], ["Intro", "The price is $14m.", "End", "New line"])
    rows = [(cls, str(html)) for cls, _o, _n, html in diff["lines"]]
    assert ("del", "The price is $<del>12m</del>.") in rows, rows
    assert ("add", "The price is $<ins>14m</ins>.") in rows
    assert ("add", "<ins>New line</ins>") in rows
    assert ("context", "Intro") in rows
    assert (diff["added"], diff["removed"]) == (2, 1)


def test_text_and_line_diffs_escape_user_text():
    marked = str(text_diff("a plain line", f"a {SCRIPT}")["html"])
    assert "<script" not in marked and "<ins>&lt;script&gt;alert(1)&lt;/script&gt;</ins>" in marked
    tangled = str(text_diff("a <b>x</b>", f"a {SCRIPT}")["html"])
    assert "<script" not in tangled and "<b>" not in tangled
    lines = line_diff_marked(["<i>old</i>"], [SCRIPT])
    assert all("<script" not in str(html) and "<i>" not in str(html) for *_, html in lines["lines"])


def test_pair_items_pairs_rewritten_items_by_position():
    class C:
        def __init__(self, pk, text, points, position):
            self.pk, self.text, self.points, self.position = pk, text, points, position

    old = [C(1, "A", 1, 0), C(2, "B", 2, 1), C(3, "Gone", 1, 2)]
    new = [C(4, "B", 3, 1), C(5, "A", 1, 0), C(6, "New", 1, 5)]
    pairs = pair_items(old, new, ident=lambda c: c.pk, keys=(lambda c: (c.text, c.points), lambda c: c.text, lambda c: c.position))
    got = {(p.old.pk if p.old else None, p.new.pk if p.new else None) for p in pairs}
    assert got == {(2, 4), (1, 5), (None, 6), (3, None)}


# --- Documents --------------------------------------------------------------------------------------

def test_compare_any_two_document_versions(client, team, memo):
    client.force_login(team.author)
    page = client.get(reverse("document-versions-compare", args=[memo.pk]), {"a": 1, "b": 2}).content.decode()
    assert "From v1 to v2" in page
    assert "$<del>12m</del>." in page and "$<ins>14m</ins>." in page
    assert "<ins>Escrow 10%.</ins>" in page

    # Backwards and across: v3 to v1, the script shown as text, never as a tag.
    page = client.get(reverse("document-versions-compare", args=[memo.pk]), {"a": 3, "b": 1}).content.decode()
    assert "From v3 to v1" in page
    assert SCRIPT not in page and "&lt;script&gt;" in page


def test_compare_defaults_to_the_last_two_and_the_versions_page_offers_the_form(client, team, memo):
    client.force_login(team.author)
    page = client.get(reverse("document-versions-compare", args=[memo.pk])).content.decode()
    assert "From v2 to v3" in page
    versions_page = client.get(reverse("document-versions", args=[memo.pk])).content.decode()
    assert 'id="compare-a"' in versions_page and reverse("document-versions-compare", args=[memo.pk]) in versions_page
    editor = client.get(reverse("document-editor", args=[memo.pk])).content.decode()
    assert 'id="compare-versions-link"' in editor


@pytest.mark.parametrize("bad", ["9", "abc", "-1", "2.5"])
def test_an_invalid_version_number_says_so(client, team, memo, bad):
    client.force_login(team.author)
    response = client.get(reverse("document-versions-compare", args=[memo.pk]), {"a": bad, "b": 2})
    assert response.status_code == 200
    page = response.content.decode()
    assert f"There is no version “{bad}”" in page and 'id="version-diff"' not in page


def test_the_same_version_twice_says_there_is_nothing_to_compare(client, team, memo):
    client.force_login(team.author)
    page = client.get(reverse("document-versions-compare", args=[memo.pk]), {"a": 2, "b": 2}).content.decode()
    assert "You picked the same version twice" in page


def test_a_spreadsheet_is_compared_by_the_values_it_shows(client, team, world):
    sheet = "## Sheet: Price\n|   | A | B |\n|---|---|---|\n| 1 | Price | 1000 |\n| 2 | Total | =B1*2 |\nFormats: B1:B2 #,##0\n"
    doc = services.document_create(world=world, user=team.author, path="Finance/Price.xlsx", format="xlsx", content=sheet)
    edit(doc, team.author, sheet.replace("| 1000 |", "| 1500 |"))
    client.force_login(team.author)
    page = client.get(reverse("document-versions-compare", args=[doc.pk]), {"a": 1, "b": 2}).content.decode()
    assert "compared by the values its grid shows" in page
    # The formula's computed value changed (2,000 → 3,000) though its source did not.
    assert "<del>2,000</del>" in page and "<ins>3,000</ins>" in page
    assert "<del>1,000</del>" in page and "<ins>1,500</ins>" in page
    assert "=B1*2" not in page.split('id="version-diff"')[1].split("</section>")[0]


def test_outsiders_get_404(client, other_team, memo, env_task):
    client.force_login(other_team.author)
    assert client.get(reverse("document-versions-compare", args=[memo.pk]), {"a": 1, "b": 2}).status_code == 404
    assert client.get(reverse("rubric-versions", args=[env_task.pk])).status_code == 404


# --- Rubrics -----------------------------------------------------------------------------------------

@pytest.fixture
def two_rubrics(team, env_task):
    """v1: "States fact 1" (5), "States fact 2" (4). v2: fact 1 rewritten and worth 3, fact 2
    removed, a new pitfall with a script in it, the pass threshold raised."""
    v1 = rubric_version_current(env_task=env_task)
    services.rubric_version_freeze(rubric_version=v1)
    v2 = services.rubric_version_editable(env_task=env_task, user=team.author)
    first, second = list(v2.criteria.order_by("position"))

    def revision() -> int:
        return rubric_version_current(env_task=env_task).revision

    services.criterion_update(criterion=first, user=team.author, base_revision=revision(), text="States fact 1 with its source",
                              points=3, tag=first.tag)
    services.criterion_delete(criterion=second, user=team.author, base_revision=revision())
    services.criterion_add(env_task=env_task, user=team.author, base_revision=revision(), text=f"Quotes {SCRIPT}", points=-2,
                           tag="pitfall")
    services.rubric_settings_update(env_task=env_task, user=team.author, base_revision=revision(), pass_threshold=0.8,
                                    all_must_pass=False, judge_samples=1)
    assert rubric_version_current(env_task=env_task).number == 2
    return v1, v2


def test_compare_two_rubric_versions(client, team, env_task, two_rubrics):
    client.force_login(team.author)
    response = client.get(reverse("rubric-versions", args=[env_task.pk]), {"a": 1, "b": 2})
    page = response.content.decode()
    assert "From v1 to v2" in page
    added = page.split('id="criteria-added"')[1].split("</ul>")[0]
    assert "Quotes &lt;script&gt;" in added and SCRIPT not in page
    assert "States fact 2" in page.split('id="criteria-removed"')[1].split("</ul>")[0]
    changed = page.split('id="criteria-changed"')[1].split("</ul>")[0]
    assert "States fact 1<ins> with its source</ins>" in changed
    assert "Points: <del>5</del> → <ins>3</ins>" in changed
    settings = page.split('id="rubric-settings-diff"')[1].split("</table>")[0]
    assert "Pass threshold" in settings and "<del>0.7</del>" in settings and "<ins>0.8</ins>" in settings


def test_rubric_compare_as_an_htmx_partial_and_backwards(client, team, env_task, two_rubrics):
    client.force_login(team.author)
    response = client.get(reverse("rubric-versions", args=[env_task.pk]), {"a": 2, "b": 1}, **HX)
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="rubric-compare"') and "<h1>" not in page
    assert "States fact 2" in page.split('id="criteria-added"')[1]  # going back, the removed one comes back


def test_rubric_invalid_version_and_link_from_the_task_page(client, team, env_task, two_rubrics):
    client.force_login(team.author)
    page = client.get(reverse("rubric-versions", args=[env_task.pk]), {"a": "7", "b": "1"}).content.decode()
    assert "There is no version “7”" in page and 'id="criteria-changed"' not in page
    task_page = client.get(reverse("task-editor", args=[env_task.pk])).content.decode()
    assert reverse("rubric-versions", args=[env_task.pk]) in task_page and "Compare rubric versions" in task_page


def test_a_rubric_with_one_version_says_what_to_do(client, team, env_task):
    client.force_login(team.reviewer)
    page = client.get(reverse("rubric-versions", args=[env_task.pk])).content.decode()
    assert 'id="rubric-versions-empty"' in page and "nothing to compare yet" in page
    assert Criterion.objects.filter(rubric_version__env_task=env_task).count() == 2
