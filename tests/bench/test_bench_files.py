"""Files the benchmark builds its peers from are in the tree: a peer whose build file
is missing would only show as "unavailable" in a benchmark run, never as a failure."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from bench.kroxylicious_peer import KROXYLICIOUS_LAUNCHER, KROXYLICIOUS_MAIN, KROXYLICIOUS_POM


def test_the_kroxylicious_build_files_are_in_the_tree() -> None:
    pom = ET.parse(KROXYLICIOUS_POM).getroot()
    names = [el.text for el in pom.iter() if el.tag.endswith("artifactId")]
    assert "kroxylicious-runtime" in names
    assert f"class {KROXYLICIOUS_MAIN}" in KROXYLICIOUS_LAUNCHER.read_text()
