"""A workspace costs two queries to load, whatever the size of its world, and reads
after that cost none (no N+1 over documents, threads or channels)."""

from authoring import services as authoring_services
from authoring.models import DocumentKind
from tests.workspace.conftest import Runner
from workspace.selectors import overlay_diff
from workspace.services import overlay_create
from workspace.tools import Workspace

READS = [
    ("list_files", {"recursive": True}),
    ("list_files", {"folder": "Folder 3"}),
    ("search_files", {"query": "paragraph 17"}),
    ("read_file", {"path": "Folder 1/File 1.md"}),
    ("list_emails", {"limit": 100}),
    ("search_emails", {"sender": "person7", "date_from": "2026-01-01"}),
    ("read_email", {"id": "Mail/Email 5"}),
    ("read_thread", {"id": "Mail/Email 9"}),
    ("list_channels", {}),
    ("read_channel", {"channel": "channel-1", "limit": 100}),
    ("read_chat_thread", {"id": "Chat/Message 12"}),
    ("search_chat", {"query": "message"}),
    ("list_events", {"start": "2026-01-01", "end": "2026-12-31"}),
    ("search_events", {"query": "meeting"}),
]


def big_world(team):
    world = authoring_services.world_create(project_id=team.project.pk, user=team.author, title="Big")
    for n in range(80):
        authoring_services.document_create(world=world, user=team.author, path=f"Folder {n % 8}/File {n}.md",
                                           content=f"# File {n}\n\nparagraph {n}\n")
    for n in range(60):
        metadata = {"from": f"Person {n % 10} <person{n % 10}@example.com>", "to": "team@example.com",
                    "date": f"2026-02-{1 + n % 28:02d}T09:{n % 60:02d}:00+00:00", "subject": f"Subject {n % 15}"}
        if n >= 15:
            metadata["thread"] = f"Mail/Email {n % 15}"
            metadata["date"] = f"2026-03-{1 + n % 28:02d}T09:{n % 60:02d}:00+00:00"
        authoring_services.document_create(world=world, user=team.author, path=f"Mail/Email {n}", kind=DocumentKind.EMAIL,
                                           content=f"Body {n}", metadata=metadata)
    for n in range(40):
        metadata = {"channel": f"channel-{n % 4}", "from": f"Person {n % 5} <p{n % 5}@example.com>",
                    "date": f"2026-03-{1 + n % 28:02d}T10:{n % 60:02d}:00+00:00"}
        if n >= 8:
            metadata["thread"] = f"Chat/Message {n % 4}"
            metadata["date"] = f"2026-04-{1 + n % 28:02d}T10:{n % 60:02d}:00+00:00"
        authoring_services.document_create(world=world, user=team.author, path=f"Chat/Message {n}", kind=DocumentKind.CHAT,
                                           content=f"message {n}", metadata=metadata)
    for n in range(20):
        authoring_services.document_create(
            world=world, user=team.author, path=f"Calendar/Event {n}", kind=DocumentKind.EVENT, content=f"meeting {n}",
            metadata={"subject": f"Meeting {n}", "start": f"2026-05-{1 + n:02d}T09:00:00+00:00",
                      "end": f"2026-05-{1 + n:02d}T10:00:00+00:00", "attendees": f"Person {n % 3} <p{n % 3}@example.com>"},
        )
    assert world.documents.count() == 200
    return world


def test_reads_on_a_world_of_200_documents_cost_two_queries(team, django_assert_max_num_queries):
    world = big_world(team)
    overlay = overlay_create(world=world, user=team.author)
    run = Runner(Workspace(world, overlay))
    with django_assert_max_num_queries(2):
        for name, arguments in READS:
            run(name, arguments)
    assert run.json("read_chat_thread", {"id": "Chat/Message 12"})["messages"][0]["id"] == "Chat/Message 0"

    # writes cost a bounded number of queries each, and later reads still none
    run("write_file", {"path": "Work/New.md", "content": "new"})
    run("send_email", {"to": ["a@b.co"], "subject": "Hi", "body": "x"})
    with django_assert_max_num_queries(0):
        for name, arguments in READS:
            run(name, arguments)
        assert run("read_file", {"path": "Work/New.md"}).endswith("new")

    with django_assert_max_num_queries(2):
        assert len(overlay_diff(overlay=overlay)) == 2


def test_a_read_only_workspace_loads_with_one_query(team, django_assert_max_num_queries):
    world = big_world(team)
    run = Runner(Workspace(world))
    with django_assert_max_num_queries(1):
        for name, arguments in READS:
            run(name, arguments)


def test_a_write_costs_a_bounded_number_of_queries(team, data_room, django_assert_max_num_queries):
    # lock, count, upsert (get + insert), and the savepoints the test's outer transaction adds
    run = Runner(Workspace(data_room, overlay_create(world=data_room, user=team.author)))
    run("list_files")
    with django_assert_max_num_queries(12):
        run("write_file", {"path": "Work/A.md", "content": "a"})
    with django_assert_max_num_queries(12):
        run("reply_email", {"id": "Mail/Inbox/2026-02-20 Price", "body": "ok"})
