"""Accessibility of the main pages, as served (the CSP on): axe-core finds no violation of
any impact, nothing scrolls sideways at 320 px wide (WCAG 1.4.10), focus is visible and
survives an htmx swap, and a document whose preview fails keeps the page in the viewport.

The data is the demo (seed_demo: project, world, task, a finished batch of trials) taken
through review and into a pack by the services, so every page has something to show.
The report (page → violations) is written to artifacts/axe-report.json.
"""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import Browser, Page, expect

from accounts.models import Project, User
from authoring import services as authoring_services
from authoring.models import EnvTask, World
from packs.services import pack_create
from reviews.models import Decision, Submission
from reviews.services import review_decide, submission_claim_next, submission_create
from rollouts.models import RolloutBatch
from tests import factories
from tests.browser.conftest import SCREENSHOTS, ConsoleLog
from tests.browser.test_journey import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
REPORT = SCREENSHOTS.parent / "axe-report.json"
NARROW = {"width": 320, "height": 800}
BUSY_MACHINE_TIMEOUT_MS = 30_000  # twenty pages, each with its htmx loads, on a shared CI machine

# Runs in the page: axe over the whole document, violations only, reduced to what a
# person fixing them needs (rule, impact, the elements and axe's own explanation).
_RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(" "), summary: n.failureSummary})),
  }));
}"""


@dataclass
class Demo:
    project: Project
    world: World
    env_task: EnvTask
    batch: RolloutBatch
    author: User
    reviewer: User
    admin: User


@pytest.fixture
def demo(settings, tmp_path, eager) -> Demo:
    settings.VAR_DIR = tmp_path
    settings.MEDIA_ROOT = tmp_path / "media"
    call_command("seed_demo", stdout=StringIO())
    project = Project.objects.get(slug="corporate-law-ma")
    users = {u.username: u for u in User.objects.filter(username__startswith="demo-")}
    for user in users.values():  # sign in with the factories' password
        user.set_password(factories.PASSWORD)
        user.save(update_fields=["password"])
    env_task = project.env_tasks.get()
    batch = RolloutBatch.objects.filter(env_task=env_task).order_by("created_at").first()
    return Demo(
        project=project, world=env_task.world, env_task=env_task, batch=batch,
        author=users["demo-author"], reviewer=users["demo-reviewer"], admin=users["demo-admin"],
    )


@pytest.fixture
def axe_source() -> str:
    return AXE.read_text()


# axe (4.x) reports an aria-describedby that points nowhere only as "needs review"; help text
# not linked to its field is a violation here, as is a label for a field that does not exist.
_BROKEN_REFERENCES = """() => {
  const broken = [];
  for (const attr of ["aria-describedby", "aria-labelledby", "aria-controls", "aria-errormessage"]) {
    for (const e of document.querySelectorAll("[" + attr + "]")) {
      for (const id of e.getAttribute(attr).split(/\\s+/).filter(Boolean)) {
        const name = e.tagName.toLowerCase() + (e.id ? "#" + e.id : "");
        if (!document.getElementById(id)) broken.push({target: name + "[" + attr + "=" + id + "]", summary: "no element has the id " + id});
      }
    }
  }
  for (const label of document.querySelectorAll("label[for]")) {
    if (!document.getElementById(label.htmlFor)) broken.push({target: "label[for=" + label.htmlFor + "]", summary: "no field has this id"});
  }
  const help = "An ARIA or label reference points at an id that does not exist";
  return broken.length ? [{id: "broken-id-reference", impact: "serious", help: help, nodes: broken}] : [];
}"""


# The contrast of a small text on its own (opaque) background, as WCAG computes it.
_CONTRAST = """selector => {
  const rgb = c => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = c => rgb(c).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
      .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const style = getComputedStyle(document.querySelector(selector));
  const [a, b] = [lum(style.color), lum(style.backgroundColor)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def axe_check(page: Page, axe_source: str) -> list[dict]:
    """Inject axe and run it. The page's CSP (script-src 'self') refuses an injected <script>
    (page.add_script_tag), so the source is evaluated through the DevTools protocol, which the
    CSP does not govern; the page itself is served and checked with the CSP on."""
    page.wait_for_load_state("networkidle")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(axe_source)
    return [*page.evaluate(_RUN_AXE), *page.evaluate(_BROKEN_REFERENCES)]


def sign_in_as(page: Page, base: str, user: User) -> None:
    page.context.clear_cookies()
    sign_in(page, base, user.username)


@pytest.fixture
def narrow_page(browser: Browser, console_log: ConsoleLog) -> Iterator[Page]:
    context = browser.new_context(viewport=NARROW)
    context.set_default_timeout(BUSY_MACHINE_TIMEOUT_MS)
    page = context.new_page()
    page.on("pageerror", lambda error: console_log.record(page, f"uncaught {error}"))
    yield page
    context.close()


def sideways_overflow(page: Page) -> int:
    """How many CSS pixels the page is wider than the viewport (0: no sideways scrolling)."""
    page.wait_for_load_state("networkidle")
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


_WIDE_ELEMENTS = """() => {
  const limit = document.documentElement.clientWidth;
  const sticksOut = e => e.getBoundingClientRect().right > limit + 1;
  const clipped = e => { for (let n = e.parentElement; n && n !== document.body; n = n.parentElement) {
      if (getComputedStyle(n).overflowX !== "visible") return true; } return false; };
  const wide = [...document.body.querySelectorAll("*")].filter(e => sticksOut(e) && !clipped(e)
      && ![...e.children].some(c => sticksOut(c) && !clipped(c)));
  return wide.slice(0, 6).map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "")
      + (e.className && typeof e.className === "string" ? "." + e.className.trim().split(/\\s+/).join(".") : "")
      + " (" + Math.round(e.getBoundingClientRect().right) + "px)");
}"""


def wide_elements(page: Page) -> list[str]:
    """The innermost elements that stick out past the viewport's right edge: what to fix."""
    return page.evaluate(_WIDE_ELEMENTS)


def test_main_pages_have_no_axe_violations(page: Page, live_server, demo: Demo, axe_source: str, console_log: ConsoleLog) -> None:
    base = live_server.url
    page.set_default_timeout(BUSY_MACHINE_TIMEOUT_MS)
    report: dict[str, list[dict]] = {}

    def check(name: str, path: str) -> None:
        page.goto(f"{base}{path}")
        report[name] = axe_check(page, axe_source)

    # The CSP is on: an injected <script> is refused (hence axe_check's route).
    page.goto(f"{base}/login/")
    assert "script-src 'self'" in (page.request.get(f"{base}/login/").headers.get("content-security-policy") or "")
    report["login"] = axe_check(page, axe_source)

    sign_in_as(page, base, demo.author)
    document = demo.world.documents.order_by("pk").first()
    rollout = demo.batch.rollouts.order_by("pk").first()
    check("dashboard", "/")
    check("project", f"/projects/{demo.project.pk}/")
    check("world editor", f"/worlds/{demo.world.pk}/")
    check("document editor", f"/documents/{document.pk}/")
    check("task editor", f"/tasks/{demo.env_task.pk}/")
    check("batch", f"/batches/{demo.batch.pk}/")
    check("rollout", f"/rollouts/{rollout.pk}/")
    check("batch quality", f"/batches/{demo.batch.pk}/quality/")
    for app in ("drive", "mail", "chat", "calendar"):
        check(f"{app} replica", f"/worlds/{demo.world.pk}/apps/{app}/")
    assert page.evaluate(_CONTRAST, ".replica-tabs .replica-count") >= 4.5  # the tab counters (axe misses them)
    check("calendar week", f"/worlds/{demo.world.pk}/apps/calendar/?view=week")  # (its days were cells of no row)
    check("step request and response", f"/steps/{rollout.steps.order_by('index').first().pk}/exchange/")
    check("trial runs page", f"/tasks/{demo.env_task.pk}/trials/?sort=status")
    check("delete a task: asked first", f"/tasks/{demo.env_task.pk}/delete/")
    check("delete a world: why not", f"/worlds/{demo.world.pk}/delete/")

    # QA: submitted, claimed by the reviewer, looked at, approved; then packed by the admin.
    submission = submission_create(env_task=demo.env_task, user=demo.author)
    assert submission_claim_next(user=demo.reviewer).pk == submission.pk
    sign_in_as(page, base, demo.reviewer)
    check("review queue", "/reviews/")
    check("submission review", f"/submissions/{submission.pk}/")
    check("reviewer dashboard", "/reviews/stats/")
    review_decide(submission=Submission.objects.get(pk=submission.pk), user=demo.reviewer, decision=Decision.APPROVE,
                  comment="Good.", checklist=factories.checklist(demo.project.pk))

    sign_in_as(page, base, demo.author)
    check("notifications", "/notifications/")

    pack = pack_create(project_id=demo.project.pk, user=demo.admin, name="Demo pack", submission_ids=[submission.pk])
    sign_in_as(page, base, demo.admin)
    check("review settings", f"/projects/{demo.project.pk}/review-settings/")
    check("members", f"/projects/{demo.project.pk}/members/")
    page.goto(f"{base}/account/api-token/")
    page.get_by_role("button", name=re.compile("my token")).click()  # the page with the token shown, once
    page.locator("#token-value").wait_for()
    report["api token"] = axe_check(page, axe_source)
    check("packs", f"/projects/{demo.project.pk}/packs/")
    check("pack detail", f"/packs/{pack.pk}/")
    check("models", "/models/")

    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps({"pages": len(report), "violations": report}, indent=2))
    failing = {name: [f"{v['impact']} {v['id']}: {[n['target'] for n in v['nodes']]}" for v in found]
               for name, found in report.items() if found}
    assert len(report) >= 18
    assert not failing, json.dumps(failing, indent=2)
    assert not [e for e in console_log.errors if "CSP" in e], console_log.errors


def test_no_sideways_scrolling_at_320px(narrow_page: Page, live_server, demo: Demo) -> None:
    page, base = narrow_page, live_server.url
    shots = SCREENSHOTS / "320"
    shots.mkdir(parents=True, exist_ok=True)
    sign_in(page, base, demo.author.username)
    page.screenshot(path=shots / "dashboard.png", full_page=True)
    widths = {"dashboard": sideways_overflow(page)}
    culprits = {"dashboard": wide_elements(page)} if widths["dashboard"] else {}
    page.goto(f"{base}/tasks/{demo.env_task.pk}/")
    page.screenshot(path=shots / "task.png", full_page=True)
    widths["task"] = sideways_overflow(page)
    if widths["task"]:
        culprits["task"] = wide_elements(page)
    document = demo.world.documents.order_by("pk").first()
    for name, path in {
        "project": f"/projects/{demo.project.pk}/",
        "world editor": f"/worlds/{demo.world.pk}/",
        "document editor": f"/documents/{document.pk}/",
        "batch": f"/batches/{demo.batch.pk}/",
        "rollout": f"/rollouts/{demo.batch.rollouts.order_by('pk').first().pk}/",
        "batch quality": f"/batches/{demo.batch.pk}/quality/",
        **{f"{app} replica": f"/worlds/{demo.world.pk}/apps/{app}/" for app in ("drive", "mail", "chat", "calendar")},
        "review queue": "/reviews/",
        "reviewer dashboard": "/reviews/stats/",
        "notifications": "/notifications/",
        "models": "/models/",
    }.items():
        page.goto(f"{base}{path}")
        widths[name] = sideways_overflow(page)
        if widths[name] > 0:
            culprits[name] = wide_elements(page)
        if name == "rollout":  # the verdicts go under the trajectory, which keeps the width (it was squeezed to 26 px)
            assert page.locator(".traj-layout.with-verdicts").count() == 1
            assert page.locator("#trajectory").bounding_box()["width"] >= 250
            assert page.locator(".traj-verdicts").evaluate("e => getComputedStyle(e).position") == "static"
    assert {name: over for name, over in widths.items() if over > 0} == {}, culprits


def test_focus_is_visible_and_survives_an_htmx_swap(page: Page, live_server, demo: Demo) -> None:
    base = live_server.url
    sign_in(page, base, demo.author.username)
    # The first Tab from the top of the page lands on a link with a visible outline.
    page.keyboard.press("Tab")
    outline = page.evaluate("""() => { const s = getComputedStyle(document.activeElement);
        return {tag: document.activeElement.tagName, style: s.outlineStyle, width: parseFloat(s.outlineWidth)}; }""")
    assert outline["tag"] == "A" and outline["style"] != "none" and outline["width"] >= 2, outline

    # Every stop of the first 40 Tab presses on the task page shows where focus is.
    page.goto(f"{base}/tasks/{demo.env_task.pk}/")
    unmarked = []
    for _ in range(40):
        page.keyboard.press("Tab")
        stop = page.evaluate("""() => { const e = document.activeElement, s = getComputedStyle(e);
            return {name: e.tagName + (e.id ? "#" + e.id : "") + " " + (e.textContent || "").trim().slice(0, 30),
                    visible: (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2) || s.boxShadow !== "none"}; }""")
        if not stop["visible"]:
            unmarked.append(stop["name"])
    assert unmarked == [], unmarked

    # Edit a document row in the world editor from the keyboard: the button that opened the
    # editor is swapped away, and focus moves into the swapped-in row instead of the page's top.
    document = demo.world.documents.order_by("pk").first()
    page.goto(f"{base}/worlds/{demo.world.pk}/")
    edit = page.get_by_role("button", name=f"Edit {document.path}")
    edit.focus()
    page.keyboard.press("Enter")
    editing = page.locator("#document-tree tr.editing")
    expect(editing).to_be_visible()
    expect(editing.locator(":focus")).to_have_count(1)
    editing.get_by_role("button", name="Save").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#document-tree tr.editing")).to_have_count(0)
    focused = page.evaluate("document.activeElement && document.activeElement.closest('#document-tree') !== null")
    assert focused, "focus fell back to the top of the page after the row was saved"


def test_document_whose_preview_fails_stays_within_the_viewport(page: Page, live_server, demo: Demo, screenshot_dir) -> None:
    base = live_server.url
    columns = [chr(ord("A") + i) for i in range(20)]
    table = "\n".join([
        "| | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
        "| 1 | " + " | ".join(f"Quarterly-revenue-{c}-in-thousands-of-euros" for c in columns) + " |",
        "| 2 | " + " | ".join("1200000" for _ in columns) + " |",
    ])
    # A Formats line that does not parse: the preview falls back to the plain text, wide table and all.
    content = f"## Sheet: Model\n\n{table}\n\nFormats: every-cell-as-{'euros-' * 60}please\n"
    broken = authoring_services.document_create(
        world=demo.world, user=demo.author, path="Finance/Broken model.xlsx", kind="file", format="xlsx",
        brief="A spreadsheet whose Formats line does not parse.", target_size=100, content=content,
    )
    sign_in(page, base, demo.author.username)
    page.goto(f"{base}/documents/{broken.pk}/")
    page.screenshot(path=screenshot_dir / "a11y-document-preview-failed.png", full_page=True)
    assert sideways_overflow(page) == 0
    content_box = page.locator("#id_content").bounding_box()
    assert content_box is not None and content_box["width"] >= 300, content_box

    # A text document with the same wide table and unbroken line: the text box and its preview
    # stay side by side, each half the width, and the preview scrolls inside itself.
    memo = authoring_services.document_create(
        world=demo.world, user=demo.author, path="Finance/Revenue memo.docx", kind="file", format="docx",
        brief="A memo with a table far wider than the page.", target_size=100,
        content=f"# Revenue\n\n{table}\n\nSee every-cell-as-{'euros-' * 60}please\n",
    )
    page.goto(f"{base}/documents/{memo.pk}/")
    expect(page.locator("#preview table")).to_be_visible()
    page.screenshot(path=screenshot_dir / "a11y-document-wide-preview.png", full_page=True)
    assert sideways_overflow(page) == 0
    text_box, preview_box = page.locator("#id_content").bounding_box(), page.locator("#preview").bounding_box()
    assert text_box and preview_box and text_box["width"] >= 400 and preview_box["width"] >= 400, (text_box, preview_box)
    assert preview_box["x"] > text_box["x"] + text_box["width"], "the preview is not beside the text box"
    assert page.locator("#preview").evaluate("e => e.scrollWidth > e.clientWidth")  # it scrolls, the page does not
