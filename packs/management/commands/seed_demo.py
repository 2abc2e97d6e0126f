"""Load the demo project: three users, one world with a small data room, one task with a
rubric, the scripted sample model, and one finished batch of trial rollouts of the task on
that model, so a newcomer without an API key can read trajectories at once.

It lives in packs, the top of the import order, because it seeds every app's data.
Idempotent: every object is looked up by its natural key first, so a second run creates
nothing and changes nothing. Passwords are generated on the first run, kept in
var/demo_logins.json (mode 600, never in the repo) and printed on every run.
"""

import json
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.models import Membership, Project, Role, User
from accounts.services import membership_set, project_create
from authoring import services as authoring_services
from authoring.models import CriterionTag, DeliverableKind, DocumentKind, EnvTask, World
from authoring.selectors import rubric_version_current
from core.exceptions import ApplicationError
from llm.models import EndpointKind, ModelEndpoint
from llm.services import endpoint_save
from rollouts.agent import rollout_execute
from rollouts.models import RolloutBatch, RolloutStatus
from rollouts.services import rollout_batch_start

PROJECT_NAME = "Corporate law — M&A"
PROJECT_SLUG = "corporate-law-ma"
PROJECT_DESCRIPTION = "Tasks a junior M&A associate meets in the first weeks of a private share acquisition."

DEMO_USERS = [  # username, role, first name
    ("demo-author", Role.AUTHOR, "Alex (author)"),
    ("demo-reviewer", Role.REVIEWER, "Robin (reviewer)"),
    ("demo-admin", Role.ADMIN, "Sam (admin)"),
]

WORLD_TITLE = "Acme acquires Beta"
WORLD_OUTLINE = """\
# Acme acquires Beta ("Project Lighthouse")

**Acme Industries Inc.**, a Delaware maker of industrial sensors, is buying 100% of the
shares of **Beta Robotics Ltd**, a 60-person warehouse-robotics company incorporated in
England and Wales, from its two founders and two venture funds.

## Where the deal stands

- A non-binding letter of intent was signed on 3 February 2026, with six weeks of exclusivity.
- Acme's counsel (Harlow & Finch LLP) sent the first draft of the share purchase agreement
  (SPA) on 24 February 2026. The sellers' counsel (Marsh Webb) has not yet marked it up.
- Due diligence is under way. The data room holds the LOI, the SPA draft, Beta's cap table,
  the correspondence of the last three weeks and the deal calendar.

## What the diligence is turning up

- Beta's largest customer, Northwind Logistics (about 38% of revenue), may terminate its
  master services agreement on 30 days' notice after a change of control of Beta.
- Beta's £4m term loan from Harbour Bank treats a change of control as an event of default.
- The lease of Beta's Reading office needs the landlord's consent to a change of control.
- Beta's EMI option scheme vests in full on a sale (single trigger).
"""

WORLD_FACTS = [
    {"key": "Buyer", "value": "Acme Industries Inc. (Delaware)"},
    {"key": "Target", "value": "Beta Robotics Ltd (England and Wales, company no. 10458812)"},
    {"key": "Sellers", "value": "Dana Okafor and Lee Brandt (founders); Northstar Ventures II LP; Gorse Capital Fund I"},
    {"key": "Price", "value": "$48,000,000 enterprise value, cash-free and debt-free; $4,800,000 held in escrow for 18 months"},
    {"key": "Signing date", "value": "15 March 2026 (target)"},
    {"key": "Closing date", "value": "30 April 2026 (target); long-stop date 30 June 2026"},
    {"key": "Governing law", "value": "England and Wales; courts of England"},
    {"key": "Buyer's counsel", "value": "Harlow & Finch LLP (partner: Priya Raman)"},
    {"key": "Sellers' counsel", "value": "Marsh Webb LLP (partner: Tom Achterberg)"},
    {"key": "Deal code name", "value": "Project Lighthouse"},
]

