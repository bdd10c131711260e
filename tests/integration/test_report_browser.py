"""report.html opens in a real browser and its plots are there to read.

The report of the hand-written log (tests/hand_log.py), made by real
local Spark, is rendered by headless Chromium (Debian's `chromium`) into a screenshot:
the screenshot must not be blank and must show the plots' own colours (so the <img>
tags loaded in the browser, not just exist); every <img> must point to a PNG next to
the page that decodes, at a size a reader can read.
"""

from __future__ import annotations

import html.parser
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")

from tests.hand_log import Hand  # noqa: E402

pytestmark = pytest.mark.slow

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WIDTH, HEIGHT = 1280, 2400
# Colours drawn only by the plots (the page's CSS has none of them): the leadership
# plot's "gained" blue and "lost" orange, near the top of the page.
PLOT_COLOURS = {"gained": (0x15, 0x65, 0xC0), "lost": (0xEF, 0x6C, 0x00)}


def browser() -> str | None:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


class Images(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.sources.append(dict(attrs).get("src") or "")


@pytest.fixture(scope="module")
def report(hand: Hand) -> Path:
    """The hand-written log's report (the `hand` fixture of tests/conftest.py)."""
    return hand[1] / "report.html"


def screenshot(page: Path, png: Path, profile: Path) -> subprocess.CompletedProcess[str]:
    exe = browser()
    if exe is None:
        pytest.skip(f"no headless browser ({', '.join(BROWSERS)}); apt-get install chromium")
    argv = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        # Let the page (and its images) finish loading before the picture is taken.
        "--virtual-time-budget=5000",
        f"--screenshot={png}",
        f"--window-size={WIDTH},{HEIGHT}",
        page.as_uri(),
    ]
    # Its own session, so a hung browser goes with all its helper processes.
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"chromium did not finish in 120 s:\n{output[-2000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, output, "")


def close_to(pixel: tuple[int, ...], colour: tuple[int, int, int], tolerance: int = 12) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], colour, strict=True))


def test_report_renders_in_chromium_with_readable_plots(report: Path, tmp_path: Path) -> None:
    png = tmp_path / "report.png"
    result = screenshot(report, png, tmp_path / "profile")
    assert result.returncode == 0, result.stdout[-2000:]
    assert png.is_file(), result.stdout[-2000:]

    shot = Image.open(png).convert("RGB")
    assert shot.size == (WIDTH, HEIGHT)
    # Not blank: many colours, and real contrast (text, tables, plots).
    small = shot.resize((WIDTH // 4, HEIGHT // 4))
    raw = small.tobytes()
    pixels = list(zip(raw[0::3], raw[1::3], raw[2::3], strict=True))
    assert len(set(pixels)) > 200
    grey = [sum(p) / 3 for p in pixels]
    mean = sum(grey) / len(grey)
    variance = sum((g - mean) ** 2 for g in grey) / len(grey)
    assert variance > 100, f"the screenshot looks blank (grey variance {variance:.0f})"
    # The plots loaded in the browser: their colours are on screen, in quantity.
    for name, colour in PLOT_COLOURS.items():
        count = sum(1 for p in pixels if close_to(p, colour))
        assert count > 200, f"{name} colour of the leadership plot not on screen ({count} px)"


def test_every_image_is_a_readable_png(report: Path) -> None:
    parser = Images()
    parser.feed(report.read_text(encoding="utf-8"))
    assert len(parser.sources) == 7  # every plot has data in the hand-written log
    for src in parser.sources:
        assert src.startswith("plots/") and src.endswith(".png"), src
        path = report.parent / src
        assert path.is_file(), src
        with Image.open(path) as img:
            img.load()  # decodes the whole image
            assert img.format == "PNG"
            width, height = img.size
            # Drawn 11 inches wide at 100 dpi: the page's column, no scaling down.
            assert width == 1100, (src, img.size)
            assert 200 <= height <= 1600, (src, img.size)
            colours = img.convert("RGB").getcolors(maxcolors=1 << 16)
            assert colours is None or len(colours) > 20, f"{src} is nearly blank"
