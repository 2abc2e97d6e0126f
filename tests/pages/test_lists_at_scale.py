"""Long lists a page at a time: the project page at 10,000 tasks costs what it costs at 100,
a world of 5,000 documents shows one folder page, and sorting and filtering take only what
each list allows."""

import html
import re
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from authoring.data_room import FOLDER_PAGE, WHOLE_TREE_MAX
from authoring.models import Document, EnvTask, EnvTaskStatus

HX = {"HTTP_HX_REQUEST": "true"}
TASK_ROW = re.compile(r'<tr><td><a href="/tasks/(\d+)/">')
DOCUMENT_ROW = re.compile(r'<tr id="document-\d+"')
STATUSES = [EnvTaskStatus.DRAFT, EnvTaskStatus.IN_REVIEW, EnvTaskStatus.APPROVED, EnvTaskStatus.CHANGES_REQUESTED]


def add_tasks(team, world, upto: int) -> None:
    """Bulk rows (the services would take minutes at 10,000): titles of one length, so the
    page's size depends only on how many rows it shows."""
    start = EnvTask.objects.count()
    EnvTask.objects.bulk_create(
        [EnvTask(project=team.project, world=world, title=f"Task {i:05d}", status=STATUSES[i % 4], created_by=team.author)
         for i in range(start, upto)],
        batch_size=2000,
    )


def add_documents(world, upto: int, folders: int = 50) -> None:
    start = world.documents.count()
    Document.objects.bulk_create(
        [Document(world=world, path=f"Folder {i % folders:02d}/Doc {i:05d}.md", position=i, brief=f"Brief {i}")
         for i in range(start, upto)],
        batch_size=2000,
    )


def measure(client, url: str, **headers) -> tuple[int, int, str, float]:
    with CaptureQueriesContext(connection) as captured:
        began = time.perf_counter()
        response = client.get(url, **headers)
        took = time.perf_counter() - began
    assert response.status_code == 200
    return len(captured), len(response.content), html.unescape(response.content.decode()), took


# --- The project page --------------------------------------------------------------------

def test_project_page_costs_the_same_at_100_and_10000_tasks(client, team, world):
    client.force_login(team.admin)
    url = reverse("project-detail", args=[team.project.pk])
    add_tasks(team, world, 100)
    small_queries, small_bytes, small_page, _ = measure(client, url)
    add_tasks(team, world, 10_000)
    big_queries, big_bytes, big_page, took = measure(client, url)
    assert big_queries == small_queries
    # Only digits differ: the 50 rows' ids (/tasks/10042/ against /tasks/142/) and the counts.
    assert abs(big_bytes - small_bytes) < 200, (small_bytes, big_bytes)
    assert len(TASK_ROW.findall(big_page)) == 50 and "Page 1 of 200 · 10000 in all" in big_page
    assert "Page 1 of 2 · 100 in all" in small_page
    assert took < 5, took  # today's 1.0 s at 10,000 was the whole list; one page is a fraction of it


def test_project_page_pages_are_links_that_keep_the_sort_and_filter(client, team, world):
    add_tasks(team, world, 120)
    client.force_login(team.author)
    url = reverse("project-detail", args=[team.project.pk])
    page = html.unescape(client.get(url + "?status=draft&sort=title&page=2").content.decode())
    assert len(TASK_ROW.findall(page)) == 30 and 'rel="next"' not in page  # a quarter are drafts: one page (page 2 clamps)
    first = html.unescape(client.get(url + "?sort=title").content.decode())
    assert '<a href="?page=2&sort=title" rel="next">Next</a>' in first
    second = html.unescape(client.get(url + "?sort=title&page=2").content.decode())
    titles = re.findall(r'<a href="/tasks/\d+/">(Task \d+)</a>', second)
    assert titles == [f"Task {i:05d}" for i in range(50, 100)]


def test_tasks_sort_by_title_both_ways_and_by_status(client, team, world):
    add_tasks(team, world, 60)
    client.force_login(team.author)
    url = reverse("project-detail", args=[team.project.pk])
    ascending = re.findall(r'<a href="/tasks/\d+/">(Task \d+)</a>', client.get(url + "?sort=title").content.decode())
    descending = re.findall(r'<a href="/tasks/\d+/">(Task \d+)</a>', client.get(url + "?sort=-title").content.decode())
    assert ascending[0] == "Task 00000" and descending[0] == "Task 00059" and len(ascending) == 50
    page = client.get(url + "?sort=title").content.decode()
    header = re.search(r'<th aria-sort="ascending"><a href="\?sort=-title">Task ↑</a></th>', page)
    assert header, "the sorted column says so and its link reverses the order"
    by_status = html.unescape(client.get(url + "?sort=status").content.decode())
    assert re.findall(r'<span class="badge (\w+)">', by_status.split('id="task-list"')[1])[0] == "approved"


def test_tasks_filter_by_status_and_search_the_title(client, team, world):
    add_tasks(team, world, 40)
    client.force_login(team.author)
    url = reverse("project-detail", args=[team.project.pk])
    approved = html.unescape(client.get(url + "?status=approved").content.decode())
    assert set(re.findall(r'<span class="badge (\w+)">Approved', approved)) == {"approved"}
    assert len(TASK_ROW.findall(approved)) == 10 and '<option value="approved" selected>' in approved
    found = html.unescape(client.get(url + "?q=task 0003").content.decode())
    assert sorted(re.findall(r'<a href="/tasks/\d+/">(Task \d+)</a>', found)) == [f"Task {i:05d}" for i in range(30, 40)]
    none = html.unescape(client.get(url + "?q=no such title").content.decode())
    assert "No task matches." in none and TASK_ROW.findall(none) == []