DOCUMENTS = [
    {
        "path": "Deal/Letter of intent.docx",
        "kind": DocumentKind.FILE,
        "brief": "The non-binding LOI signed on 3 February 2026: price, structure, exclusivity, conditions.",
        "target_size": 400,
        "content": """\
LETTER OF INTENT — PROJECT LIGHTHOUSE
3 February 2026

From: Acme Industries Inc. ("Acme")
To: the shareholders of Beta Robotics Ltd ("Beta")

1. Transaction. Acme proposes to acquire 100% of the issued shares of Beta.
2. Price. US$48,000,000 on a cash-free, debt-free basis, assuming a normal level of working
   capital. US$4,800,000 (10%) will be held in escrow for 18 months.
3. Conditions. Completion will be conditional on (a) satisfactory due diligence, (b) the consent
   of third parties whose agreements with Beta require it, and (c) no material adverse change.
4. Exclusivity. For six weeks from the date of this letter the sellers will not solicit or
   negotiate any other offer for Beta.
5. Non-binding. Only paragraphs 4 (Exclusivity), 6 (Confidentiality) and 7 (Governing law) are binding.
6. Confidentiality. The existing NDA of 12 December 2025 continues to apply.
7. Governing law. English law.
""",
    },
    {
        "path": "Deal/SPA draft v1.docx",
        "kind": DocumentKind.FILE,
        "brief": "Buyer's first draft of the share purchase agreement: definitions, conditions, key warranties.",
        "target_size": 1200,
        "content": """\
SHARE PURCHASE AGREEMENT — BUYER'S DRAFT 1 (24 February 2026)

1.1 "Change of Control Contracts" means the contracts listed in Schedule 4.
1.1 "Indebtedness" includes all amounts outstanding under the Harbour Bank Facility.

4. CONDITIONS
4.1 Completion is conditional on:
  (a) [the written waiver by Northwind Logistics Ltd of its right to terminate the Northwind
      MSA on the change of control of the Company] [Drafting note: sellers will resist];
  (b) the consent of the landlord under the Reading Lease;
  (c) [Schedule 4 — to be completed after diligence].

6. PAYMENT AT COMPLETION
6.2 The Buyer shall pay, on behalf of the Company, the amounts needed to discharge the
    Indebtedness in full, and deduct them from the Price.

SCHEDULE 4 — CHANGE OF CONTROL CONTRACTS
[To be completed.]
""",
    },
    {
        "path": "Finance/Cap table.xlsx",
        "kind": DocumentKind.FILE,
        "brief": "Beta's fully diluted capitalisation table as at 31 January 2026, with the EMI option pool.",
        "target_size": 200,
        "content": """\
## Sheet: Cap table
|   | A | B | C | D |
|---|---|---|---|---|
| 1 | Holder | Class | Shares | Fully diluted % |
| 2 | Dana Okafor | Ordinary | 3200000 | =C2/C$8 |
| 3 | Lee Brandt | Ordinary | 2400000 | =C3/C$8 |
| 4 | Northstar Ventures II LP | Series A Preferred | 2500000 | =C4/C$8 |
| 5 | Gorse Capital Fund I | Series A Preferred | 1100000 | =C5/C$8 |
| 6 | EMI option pool (granted) | Options | 650000 | =C6/C$8 |
| 7 | EMI option pool (unallocated) | Options | 150000 | =C7/C$8 |
| 8 | Total |  | =SUM(C2:C7) | =SUM(D2:D7) |
| 10 | Note: under rule 9.1 of the EMI plan all granted options vest in full on a Sale (single trigger). |  |  |  |
Formats: C2:C8 #,##0; D2:D8 0.0%
""",
    },
    {
        "path": "Mail/2026-02-26 RE Lighthouse — Northwind MSA",
        "kind": DocumentKind.EMAIL,
        "brief": "Beta's CFO forwards clause 14.2 of the Northwind master services agreement to Acme's counsel.",
        "target_size": 180,
        "metadata": {
            "from": "Hannah Cole <hannah.cole@betarobotics.co.uk>",
            "to": "Priya Raman <p.raman@harlowfinch.com>",
            "cc": "Dana Okafor <dana@betarobotics.co.uk>",
            "date": "2026-02-26T09:14:00+00:00",
            "subject": "RE: Lighthouse — Northwind MSA",
        },
        "content": """\
Priya,

As asked, clause 14.2 of our MSA with Northwind Logistics (signed 1 July 2023, renewed to 2028):

"If the Supplier undergoes a change of control, the Customer may terminate this Agreement by
giving not less than thirty (30) days' written notice within ninety (90) days of becoming aware of it."

Northwind was 38% of our FY2025 revenue. Dana knows their COO well and would rather not
approach them before signing.

Hannah
""",
    },
    {
        "path": "Mail/2026-02-27 Lighthouse DD Q17 — bank debt",
        "kind": DocumentKind.EMAIL,
        "brief": "Beta's CFO answers the diligence question about the Harbour Bank term loan.",
        "target_size": 150,
        "metadata": {
            "from": "Hannah Cole <hannah.cole@betarobotics.co.uk>",
            "to": "Priya Raman <p.raman@harlowfinch.com>",
            "date": "2026-02-27T16:40:00+00:00",
            "subject": "Lighthouse DD Q17 — bank debt",
        },
        "content": """\
Priya,

Q17: Beta has one facility, a £4,000,000 term loan from Harbour Bank plc dated 9 March 2024,
£3,150,000 outstanding. Clause 22.4 makes a change of control an event of default, after which
the bank may declare all amounts immediately due. There is a 2% prepayment fee before March 2027.

Hannah
""",
    },
    {
        "path": "Chat/project-lighthouse/2026-03-02 Ben Osei",
        "kind": DocumentKind.CHAT,
        "brief": "An associate flags the lease consent point in the deal team's channel.",
        "target_size": 60,
        "metadata": {
            "channel": "project-lighthouse",
            "from": "Ben Osei <b.osei@harlowfinch.com>",
            "date": "2026-03-02T11:05:00+00:00",
        },
        "content": (
            "Heads up: the Reading office lease (clause 8.3) treats a change of control of the tenant as an "
            "assignment, so we need the landlord's consent. Landlord is Kestrel Property Ltd; they took 6 weeks last time."
        ),
    },
    {
        "path": "Calendar/2026-03-04 Lighthouse diligence call",
        "kind": DocumentKind.EVENT,
        "brief": "The weekly diligence call between buyer's and sellers' counsel.",
        "target_size": 60,
        "metadata": {
            "subject": "Project Lighthouse — weekly diligence call",
            "start": "2026-03-04T15:00:00+00:00",
            "end": "2026-03-04T16:00:00+00:00",
            "location": "Video call",
            "attendees": (
                "Priya Raman <p.raman@harlowfinch.com>, Ben Osei <b.osei@harlowfinch.com>, "
                "Tom Achterberg <t.achterberg@gorsecapital.com>, Hannah Cole <hannah.cole@betarobotics.co.uk>"
            ),
        },
        "content": "Agenda: 1. Open diligence questions (Q12–Q20). 2. Third-party consents and timing. 3. SPA mark-up date.",
    },
]

