"""List pages (home, a leaderboard, compare, a source) as a reader sees them, and the site's icon and admin title.

Evidence levels are spelled one way, with a legend; hardware is one label per class; home has an
observed date and says which statistic its latencies are; a source's definitions are paged, most
runs first, the empty ones behind a link.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from runs.display import format_latency, hardware_label
from runs.figures import refresh_group_figures
from runs.models import EVIDENCE_LABELS, EVIDENCE_MEANINGS, STATUS_MEANINGS, Definition, Run
from tests.conftest import ImportRuns
from tests.pages import squeezed, visible_text

DEMO = Path(__file__).resolve().parent.parent.parent / "demo"
BADGE = re.compile(r'<span class="status status-(\w+) evidence-badge"[^>]*>(?:<span[^>]*>[^<]*</span>)?([^<]*)</span>')


@pytest.fixture
def disputed(import_runs: ImportRuns) -> Run:
    """The demo, its fastest reported RMSNorm not reproduced (as a rerun's verdict leaves it)."""
    import_runs(DEMO)
    run = Run.objects.get(source="kernelindex", implementation_name="rmsnorm-row-loop", external_id__startswith="demo")
    Run.objects.filter(pk=run.pk).update(evidence=Run.Evidence.NOT_REPRODUCED)
    refresh_group_figures([run.group_id])
    run.refresh_from_db()
    return run


def list_pages(run: Run) -> list[str]:
    other = Run.objects.filter(group=run.group).exclude(pk=run.pk).first()
    assert other is not None
    return ["/", run.group.get_absolute_url(), f"/sources/{run.source}", f"/compare/{other.run_id}/{run.run_id}"]


def test_a_definition_names_each_groups_hardware_and_its_best_runs_evidence(client: Client, disputed: Run) -> None:
    assert disputed.definition is not None
    html = client.get(disputed.definition.get_absolute_url()).content.decode()
    assert '<th scope="col">Hardware</th>' in html and ">GPU<" not in html
    # The best latency is the best run KernelIndex ranks: not the disputed one, reported faster.
    best = Run.objects.get(pk=disputed.group.best_run_id)
    assert best != disputed
    text = visible_text(html)
    assert "CPU" in text and f"{format_latency(best.latency_ns)} median Evidence: Reported" in text


def test_every_list_page_spells_evidence_one_way_and_has_a_legend(client: Client, disputed: Run) -> None:
    assert list(EVIDENCE_LABELS.values()) == ["Reported", "Reproduced", "Not reproduced", "Inconclusive"]
    for url in list_pages(disputed):
        html = client.get(url).content.decode()
        badges = BADGE.findall(html)
        assert ("not_reproduced", "Not reproduced") in badges, url
        assert all(label == EVIDENCE_LABELS[level] for level, label in badges), (url, badges)
        text = visible_text(html)
        for level, label in EVIDENCE_LABELS.items():  # the legend: each level, then what it means
            assert f"{label} {EVIDENCE_MEANINGS[level]}" in text, (url, label)
        assert f"Passed {STATUS_MEANINGS['passed']}" in text and f"Measured {STATUS_MEANINGS['measured']}" in text


def test_the_not_reproduced_rule_is_stated_on_the_leaderboard(client: Client, disputed: Run) -> None:
    text = visible_text(client.get(disputed.group.get_absolute_url()).content)
    assert "Runs that a KernelIndex rerun did not reproduce are ranked after every other run" in text


def test_compare_never_headlines_a_disputed_ratio_unqualified(client: Client, disputed: Run) -> None:
    other = Run.objects.filter(group=disputed.group, evidence=Run.Evidence.REPORTED, status="passed").get()
    text = visible_text(client.get(f"/compare/{other.run_id}/{disputed.run_id}").content)
    assert squeezed(f"A KernelIndex rerun did not reproduce {disputed.run_id}'s reported figure.") in squeezed(text)
    assert re.search(r"× latency ratio, as reported \([^)]*Not reproduced / [^)]*Reported ?\)", text), text
    assert "As reported, " + disputed.run_id in text
    plain = visible_text(client.get(f"/compare/{other.run_id}/{other.run_id}").content)
    assert "as reported" not in plain.lower()


def test_compare_shows_sources_as_monospace_blocks_and_field_names_whole(client: Client, disputed: Run) -> None:
    other = Run.objects.filter(group=disputed.group).exclude(pk=disputed.pk).first()
    assert other is not None
    html = client.get(f"/compare/{other.run_id}/{disputed.run_id}").content.decode()
    field = r'<th scope="row" class="field" title="[^"]+"><code>spec\.solution\.sources\[0\]\.content</code></th>'
    assert re.search(field, html)
    block = re.search(r'<pre class="source"><code>([^<]*)</code></pre>', html)
    assert block is not None and "def " in block.group(1) and "\n" in block.group(1)


@pytest.mark.parametrize(
    ("product", "hardware_class", "model", "label"),
    [
        ("CPU", "", "", "CPU"),
        ("CPU", "cpu", "AMD EPYC", "CPU · AMD EPYC"),
        ("Intel(R) Xeon(R) Processor", "cpu", "", "CPU · Intel(R) Xeon(R) Processor"),
        ("NVIDIA H100 80GB HBM3", "", "", "NVIDIA H100 80GB HBM3"),
        ("B200", "", "", "NVIDIA B200"),
        ("Some Accelerator 9000", "", "", "Some Accelerator 9000"),
    ],
)
def test_hardware_is_one_label_per_class_plus_the_model(
    product: str, hardware_class: str, model: str, label: str
) -> None:
    assert hardware_label(product, hardware_class, model) == label


def test_lists_head_their_hardware_column_hardware(client: Client, disputed: Run) -> None:
    for url in ("/", f"/sources/{disputed.source}"):
        html = client.get(url).content.decode()
        assert '<th scope="col">Hardware</th>' in html and ">GPU</th>" not in html, url
        assert '<td class="truncate" data-label="Hardware" title="CPU">CPU</td>' in html, url
    home = client.get("/").content.decode()  # the search filters by hardware too, labelled the same way
    assert '<label for="id_gpu">Hardware</label>' in home and '<option value="CPU">CPU</option>' in home
    assert "any GPU" not in home
    html = client.get(disputed.group.get_absolute_url()).content.decode()
    assert "Hardware CPU" in visible_text(html) and ">GPU<" not in html


def test_home_dates_each_run_and_lists_the_newest_observed_first(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "sol-execbench" / "submissions.jsonl")
    html = client.get("/").content.decode()
    header = visible_text(re.search(r"<thead>.*?</thead>", html, re.S).group(0))  # type: ignore[union-attr]
    assert "Latency · statistic" in header and "Observed" in header
    dates = re.findall(r'<td class="date optional" data-label="Observed"><time datetime="([^"]+)">', html)
    # Sorted by observed date: the order they were published in (the import's) differs for the last two.
    assert len(dates) == Run.objects.count() == 8 and dates == sorted(dates, reverse=True)
    newest = Run.objects.exclude(observed_at=None).order_by("-observed_at").first()
    assert newest is not None and newest.observed_at is not None
    assert dates[0].startswith(newest.observed_at.strftime("%Y-%m-%dT%H:%M:%S"))
    assert "newest observed first" in visible_text(html)
    # Each latency says its statistic; long names are cut by the stylesheet and given whole on hover.
    assert re.search(r'data-label="Latency">[^<]+ <span class="statistic">\w+</span>', html)
    for run in Run.objects.all()[:10]:
        assert f'data-label="Implementation" title="{run.implementation_name}">' in html or run.run_id not in html


def test_a_source_pages_its_definitions_most_runs_first_and_hides_the_empty_ones(
    client: Client, import_runs: ImportRuns, sample: Path, monkeypatch: Any
) -> None:
    import_runs(sample / "sol-execbench")
    monkeypatch.setattr("runs.pages.DEFINITIONS_PER_PAGE", 2)
    total = Definition.objects.filter(source="sol-execbench").count()
    counts = sorted(
        ((-d.runs.count(), d.name) for d in Definition.objects.filter(source="sol-execbench")),
    )
    with_runs = [name for negative, name in counts if negative < 0]
    assert 2 < len(with_runs) < total, "the sample needs definitions with and without runs"

    def listed(url: str) -> tuple[list[str], str]:
        html = client.get(url).content.decode()
        section = html.split('id="definitions"', 1)[1].split('id="runs"', 1)[0]
        names = re.findall(r'<a href="/definitions/sol-execbench/([^"]+)">', section)
        return names, visible_text(section)

    first, text = listed("/sources/sol-execbench")
    assert first == with_runs[:2]
    assert f"definitions {total} ({len(with_runs)} with runs)" in visible_text(
        client.get("/sources/sol-execbench").content
    )
    assert f"Definitions page 1 of {-(-len(with_runs) // 2)}" in text
    second, _ = listed("/sources/sol-execbench?definitions_page=2")
    assert second == with_runs[2:4]
    everything = []
    for number in range(1, total):
        names, text = listed(f"/sources/sol-execbench?empty=shown&definitions_page={number}")
        everything += names
        if "Next definitions" not in text:
            break
    assert everything == [name for _, name in counts] and "Hide the definitions without runs" in text
    assert client.get("/sources/sol-execbench?definitions_page=abc&empty=%00x").status_code in (200, 400)


def test_the_site_has_an_icon_that_answers(db: None, settings: Any) -> None:
    # Static files as WhiteNoise serves them without collectstatic (tests run with DEBUG off, which turns that off).
    settings.WHITENOISE_USE_FINDERS = settings.WHITENOISE_AUTOREFRESH = True
    client = Client()
    home = client.get("/")
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in home.content.decode()
    assert "img-src 'self'" in home["Content-Security-Policy"]
    icon = client.get("/static/favicon.svg")
    assert icon.status_code == 200 and icon["Content-Type"].startswith("image/svg+xml")
    legacy = client.get("/favicon.ico")  # what browsers ask for where a page names no icon
    assert legacy.status_code == 301 and legacy["Location"] == "/static/favicon.svg"
    login = client.get("/admin/login/").content.decode()
    assert 'rel="icon" href="/static/favicon.svg"' in login


def test_the_admin_is_titled_kernelindex_moderation(client: Client, admin_user: User, disputed: Run) -> None:
    client.force_login(admin_user)
    for url in ("/admin/", "/admin/runs/run/"):
        html = client.get(url).content.decode()
        assert "KernelIndex moderation</a>" in html and "Django administration" not in html, url
        assert re.search(r"<title>[^<]*KernelIndex moderation</title>", html), url
    runs = client.get("/admin/runs/run/").content.decode()
    assert disputed.run_id in runs and '<link rel="stylesheet" href="/static/css/admin.css">' in runs


def test_a_source_ordered_leaderboard_says_what_its_ranks_are(
    client: Client, import_runs: ImportRuns, sample: Path
) -> None:
    import_runs(sample / "sol-execbench")
    run = Run.objects.exclude(source_rank=None).order_by("source_rank").first()
    assert run is not None and run.group.native_order
    # Another board run in its group, ranked below it on the source's board.
    other = Run.objects.exclude(source_rank=None).exclude(group=run.group).first()
    assert other is not None
    Run.objects.filter(pk=other.pk).update(group=run.group, source_rank=run.source_rank + 3)
    Run.objects.filter(pk=run.pk).update(evidence=Run.Evidence.NOT_REPRODUCED)
    refresh_group_figures([run.group_id, other.group_id])
    html = client.get(run.group.get_absolute_url()).content.decode()
    text = visible_text(html)
    # The statement says what the rank column does: the source's ranks, a run a rerun did not reproduce
    # listed after the board's other runs without one (DESIGN.md: never ranked above a run that is not).
    assert (
        "The ranks are the source's own board's, except that a run a KernelIndex rerun did not reproduce is listed "
        "after the board's other runs, without a rank, and marked so." in text
    )
    rows = re.findall(r'<td class="num rank"[^>]*>([^<]*)</td>\s*<td class="key"[^>]*><a href="/runs/(\w+)"', html)
    assert [(rank, run_id) for rank, run_id in rows] == [(str(run.source_rank + 3), other.run_id), ("—", run.run_id)]
    assert "are ranked after every other run" not in text
    # The run page says the same: no rank, and why, with the board's rank named.
    page = visible_text(client.get(run.get_absolute_url()).content.decode())
    assert "Not ranked: a KernelIndex rerun did not reproduce it" in page
    assert f"(rank {run.source_rank} on the source's public board)" in page
    assert "Compare with #" not in page
    # The board's first run KernelIndex indexes is now the other one, whose page compares with no one above it.
    other_page = visible_text(client.get(other.get_absolute_url()).content.decode())
    assert f"Rank {run.source_rank + 3} in its comparison group · source-native comparison" in other_page
    assert re.search(rf"Its rank on the source's public board(: {run.source_rank + 3} of \d+)?\.", other_page)
    assert "Compare with #" not in other_page


HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2) title="'


def test_names_a_manifest_chose_are_escaped_in_every_list_row(client: Client, settings: Any, disputed: Run) -> None:
    """The rows of home, a source's runs and a leaderboard are written in Python (runs.tables): every value a
    manifest chose comes out as text, in cells and in their title attributes alike."""
    settings.PAGE_CACHE_SECONDS = 0
    Run.objects.filter(pk=disputed.pk).update(implementation_name=HOSTILE, hardware=HOSTILE)
    Definition.objects.filter(pk=disputed.definition_id).update(title=HOSTILE)
    for url in ["/", f"/sources/{disputed.source}", disputed.group.get_absolute_url()]:
        html = client.get(url).content.decode()
        assert "<script>alert(1)" not in html and "<img src=x" not in html, url
        assert "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html, url
        row = next(tr for tr in html.split("<tr") if f"<code>{disputed.run_id}</code>" in tr)
        assert 'title="&quot;&gt;&lt;script&gt;' in row, url
