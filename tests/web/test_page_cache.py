"""Cached pages: what any visitor sees must be as fresh, and as much their own, as a page rendered for them.

Writes retire cached pages after they commit; each test runs inside a transaction
that never commits, so the writes here run under `django_capture_on_commit_callbacks`,
which runs the commit callbacks as a real commit would.
"""

from __future__ import annotations

import gzip
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.contrib.messages.storage.cookie import CookieStorage
from django.core.cache import cache as django_cache
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse
from django.template import RequestContext, Template
from django.test import Client, RequestFactory
from django.utils import timezone

from attestations.models import Attestation
from records.canonical import canonical_text
from records.manifest import INDEX_MEMBERS
from runs.models import Run
from runs.selectors import run_documents, run_manifest_text
from runs.services import restore_run, withdraw_run
from tests.conftest import ImportRuns
from tests.pages import HTMX, queries_for, sol_records, visible_text, write_jsonl
from web import cache, scopes

NOTE_THANKS = "Thanks — your note will appear once a moderator approves it."
TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def page_text(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return visible_text(response.content)


def tokens(html: bytes) -> list[str]:
    """Every CSRF token on a page: each form's hidden field (htmx posts it with the form)."""
    return TOKEN.findall(html.decode())


# -- served from the cache -----------------------------------------------------------


def test_a_page_seen_before_is_served_without_a_query(client: Client, run: Run) -> None:
    assert run.definition is not None
    other = Run.objects.exclude(pk=run.pk).first()
    assert other is not None
    urls = [
        run.get_absolute_url(),
        f"{run.get_absolute_url()}.json",
        run.group.get_absolute_url(),
        f"{run.group.get_absolute_url()}.json",
        "/",
        "/?q=softmax&page=2",
        "/index.json",
        run.definition.get_absolute_url(),
        "/sources/sol-execbench",
        f"/compare/{run.run_id}/{other.run_id}",
        f"/documents/{run.digest}.json",
    ]
    for url in urls:
        assert queries_for(client, url) > 0, url
        assert queries_for(Client(), url) == 0, url


def test_the_json_twin_from_the_cache_is_the_canonical_manifest_byte_for_byte(client: Client, run: Run) -> None:
    manifest = run_manifest_text(run, run_documents(run))
    served = []
    for _ in range(2):
        response = client.get(f"{run.get_absolute_url()}.json")
        served.append(response.content)
        twin = json.loads(response.content)
        assert canonical_text({key: value for key, value in twin.items() if key not in INDEX_MEMBERS}) == manifest
        assert response["Content-Type"] == "application/json"
        assert response["Content-Disposition"] == f'inline; filename="run-{run.run_id}.manifest.json"'
        assert "csrftoken" not in response.cookies
    assert served[0] == served[1]


def test_the_htmx_fragment_and_the_full_page_are_cached_apart(client: Client, run: Run) -> None:
    url = run.group.get_absolute_url()
    for _ in range(2):
        full = client.get(url)
        fragment = client.get(url, headers=HTMX)
        assert full.content.decode().startswith("<!doctype html>")
        assert fragment.content.decode().strip().startswith('<div id="leaderboard">')
        assert "HX-Request" in full["Vary"] and "HX-Request" in fragment["Vary"]


BROWSER_ENCODINGS = {"Accept-Encoding": "gzip, deflate, br, zstd"}


def test_a_cached_page_goes_gzipped_to_a_browser_and_as_it_is_to_a_client_that_does_not_ask(
    client: Client, run: Run
) -> None:
    """The cache keeps a page gzipped (web.cache): a browser gets those bytes, whether the page was just rendered
    or kept; a client that does not accept gzip gets the very page, decompressed."""
    urls = [run.get_absolute_url(), f"{run.get_absolute_url()}.json", run.group.get_absolute_url(), "/"]
    for url in urls:
        plain = [client.get(url) for _ in range(2)]  # rendered, then from the cache
        gzipped = [Client().get(url, headers=BROWSER_ENCODINGS) for _ in range(2)]
        assert plain[0].content == plain[1].content, url
        for response in plain:
            assert "Content-Encoding" not in response and "Accept-Encoding" in response["Vary"], url
        for response in (*plain, *gzipped):  # a shared cache must not give a signed-in visitor's page to others
            assert "Cookie" in response["Vary"], url
        for response in gzipped:
            assert response["Content-Encoding"] == "gzip" and "Accept-Encoding" in response["Vary"], url
            assert gzip.decompress(response.content) == plain[0].content, url
            assert len(response.content) < len(plain[0].content), url
        head = Client().head(url, headers=BROWSER_ENCODINGS)
        assert head["Content-Length"] == str(len(gzipped[0].content)) and head.content == b"", url


def test_a_small_page_is_kept_as_it_is(client: Client, run: Run) -> None:
    badge = f"{run.get_absolute_url()}/badge.svg"
    for _ in range(2):
        response = client.get(badge, headers=BROWSER_ENCODINGS)
        assert "Content-Encoding" not in response and response.content.startswith(b"<svg")


@pytest.mark.parametrize(
    ("accept_encoding", "admits"),
    [
        ("gzip", True),
        ("gzip, deflate, br, zstd", True),
        ("GZIP;Q=0.5", True),
        ("x-gzip", True),
        ("deflate, *;q=0.1", True),
        ("*", True),
        ("", False),
        ("br, zstd", False),
        ("identity", False),
        ("gzip;q=0", False),
        ("gzip;q=0.000", False),
        ("*;q=0", False),
        ("gzip;q=0, *", False),
        ("gzip;q=nonsense", False),
        ("br;q=1, gzip ; q=0.2", True),
    ],
)
def test_accept_encoding_is_read_with_its_weights(accept_encoding: str, admits: bool) -> None:
    assert cache.accepts_gzip(accept_encoding) is admits


def test_an_unknown_run_stays_404(client: Client, run: Run) -> None:
    for _ in range(2):
        assert client.get("/runs/000000000000").status_code == 404


# -- fresh after every write -------------------------------------------------------------


def test_an_approved_note_shows_at_once(
    client: Client, admin_client: Client, run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    note = Attestation.objects.create(run=run, kind="note", body="Reran it on a B200: same latency.")
    assert "No attestations yet." in page_text(client, run.get_absolute_url())

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post("/admin/attestations/attestation/", {"action": "approve", "_selected_action": [note.pk]})
    assert "Reran it on a B200: same latency." in page_text(client, run.get_absolute_url())

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post("/admin/attestations/attestation/", {"action": "reject", "_selected_action": [note.pk]})
    assert "Reran it on a B200" not in page_text(client, run.get_absolute_url())


def test_a_note_edited_or_deleted_in_the_admin_shows_at_once(
    client: Client, admin_client: Client, run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    note = Attestation.objects.create(run=run, kind="note", body="Reran it.", status="approved")
    assert "Reran it." in page_text(client, run.get_absolute_url())

    change = f"/admin/attestations/attestation/{note.pk}/change/"
    fields = {"run": run.pk, "kind": "note", "outcome": "", "gpu": "", "author_name": "", "contact_email": ""}
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(change, fields | {"body": "Reran it twice.", "status": "approved"})
    assert "Reran it twice." in page_text(client, run.get_absolute_url())

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(f"/admin/attestations/attestation/{note.pk}/delete/", {"post": "yes"})
    assert "No attestations yet." in page_text(client, run.get_absolute_url())


def test_a_withdrawn_and_restored_run_shows_at_once(
    client: Client, run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    run_page, group_page = run.get_absolute_url(), run.group.get_absolute_url()
    assert run.run_id in page_text(client, group_page)
    assert "Withdrawn on" not in page_text(client, run_page)

    with django_capture_on_commit_callbacks(execute=True):
        withdraw_run(run, "Submitted twice.")
    withdrawn = client.get(run_page)
    assert withdrawn.status_code == 410  # gone, with its tombstone
    assert "Submitted twice." in visible_text(withdrawn.content)
    assert run.run_id not in page_text(client, group_page)
    assert run.run_id not in client.get(f"{group_page}.json").content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        restore_run(run)
    assert "Withdrawn on" not in page_text(client, run_page)
    assert run.run_id in page_text(client, group_page)


def test_a_withdrawal_retires_cached_pages_only_once_it_commits(client: Client, run: Run) -> None:
    page = run.get_absolute_url()
    page_text(client, page)
    withdraw_run(run, "Not committed yet.")  # the test's transaction never commits
    assert queries_for(client, page) == 0


def test_an_imported_run_shows_at_once(
    client: Client, import_runs: ImportRuns, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    records = sol_records(4)
    import_runs(write_jsonl(tmp_path / "first.jsonl", records[:3]))
    group = Run.objects.get(external_id=str(records[0]["id"])).group
    assert client.get(f"{group.get_absolute_url()}.json").json()["count"] == 3
    page_text(client, group.get_absolute_url())
    page_text(client, "/")

    with django_capture_on_commit_callbacks(execute=True):
        import_runs(write_jsonl(tmp_path / "more.jsonl", records[3:]))
    new = Run.objects.get(external_id=str(records[3]["id"]))
    assert client.get(f"{group.get_absolute_url()}.json").json()["count"] == 4
    assert new.run_id in page_text(client, group.get_absolute_url())
    assert new.run_id in page_text(client, "/")  # newest first on the home page, cached a moment ago


def test_the_citation_shows_the_day_it_is_read(client: Client, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    today = timezone.now()
    assert f"accessed {today:%Y-%m-%d}" in page_text(client, run.get_absolute_url())
    tomorrow = today + timedelta(days=1)
    monkeypatch.setattr(timezone, "now", lambda: tomorrow)
    assert f"accessed {tomorrow:%Y-%m-%d}" in page_text(client, run.get_absolute_url())


def test_a_new_release_never_serves_pages_the_last_one_rendered(
    client: Client, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    page_text(client, run.get_absolute_url())
    monkeypatch.setattr(cache, "release_id", lambda: "the next release")
    assert queries_for(client, run.get_absolute_url()) > 0


# -- never shared ------------------------------------------------------------------


def opened_form(visitor: Client, run: Run) -> bytes:
    """The note form as htmx fetches it when the visitor opens it on the run page."""
    response = visitor.get(f"/runs/{run.run_id}/notes", headers=HTMX)
    assert response.status_code == 200
    return response.content


def test_a_cached_page_carries_no_visitors_token_and_sets_no_cookie(client: Client, run: Run) -> None:
    urls = ("/", run.get_absolute_url(), run.group.get_absolute_url(), f"{run.get_absolute_url()}.json", "/compare")
    for url in urls:
        for _ in range(2):  # rendered, then from the cache
            response = client.get(url)
            assert response.status_code == 200
            assert not response.cookies, url
            assert not tokens(response.content), url


def test_two_visitors_opening_a_form_get_their_own_tokens(run: Run) -> None:
    ada, bob = Client(), Client()
    assert ada.get(run.get_absolute_url()).content == bob.get(run.get_absolute_url()).content
    ada_tokens, bob_tokens = tokens(opened_form(ada, run)), tokens(opened_form(bob, run))
    assert len(ada_tokens) == len(bob_tokens) == 1
    assert ada_tokens != bob_tokens
    assert ada.cookies["csrftoken"].value != bob.cookies["csrftoken"].value


def test_a_form_opened_on_a_cached_page_posts_with_its_token(run: Run) -> None:
    Client().get(run.get_absolute_url())  # someone else's visit caches the page
    visitor, stranger = Client(enforce_csrf_checks=True), Client(enforce_csrf_checks=True)
    visitor.get(run.get_absolute_url())
    [token] = tokens(opened_form(visitor, run))
    opened_form(stranger, run)
    note = {"note-kind": "note", "note-body": "Same on my H100.", "note-latency_unit": "us"}

    assert stranger.post(f"/runs/{run.run_id}/notes", note | {"csrfmiddlewaretoken": token}).status_code == 403
    assert visitor.post(f"/runs/{run.run_id}/notes", note | {"csrfmiddlewaretoken": token}).status_code == 302
    assert Attestation.objects.get().body == "Same on my H100."


def test_a_page_that_uses_the_visitors_csrf_token_is_never_kept(rf: RequestFactory, db: None) -> None:
    @cache.cached_page(scopes.LISTS_PAGE)
    def form_page(request: HttpRequest) -> HttpResponse:
        return HttpResponse(Template("<form>{% csrf_token %}</form>").render(RequestContext(request)))

    def visit() -> HttpResponse:
        request = rf.get("/a-form")
        request.user = AnonymousUser()
        request._messages = CookieStorage(request)  # type: ignore[attr-defined]
        return form_page(request)

    first, second = visit(), visit()
    assert tokens(first.content) != tokens(second.content)
    assert django_cache.get(cache.page_key(cache.page_address(rf.get("/a-form")))) is None


def test_the_thanks_after_a_post_without_javascript_shows_to_its_sender_alone(run: Run) -> None:
    sender, other = Client(), Client()
    sender.get(run.get_absolute_url())
    other.get(run.get_absolute_url())
    response = sender.post(f"/runs/{run.run_id}/notes", {"note-kind": "note", "note-body": "Same on my H100."})
    assert response.status_code == 302

    assert NOTE_THANKS in page_text(sender, run.get_absolute_url())
    assert NOTE_THANKS not in page_text(other, run.get_absolute_url())
    assert NOTE_THANKS not in page_text(sender, run.get_absolute_url())  # shown once, as messages are


def test_a_signed_in_moderator_gets_a_page_of_their_own(admin_user: User, run: Run) -> None:
    moderator, visitor = Client(), Client()
    moderator.force_login(admin_user)
    assert queries_for(moderator, run.get_absolute_url()) > 0
    assert queries_for(visitor, run.get_absolute_url()) > 0  # what the moderator got was not kept for others
    assert queries_for(visitor, run.get_absolute_url()) == 0
    assert queries_for(moderator, run.get_absolute_url()) > 0  # nor are they served what others got


def test_pages_are_rendered_every_time_when_the_cache_is_off(client: Client, run: Run, settings: Any) -> None:
    settings.PAGE_CACHE_SECONDS = 0
    assert queries_for(client, run.get_absolute_url()) > 0
    assert queries_for(client, run.get_absolute_url()) > 0


# -- keyed on what the view reads ----------------------------------------------------


def test_query_parameters_a_page_does_not_read_share_its_cached_entry(client: Client, run: Run) -> None:
    page = run.get_absolute_url()
    assert queries_for(client, f"{page}?junk=1") > 0
    for n in range(2, 12):
        assert queries_for(Client(), f"{page}?junk={n}") == 0
    assert queries_for(Client(), page) == 0
    assert queries_for(Client(), "/?q=softmax&utm_source=mail") > 0
    assert queries_for(Client(), "/?q=softmax&utm_source=news") == 0
    assert queries_for(Client(), "/?q=other") > 0  # a parameter the page does read makes a page of its own


def test_parameters_a_page_does_not_read_never_show_on_it(
    client: Client, import_runs: ImportRuns, tmp_path: Path
) -> None:
    import_runs(write_jsonl(tmp_path / "many.jsonl", sol_records(60)))
    listing = client.get("/index.json?tracking=<b>x</b>").json()
    assert listing["next"].startswith("http://testserver/index.json?after=")
    assert "tracking" not in listing["next"]
    assert "tracking" not in client.get("/?tracking=abc").content.decode()


# -- scoped retirement ---------------------------------------------------------------


def test_retiring_a_run_renders_its_page_again_and_no_other(
    client: Client, run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    other = Run.objects.exclude(group=run.group).first()
    assert other is not None
    for page in (run.get_absolute_url(), other.get_absolute_url(), "/"):
        page_text(client, page)

    with django_capture_on_commit_callbacks(execute=True):
        cache.retire_pages_on_commit(f"run:{run.run_id}")
    assert queries_for(client, run.get_absolute_url()) > 0
    assert queries_for(client, other.get_absolute_url()) == 0
    assert queries_for(client, "/") == 0
    assert queries_for(client, run.get_absolute_url()) == 0  # and kept again


def test_retiring_a_group_renders_its_leaderboard_and_its_runs_pages_again(
    client: Client, import_runs: ImportRuns, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    import_runs(write_jsonl(tmp_path / "group.jsonl", sol_records(2)))
    import_runs(write_jsonl(tmp_path / "other.jsonl", sol_records(1, kernel_id=9, start_id=800_000)))
    run, neighbour = Run.objects.filter(external_id__startswith="9").order_by("external_id")
    [stranger] = Run.objects.filter(external_id__startswith="8")
    pages = [run.group.get_absolute_url(), run.get_absolute_url(), neighbour.get_absolute_url()]
    for page in [*pages, stranger.get_absolute_url()]:
        page_text(client, page)

    with django_capture_on_commit_callbacks(execute=True):
        cache.retire_pages_on_commit(f"group:{run.group.key}")
    for page in pages:
        assert queries_for(client, page) > 0, page
    assert queries_for(client, stranger.get_absolute_url()) == 0


def test_retiring_lists_renders_the_lists_again_and_not_run_or_source_pages(
    client: Client, run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    for page in ("/", "/index.json", "/sources/sol-execbench", run.get_absolute_url()):
        page_text(client, page)
    with django_capture_on_commit_callbacks(execute=True):
        cache.retire_pages_on_commit("lists")
    for page in ("/", "/index.json"):
        assert queries_for(client, page) > 0, page
    assert queries_for(client, run.get_absolute_url()) == 0
    assert queries_for(client, "/sources/sol-execbench") == 0
    with django_capture_on_commit_callbacks(execute=True):
        cache.retire_pages_on_commit("source:sol-execbench")
    assert queries_for(client, "/sources/sol-execbench") > 0


def test_a_scope_retired_before_its_transaction_commits_is_still_served(client: Client, run: Run) -> None:
    page_text(client, run.get_absolute_url())
    cache.retire_pages_on_commit(f"run:{run.run_id}")  # the test's transaction never commits
    assert queries_for(client, run.get_absolute_url()) == 0


# -- the release ---------------------------------------------------------------------


def test_the_release_is_taken_from_the_environment(settings: Any) -> None:
    cache.release_id.cache_clear()
    settings.RELEASE_ID = "2026.12.01-1"
    try:
        assert cache.release_id() == "2026.12.01-1"
    finally:
        cache.release_id.cache_clear()


def test_the_release_defaults_to_the_checked_out_commit(tmp_path: Path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    git = tmp_path / "main" / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(commit + "\n")
    assert cache.git_commit(tmp_path / "main") == commit

    # A worktree: a .git file pointing at its own git directory, whose branch ref is packed in the main one.
    worktree_git = git / "worktrees" / "serve"
    worktree_git.mkdir(parents=True)
    (worktree_git / "HEAD").write_text("ref: refs/heads/serve\n")
    (worktree_git / "commondir").write_text("../..\n")
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{commit[::-1]} refs/heads/serve\n")
    (tmp_path / "serve").mkdir()
    (tmp_path / "serve" / ".git").write_text(f"gitdir: {worktree_git}\n")
    assert cache.git_commit(tmp_path / "serve") == commit[::-1]

    assert cache.git_commit(tmp_path / "nowhere") is None


def test_a_process_that_never_rendered_a_page_still_sees_its_scopes_retired(
    client: Client, run: Run, django_capture_on_commit_callbacks: Any
) -> None:
    page_text(client, run.get_absolute_url())
    cache._learned_scopes.clear()  # as in another worker, which only finds the page in the cache
    with django_capture_on_commit_callbacks(execute=True):
        cache.retire_pages_on_commit(f"group:{run.group.key}")
    assert queries_for(client, run.get_absolute_url()) > 0


def test_a_run_page_seen_before_costs_one_cache_round_trip(
    client: Client, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    page_text(client, run.get_absolute_url())
    calls: list[list[str]] = []
    backend = caches["default"]  # the backend itself, behind the `cache` proxy web/cache.py uses
    real_get_many = backend.get_many

    def counted(keys: list[str], *args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(list(keys))
        return real_get_many(keys, *args, **kwargs)

    monkeypatch.setattr(backend, "get_many", counted)
    assert queries_for(client, run.get_absolute_url()) == 0
    assert len(calls) == 1