TASK_TITLE = "Identify the change-of-control risks"
TASK_PROMPT = """\
You are an associate at Harlow & Finch LLP acting for Acme on Project Lighthouse. Using the
data room, list every change-of-control risk in the acquisition of Beta Robotics. For each risk
say where it comes from (document and clause), what could happen at or after completion, and
what Acme should ask for in the SPA. End with the one risk you would raise with the client
first, and why. Keep it under 400 words.
"""
TASK_REFERENCE_ANSWER = """\
1. Northwind MSA, clause 14.2 (email of 26 Feb): Northwind may terminate on 30 days' notice within
   90 days of a change of control; it is 38% of revenue. Ask for a written waiver as a condition
   (SPA 4.1(a)) or, failing that, a price adjustment or a specific indemnity.
2. Harbour Bank facility, clause 22.4 (email of 27 Feb): change of control is an event of default;
   £3.15m outstanding plus a 2% prepayment fee. Repay at completion out of the price as
   Indebtedness (SPA 6.2), with a payoff letter and release of security.
3. Reading lease, clause 8.3 (chat, 2 Mar): landlord consent needed; it took 6 weeks last time.
   Keep it as a condition (SPA 4.1(b)) and start early: it fits before the 30 June long-stop.
4. EMI plan rule 9.1 (cap table): 650,000 granted options vest in full on the sale; the
   option holders share the price, so reflect it in the price allocation and the sellers' warranties.
Raise first: Northwind — it is the only risk that can take away revenue after closing.
"""
CRITERIA = [
    {
        "text": "Identifies Northwind's right to terminate the MSA on 30 days' notice after a change of control "
        "(clause 14.2) and that Northwind is about 38% of revenue.",
        "points": 10,
        "tag": CriterionTag.ESSENTIAL,
        "explanation": "The largest commercial risk of the deal; see the CFO's email of 26 February.",
    },
    {
        "text": "Identifies that the change of control is an event of default under the Harbour Bank facility "
        "(clause 22.4) and says the loan should be repaid at completion out of the price.",
        "points": 8,
        "tag": CriterionTag.ESSENTIAL,
        "explanation": "Cash-free, debt-free deal: the payoff is deducted from the price as Indebtedness.",
    },
    {
        "text": "Flags that the Reading office lease needs the landlord's consent to the change of control.",
        "points": 4,
        "tag": CriterionTag.IMPORTANT,
        "explanation": "From the deal team's chat of 2 March; the SPA already has it as condition 4.1(b).",
    },
    {
        "text": "Notes that EMI options vest in full on the sale (single trigger) and that this affects "
        "how the price is shared.",
        "points": 4,
        "tag": CriterionTag.IMPORTANT,
        "explanation": "Rule 9.1 of the EMI plan, noted under the cap table.",
    },
    {
        "text": "Cites the source document (and clause where given) for each risk.",
        "points": 2,
        "tag": CriterionTag.OPTIONAL,
        "explanation": "A partner must be able to check every point quickly.",
    },
    {
        "text": "Says the Northwind MSA terminates automatically on completion.",
        "points": -6,
        "tag": CriterionTag.PITFALL,
        "explanation": "Wrong: clause 14.2 gives Northwind an option to terminate on notice; nothing ends by itself.",
    },
]


