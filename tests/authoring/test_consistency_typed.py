"""The world's consistency check reads facts as typed values (parties, amounts, dates,
percentages, governing law, periods), compares them normalised, and shows each contradiction
with both passages. On the demo world it finds nothing; on a copy with three planted
contradictions (a price, a date, a party name) it finds those three and nothing else."""

import shutil
from datetime import date
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from accounts.models import Project
from authoring import services
from authoring.consistency import check
from authoring.consistency.parties import PartyName, party_mentions
from authoring.consistency.passages import passages
from authoring.consistency.values import amounts, dates, durations, jurisdictions, percents
from authoring.selectors import world_consistency_report
from demo.content import DATA_DIR

HX = {"HTTP_HX_REQUEST": "true"}
LOI = "Deal/Letter of intent.md"
CALENDAR = "Calendar/2026-03-04 Lighthouse diligence call.md"


def plant_contradictions(data_dir: Path) -> None:
    """Three contradictions with the facts sheet, each in words a drafter might really use."""
    world = data_dir / "world"
    loi = (world / LOI).read_text()
    assert "US$48,000,000" in loi and "From: Acme Industries Inc." in loi
    loi = loi.replace("US$48,000,000", "US$45,000,000").replace("From: Acme Industries Inc.", "From: Acme Holdings Inc.")
    (world / LOI).write_text(loi)
    agenda = (world / CALENDAR).read_text()
    assert "3. SPA mark-up date." in agenda
    (world / CALENDAR).write_text(agenda.replace("3. SPA mark-up date.", "3. SPA mark-up date, for signing on 22 March 2026."))


