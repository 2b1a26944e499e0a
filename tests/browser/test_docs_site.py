"""The documentation site: built by ``docs/build.py`` as ``make docs`` builds it (Sphinx,
warnings as errors, every notebook with the outputs of its run), then opened in Chromium from a
loopback HTTP server: every internal link is followed, every page answers, every image loads, and
the rendered notebooks carry the outputs of their execution.

Under ``make test`` the notebook tier has just executed every notebook as handed out and stored
it for these sources: the build renders those (each one's stamp checked against the sources'
digest). Run alone, without them, the build executes the notebooks itself."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading
from collections import deque
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

from tests.browser.conftest import CHROMIUM_ARGS
from tests.docs_build import docs_build

pytestmark = pytest.mark.cost(15)

#: Seconds the build may take: without stored outputs it executes every notebook, each on a
#: cluster of its own.
BUILD_LIMIT = 1800

_LINKS_AND_IMAGES = """() => ({
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
    images: Array.from(document.querySelectorAll('img')).map(i => ({src: i.src, ok: i.complete && i.naturalWidth > 0})),
})"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site's directory (the build's output is shown when it fails)."""
    out = tmp_path_factory.mktemp("site") / "html"
    # the build's default: the stored outputs when all are there for these sources, else it executes
    result = subprocess.run([sys.executable, docs_build.__file__, "--out", str(out)],
                            capture_output=True, text=True, timeout=BUILD_LIMIT, cwd=out.parent)
    assert result.returncode == 0, f"the docs build failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    print(result.stdout.splitlines()[0])  # which of the two it used
    return out


@pytest.fixture(scope="module")
def served(site):
    """The site over HTTP on a loopback port of its own; its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_every_internal_link_answers_and_every_image_loads(served):
    from playwright.sync_api import sync_playwright

    seen, broken, bad_images = set(), [], []
    queue = deque([served + "index.html"])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            while queue:
                url = queue.popleft()
                if url in seen:
                    continue
                seen.add(url)
                response = page.goto(url, wait_until="load")
                if response is None or response.status != 200:
                    broken.append((url, response and response.status))
                    continue
                if not url.endswith(".html"):
                    continue
                found = page.evaluate(_LINKS_AND_IMAGES)
                bad_images += [(url, image["src"]) for image in found["images"] if not image["ok"]]
                for link in found["links"]:
                    target = urldefrag(urljoin(url, link))[0]
                    if urlparse(target).netloc == urlparse(served).netloc and target not in seen:
                        queue.append(target)
        finally:
            browser.close()
    pages = {u for u in seen if u.endswith(".html")}
    assert not broken, f"internal links that do not answer: {broken}"
    assert not bad_images, f"images that did not load: {bad_images}"
    for name in ("getting-started", "teaching", "cluster", "tracing", "measurements", "architecture", "limits", "api"):
        assert served + f"{name}.html" in pages, f"{name}.html not reached from the index"
    notebooks = sorted(Path(u).name for u in pages if "/notebooks/" in u)
    assert notebooks == sorted(p.stem + ".html" for p in docs_build.handed_out()), notebooks


def test_notebooks_are_rendered_with_the_outputs_of_their_run(site):
    start = (site / "notebooks" / "00_start_here.html").read_text()
    # printed by the ranks of the cluster the build started: the notebook really ran
    assert "Hello, world! I&#8217;m process 1 of 2." in start or "Hello, world! I'm process 1 of 2." in start
    api = (site / "api.html").read_text()
    assert 'id="mpiworkbench.Workbench"' in api and 'id="mpiworkbench.trace.Trace"' in api