@pytest.mark.parametrize("query", [
    "sort=created_by__password", "sort=-world__project__name", "status=__all__", "status=draft' OR 1=1", "sort=title;drop",
])
def test_unknown_sort_or_filter_is_ignored_and_said_plainly(client, team, world, query):
    add_tasks(team, world, 12)
    client.force_login(team.author)
    url = reverse("project-detail", args=[team.project.pk])
    response = client.get(f"{url}?{query}")
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "does not offer" in page and len(TASK_ROW.findall(page)) == 12  # the whole list, in the default order
    default = re.findall(r'<a href="/tasks/\d+/">(Task \d+)</a>', html.unescape(client.get(url).content.decode()))
    assert re.findall(r'<a href="/tasks/\d+/">(Task \d+)</a>', page) == default


def test_another_projects_tasks_never_show(client, team, world, other_team):
    from tests import factories

    foreign_world = factories.world(other_team.project, other_team.author, documents=0)
    EnvTask.objects.create(project=other_team.project, world=foreign_world, title="Foreign task", created_by=other_team.author)
    add_tasks(team, world, 3)
    client.force_login(team.author)
    page = client.get(reverse("project-detail", args=[team.project.pk]) + "?q=Foreign").content.decode()
    assert "Foreign task" not in page and "No task matches." in page
    client.force_login(other_team.author)
    assert client.get(reverse("project-detail", args=[team.project.pk])).status_code == 404


# --- The world editor's data room --------------------------------------------------------

def test_a_small_data_room_shows_its_whole_tree(client, team, world):
    client.force_login(team.author)
    page = html.unescape(client.get(reverse("world-editor", args=[world.pk])).content.decode())
    assert '<td class="folder" colspan="6">Deal/</td>' in page and "Doc 1.md" in page and "Doc 2.md" in page
    assert 'aria-label="Folder"' not in page  # no folder navigation needed


def test_world_editor_at_5000_documents_renders_one_folder_page(client, team, world):
    client.force_login(team.author)
    url = reverse("world-editor", args=[world.pk])
    add_documents(world, 5_000)
    _, size, page, _ = measure(client, url)
    assert DOCUMENT_ROW.findall(page) == []  # the top level holds only folders here
    assert len(re.findall(r'<tr class="subfolder">', page)) == FOLDER_PAGE  # of 50 folders + Deal/: a page of them
    assert "Page 1 of 2 · 51 in all" in page
    assert "Folder 07/</a></td><td class=\"small muted\">100 documents</td>" in page
    assert "5000 documents" in page and 'aria-label="Folder"' in page
    _, _, folder, _ = measure(client, url + "?folder=Folder 07")
    assert len(DOCUMENT_ROW.findall(folder)) == FOLDER_PAGE and "Page 1 of 2 · 100 in all" in folder
    assert '<span aria-current="page">Folder 07</span>' in folder and "Doc 00007.md" in folder and "Doc 02457.md" in folder
    assert "Doc 02507.md" not in folder
    _, _, second, _ = measure(client, url + "?folder=Folder 07&page=2")
    assert len(DOCUMENT_ROW.findall(second)) == 50 and "Doc 04957.md" in second and "Doc 00007.md" not in second
    assert size < 200_000, size  # not 70,000 DOM nodes


def test_the_world_editor_costs_the_same_at_200_and_5000_documents(client, team, world):
    client.force_login(team.author)
    url = reverse("world-editor", args=[world.pk]) + "?folder=Folder 03"
    add_documents(world, 200)
    small_queries, _, _, _ = measure(client, url)
    add_documents(world, 5_000)
    big_queries, _, big, _ = measure(client, url)
    assert big_queries == small_queries
    assert len(DOCUMENT_ROW.findall(big)) == FOLDER_PAGE


def test_a_folder_opens_in_place_as_an_htmx_partial_and_actions_keep_the_folder(client, team, world):
    add_documents(world, WHOLE_TREE_MAX + 20, folders=3)
    client.force_login(team.author)
    url = reverse("world-editor", args=[world.pk])
    fragment = client.get(url + "?folder=Folder 01", HTTP_HX_TARGET="data-room", **HX).content.decode()
    assert fragment.lstrip().startswith('<section id="data-room"') and "<html" not in fragment
    assert "folder=Folder%2001" in fragment  # the refresh after drafting keeps the folder
    document = world.documents.get(path="Folder 01/Doc 00004.md")
    moved = client.post(
        reverse("document-move", args=[document.pk]), {"direction": "down"},
        HTTP_HX_CURRENT_URL=f"http://testserver{url}?folder=Folder%2001", **HX,
    ).content.decode()
    assert '<span aria-current="page">Folder 01</span>' in moved and "Doc 00004.md" in moved
    added = client.post(
        reverse("document-add", args=[world.pk]),
        {"path": "Folder 02/Board minutes.docx", "kind": "file", "format": "docx", "brief": "", "target_size": 300},
        HTTP_HX_CURRENT_URL=f"http://testserver{url}?folder=Folder%2001", **HX,
    ).content.decode()
    assert '<span aria-current="page">Folder 02</span>' in added  # shown where it went
    assert world.documents.filter(path="Folder 02/Board minutes.docx").exists()


def test_an_unknown_folder_shows_the_top_level_and_says_so(client, team, world):
    add_documents(world, WHOLE_TREE_MAX + 5, folders=2)
    client.force_login(team.author)
    page = html.unescape(client.get(reverse("world-editor", args=[world.pk]) + "?folder=../../etc").content.decode())
    assert 'There is no folder “../../etc”' in page and "Folder 00/" in page