@pytest.fixture
def seed(db, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    settings.MEDIA_ROOT = tmp_path / "media"

    def seed_from(data_dir: Path = DATA_DIR):
        call_command("seed_demo", "--data", str(data_dir), stdout=StringIO())
        return Project.objects.get(slug="corporate-law-ma").worlds.get()

    return seed_from


@pytest.fixture
def planted_world(seed, tmp_path):
    copy = tmp_path / "planted"
    shutil.copytree(DATA_DIR, copy)
    plant_contradictions(copy)
    return seed(copy)


# --- Values, normalised ----------------------------------------------------------------

@pytest.mark.parametrize("text", ["$12m", "$12,000,000", "USD 12 million", "US$12,000,000.00", "12 million US dollars", "USD 12mm"])
def test_amounts_in_any_spelling_are_the_same_amount(text):
    [amount] = amounts(f"The price is {text} in cash.")
    assert amount.normal == ("USD", Decimal(12_000_000)) and amount.text.strip() == text


def test_amounts_keep_their_currency():
    assert [a.normal for a in amounts("£4m, €4m and $4m")] == [("GBP", 4_000_000), ("EUR", 4_000_000), ("USD", 4_000_000)]
    assert amounts("3200000 shares, clause 14.2, FY2025") == []  # numbers without a currency are not amounts


@pytest.mark.parametrize("text", ["31 March 2026", "2026-03-31", "March 31, 2026", "31st of March 2026", "31 Mar 2026"])
def test_dates_in_any_spelling_are_the_same_date(text):
    [found] = dates(f"Completion on {text}.")
    assert found.normal == date(2026, 3, 31)


def test_dates_skip_timestamps_and_months_alone():
    assert dates("sent 2026-02-26T09:14:00+00:00, fee payable before March 2027") == []


def test_percentages_and_periods():
    assert [p.normal for p in percents("10%, ten per cent and 2.5 percent")] == [10, 10, Decimal("2.5")]
    periods = {d.text: d.normal for d in durations("six weeks; thirty (30) days' notice; 18 months; two years; 60 days")}
    assert periods == {"six weeks": ("days", 42), "thirty (30) days'": ("days", 30), "18 months": ("months", 18),
                       "two years": ("months", 24), "60 days": ("days", 60)}


def test_jurisdictions_come_from_a_closed_list():
    assert [j.normal for j in jurisdictions("English law; the laws of England and Wales; New York")] == [
        "England and Wales", "England and Wales", "New York"]
    assert jurisdictions("Confidentiality. The existing NDA continues to apply.") == []
    # a US state by its name; New Jersey is never read as Jersey (the Channel Island)
    assert [j.normal for j in jurisdictions("the laws of New Jersey; Jersey law; the State of Illinois; West Virginia")] == [
        "New Jersey", "Jersey", "Illinois", "West Virginia"]


def test_party_names_compare_without_their_company_form():
    assert PartyName.of("Acme Industries Inc. (Delaware)").matches(PartyName.of("Acme Industries Incorporated"))
    assert PartyName.of("Acme").matches(PartyName.of("Acme Industries Inc."))  # a defined short name
    assert PartyName.of("Harlow & Finch LLP").matches(PartyName.of("Harlow and Finch"))
    assert not PartyName.of("Acme Holdings Inc.").matches(PartyName.of("Acme Industries Inc."))


# --- Passages and parties --------------------------------------------------------------

def test_run_in_headings_stay_with_their_sentence_and_table_rows_are_passages():
    text = "7. Governing law. English law.\n\n| Item | Amount |\n|---|---|\n| Price | $12,000,000 |\n\nAcme Inc. signs. It pays."
    assert [p.text for p in passages(text)] == ["7. Governing law. English law.", "Item | Amount", "Price | $12,000,000",
                                                "Acme Inc. signs.", "It pays."]


def test_parties_are_read_only_where_a_role_is_stated():
    texts = [p.text for p in passages(
        "SHARE PURCHASE AGREEMENT — BUYER'S DRAFT 1\n\nFrom: Acme Industries Inc. (\"Acme\")\n\n"
        "1. Acme proposes to acquire 100% of the issued shares of Beta Robotics Ltd.\n\n"
        "Gamma Holdings Ltd (the \"Seller\") agrees to sell.\n\nBuyer's counsel: Harlow & Finch LLP"
    )]
    found = {(m.role, m.value.text) for m in party_mentions(texts)}
    assert found == {("buyer", "Acme Industries Inc."), ("target", "Beta Robotics Ltd."), ("sellers", "Gamma Holdings Ltd"),
                     ("buyer_counsel", "Harlow & Finch LLP")}


# --- The comparison --------------------------------------------------------------------

SHEET = [{"key": "Price", "value": "$48,000,000 enterprise value; $4,800,000 held in escrow for 18 months"},
         {"key": "Closing date", "value": "30 April 2026 (target); long-stop date 30 June 2026"},
         {"key": "Governing law", "value": "England and Wales"},
         {"key": "Deal code name", "value": "Project Lighthouse"}]


def test_same_values_written_differently_are_not_contradictions():
    text = ("2. Price. USD 48 million, of which US$4.8m (10%) is held in escrow for eighteen months.\n\n"
            "Completion is expected on April 30, 2026, and no later than the long-stop date of 2026-06-30.\n\n"
            "7. Governing law. This letter is governed by English law.")
    report = check(SHEET, [(1, "LOI.docx", text)])
    assert report.findings == []
    assert {f.role.key for f in report.facts if not f.evidence.is_facts_sheet} == {
        "price", "escrow_amount", "escrow_share", "escrow_period", "closing_date", "long_stop_date", "governing_law"}
    assert report.unchecked_keys == ["Deal code name"]


def test_values_without_their_fact_named_beside_them_are_not_compared():
    text = ("A £4,000,000 term loan, £3,150,000 outstanding, dated 9 March 2024. "
            "Options have an exercise price of $1.50. Confidentiality. The NDA of 12 December 2025 applies.")
    report = check(SHEET, [(1, "Mail.txt", text)])
    assert report.findings == [] and report.document_facts == 0


def test_a_differing_value_is_a_finding_with_both_passages():
    report = check(SHEET, [(7, "Notes/Side letter.md", "# Side letter\n\nThe parties agree that the long-stop date is 31 July 2026.")])
    [finding] = report.findings
    assert finding.fact_key == "Long-stop date" and finding.document_id == 7 and finding.document_path == "Notes/Side letter.md"
    assert finding.reference.evidence.is_facts_sheet
    assert finding.reference.evidence.value == "30 June 2026" and finding.found.evidence.value == "31 July 2026"
    assert finding.found.evidence.passage == "The parties agree that the long-stop date is 31 July 2026."


def test_without_a_facts_sheet_row_the_documents_are_compared_with_each_other():
    documents = [(1, "a.md", "Exclusivity: six weeks."), (2, "b.md", "An exclusivity period of 42 days."),
                 (3, "c.md", "Exclusivity lasts 8 weeks."), (4, "d.md", "Exclusivity for two months.")]
    [finding] = check([], documents).findings  # two months is not a number of days: not compared
    assert (finding.reference.evidence.source, finding.found.evidence.source, finding.found.value.text) == ("a.md", "c.md", "8 weeks")


def test_demo_world_has_no_contradictions(seed):
    world = seed()
    report = world_consistency_report(world=world)
    assert report.findings == []
    assert report.documents_checked == world.documents.count() == 7
    assert report.sheet_facts >= 10 and report.document_facts >= 6  # it did read the documents


def test_planted_world_has_exactly_the_three_planted_contradictions(planted_world):
    findings = world_consistency_report(world=planted_world).findings
    found = {(f.fact_key, f.document_path, f.reference.value.text, f.found.value.text) for f in findings}
    assert found == {
        ("Price", "Deal/Letter of intent.docx", "$48,000,000", "US$45,000,000"),
        ("Signing date", "Calendar/2026-03-04 Lighthouse diligence call", "15 March 2026", "22 March 2026"),
        ("Buyer", "Deal/Letter of intent.docx", "Acme Industries Inc.", "Acme Holdings Inc."),
    }


# --- The page ---------------------------------------------------------------------------

def test_the_panel_shows_both_passages_side_by_side(client, planted_world):
    author = planted_world.project.memberships.get(role="author").user
    client.force_login(author)
    url = reverse("world-consistency", args=[planted_world.pk])
    fragment = client.get(url, **HX).content.decode()
    assert fragment.lstrip().startswith('<div id="consistency"') and "<html" not in fragment
    assert "3 contradictions found" in fragment
    assert "Checked <strong>" in fragment and "in <strong>7 documents</strong>" in fragment
    loi = planted_world.documents.get(path="Deal/Letter of intent.docx")
    assert reverse("document-editor", args=[loi.pk]) in fragment
    # the facts sheet's passage and the document's, the differing values highlighted, quotes escaped
    assert "Price: <mark>$48,000,000</mark> enterprise value" in fragment
    assert "2. Price. <mark>US$45,000,000</mark> on a cash-free" in fragment
    assert "From: <mark>Acme Holdings Inc.</mark> (&quot;Acme&quot;) … 1. Transaction. Acme proposes to acquire" in fragment
    assert "<mark>22 March 2026</mark>" in fragment and "Read as 2026-03-22" in fragment

    page = client.get(reverse("world-editor", args=[planted_world.pk])).content.decode()
    assert 'id="check-consistency"' in page and "<mark>" not in page  # the check runs when asked


def test_the_panel_says_so_when_nothing_disagrees(client, seed):
    world = seed()
    client.force_login(world.project.memberships.get(role="author").user)
    fragment = client.get(reverse("world-consistency", args=[world.pk]), **HX).content.decode()
    assert "No contradictions found between the documents and the facts sheet, in the facts listed under" in fragment
    assert "<mark>" not in fragment and "What was checked" in fragment and "USD 48,000,000" in fragment


def test_an_empty_world_says_what_to_do(client, team):
    world = services.world_create(project_id=team.project.pk, user=team.author, title="Empty", outline="", facts=[])
    client.force_login(team.reviewer)
    fragment = client.get(reverse("world-consistency", args=[world.pk]), **HX).content.decode()
    assert "Nothing to compare yet: add rows to the facts sheet" in fragment


def test_another_projects_user_gets_404(client, planted_world, team):
    client.force_login(team.author)
    assert client.get(reverse("world-consistency", args=[planted_world.pk]), **HX).status_code == 404


def test_a_row_not_checked_says_why_when_its_name_asks_for_another_kind():
    """"Escrow: 5%" was reported as having no percentage; the key names an escrow amount, and
    the reason now says so (a key that names nothing keeps the general reason)."""
    report = check([{"key": "Escrow", "value": "5%"}, {"key": "Deal code name", "value": "Project Lighthouse"}], [])
    assert report.unchecked_rows == [{"key": "Escrow", "wanted": "an amount"}, {"key": "Deal code name", "wanted": ""}]