def _load_or_create_passwords(path: Path) -> dict[str, str]:
    """The demo passwords: read from var/, or generated once and written there (mode 600)."""
    stored: dict[str, str] = {}
    if path.exists():
        stored = {row["username"]: row["password"] for row in json.loads(path.read_text())}
    missing = [username for username, _, _ in DEMO_USERS if not stored.get(username)]
    if missing:
        for username in missing:
            stored[username] = secrets.token_urlsafe(12)
        rows = [{"username": u, "password": stored[u], "role": str(role)} for u, role, _ in DEMO_USERS]
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(rows, out, indent=2)
    path.chmod(0o600)
    return stored


SCRIPTED_ENDPOINT_NAME = "Scripted sample model"
DEMO_BATCH_ROLLOUTS = 4


class Command(BaseCommand):
    help = "Create the demo project, users, world and task (idempotent) and print the demo logins."

    def handle(self, *args, **options) -> None:
        logins_path = Path(settings.VAR_DIR) / "demo_logins.json"
        passwords = _load_or_create_passwords(logins_path)
        with transaction.atomic():
            users = {username: self._user(username, first_name, passwords[username]) for username, _, first_name in DEMO_USERS}
            project = self._project(users)
            author = users["demo-author"]
            world = self._world(project, author)
            env_task = self._task(world, author)
            endpoint = self._scripted_endpoint(users["demo-admin"])
        self._scripted_batch(env_task, author, endpoint)  # after the commit: no transaction around the agent loop

        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"Demo logins (kept in {logins_path}):"))
        for username, role, _ in DEMO_USERS:
            self.stdout.write(f"  {role.label:<9} username: {username:<14} password: {passwords[username]}")
        self.stdout.write("")

    def _user(self, username: str, first_name: str, password: str) -> User:
        user = User.objects.filter(username=username).first()
        if user is None:
            user = User.objects.create_user(username=username, password=password, first_name=first_name, email=f"{username}@example.test")
            self._say(f"created user {username}")
        elif not user.check_password(password):
            # Keep the printed logins true: the stored password is the demo password.
            user.set_password(password)
            user.save(update_fields=["password"])
            self._say(f"reset the password of {username} to the one in var/")
        return user

    def _project(self, users: dict[str, User]) -> Project:
        project = Project.objects.filter(slug=PROJECT_SLUG).first()
        if project is None:
            project = project_create(name=PROJECT_NAME, slug=PROJECT_SLUG, description=PROJECT_DESCRIPTION, created_by=users["demo-admin"])
            self._say(f"created project {PROJECT_NAME!r}")
        for username, role, _ in DEMO_USERS:
            current = Membership.objects.filter(project=project, user=users[username]).values_list("role", flat=True).first()
            if current != role:
                membership_set(project=project, user=users[username], role=role)
        return project

    def _world(self, project: Project, author: User) -> World:
        world = World.objects.filter(project=project, title=WORLD_TITLE).first()
        if world is None:
            world = authoring_services.world_create(project_id=project.pk, user=author, title=WORLD_TITLE, outline=WORLD_OUTLINE, facts=WORLD_FACTS)
            self._say(f"created world {WORLD_TITLE!r}")
        existing = set(world.documents.values_list("path", flat=True))
        for spec in DOCUMENTS:
            if spec["path"] not in existing:
                authoring_services.document_create(world=world, user=author, **spec)
                self._say(f"created document {spec['path']!r}")
        return world

    def _task(self, world: World, author: User) -> EnvTask:
        env_task = EnvTask.objects.filter(project_id=world.project_id, title=TASK_TITLE).first()
        if env_task is not None:
            return env_task  # never overwrite what someone has since edited in the demo task
        env_task = authoring_services.env_task_create(
            world=world, user=author, title=TASK_TITLE, prompt=TASK_PROMPT, deliverable_kind=DeliverableKind.ANSWER,
            reference_answer=TASK_REFERENCE_ANSWER,
        )
        for criterion in CRITERIA:
            rubric = rubric_version_current(env_task=env_task)
            authoring_services.criterion_add(env_task=env_task, user=author, base_revision=rubric.revision, **criterion)
        self._say(f"created task {TASK_TITLE!r} with {len(CRITERIA)} rubric criteria")
        return env_task

    def _scripted_endpoint(self, admin: User) -> ModelEndpoint:
        """A model that needs no key, so a newcomer can walk the whole loop. It writes
        clearly-labelled sample text and is shown as "scripted" wherever it appears."""
        if not admin.is_staff:
            admin.is_staff = True  # the demo admin also manages the site's model endpoints
            admin.save(update_fields=["is_staff"])
        endpoint = ModelEndpoint.objects.filter(name=SCRIPTED_ENDPOINT_NAME).first()
        if endpoint is None:
            endpoint = endpoint_save(user=admin, data={"name": SCRIPTED_ENDPOINT_NAME, "kind": EndpointKind.SCRIPTED, "max_concurrency": 8, "enabled": True})
            self._say(f"registered the model endpoint {SCRIPTED_ENDPOINT_NAME!r} (scripted sample answers, no real model)")
        return endpoint

    def _scripted_batch(self, env_task: EnvTask, author: User, endpoint: ModelEndpoint) -> None:
        """One batch of trial rollouts of the demo task on the scripted sample model, run here,
        in this process, so no worker is needed. The batch records that its endpoint is
        scripted, and every model message in it is labelled as sample text.

        The service also queues the rollouts for the workers when its transaction commits; a
        worker that gets one finds it finished and does nothing (the conditional claim)."""
        batch = RolloutBatch.objects.filter(env_task=env_task, endpoint_scripted=True).order_by("created_at").first()
        if batch is None:
            try:
                batch = rollout_batch_start(env_task=env_task, user=author, endpoint=endpoint, n=DEMO_BATCH_ROLLOUTS)
            except ApplicationError as error:  # e.g. an admin has disabled the scripted endpoint
                self._say(f"no sample trial batch: {error.message}")
                return
        # Also finishes a batch an interrupted earlier run left queued; nothing to do otherwise.
        queued = list(batch.rollouts.filter(status=RolloutStatus.QUEUED).values_list("pk", flat=True))
        for rollout_id in queued:
            rollout_execute(rollout_id=rollout_id)
        if queued:
            done = batch.rollouts.filter(status=RolloutStatus.COMPLETED).count()
            self._say(f"ran a batch of {len(queued)} trial rollouts of {TASK_TITLE!r} on the scripted sample model "
                      f"({done} completed; sample trajectories, not a model's work)")

    def _say(self, message: str) -> None:
        self.stdout.write(f"seed_demo: {message}")
