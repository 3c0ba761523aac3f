"""The source registry is the one list of sources: the navigation, the home page and the importer read it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import set_script_prefix

from records.sources import REGISTRY, SOURCES


@pytest.mark.django_db
def test_every_page_links_the_sources_the_registry_names_for_navigation(client: Client) -> None:
    html = client.get("/").content.decode()
    navigation = re.search(r'<nav aria-label="Main">(.*?)</nav>', html, re.S)
    assert navigation is not None
    linked = re.findall(r'href="/sources/([^"]+)">([^<]+)</a>', navigation.group(1))
    assert linked == [(info.key, info.navigation_title) for info in SOURCES.values() if info.navigation_title]
    assert "kernelindex" not in dict(linked)  # KernelIndex's own manifests are named in words on the home page
    not_found = client.get("/runs/nothing-here").content.decode()
    assert all(f'href="/sources/{key}"' in not_found for key, _ in linked)


@pytest.mark.django_db
def test_the_home_page_filters_by_every_registered_source(client: Client) -> None:
    html = client.get("/").content.decode()
    offered = re.findall(r'<option value="([^"]+)">', html.split('name="source"', 1)[1].split("</select>", 1)[0])
    assert offered == [source.info.key for source in REGISTRY]
    assert "source" in client.get("/index.json?source=unknown").json()["errors"]


def test_each_source_is_registered_once_with_an_adapter_for_source_option() -> None:
    keys = [source.info.key for source in REGISTRY]
    assert len(keys) == len(set(keys)) == len(SOURCES)
    for source in REGISTRY:
        assert source.default_adapter(False).name == source.info.key
        assert all(form.adapter(False).name == source.info.key for form in source.formats)


@pytest.mark.django_db
def test_the_navigation_rendered_once_follows_the_prefix_the_site_is_served_under(
    client: Client, settings: Any
) -> None:
    """The frame's links are rendered once per process (site_frame), but under a URL prefix (a proxy's
    SCRIPT_NAME, which the WSGI handler sets before each request) every link starts with that prefix, and
    without one none does, whichever was asked first."""
    settings.PAGE_CACHE_SECONDS = 0  # one deployment has one prefix: the page cache does not key on it
    set_script_prefix("/kernelindex/")
    try:
        mounted = client.get("/").content.decode()
    finally:
        set_script_prefix("/")
    plain = client.get("/").content.decode()
    assert '<a class="brand" href="/kernelindex/">' in mounted
    assert 'href="/kernelindex/sources/sol-execbench"' in mounted and 'href="/kernelindex/dumps/"' in mounted
    assert '<a class="brand" href="/">' in plain and "/kernelindex/" not in plain
