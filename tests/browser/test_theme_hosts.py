"""The fallback palette follows each host's own light/dark switch, in real Chromium.

``theme.css`` alone (no ``--jp-*`` variables) on a page whose ``<body>`` carries
what a host sets: VS Code's ``vscode-dark`` / ``vscode-light`` /
``vscode-high-contrast`` classes, marimo's ``dark`` / ``data-theme`` (also on
a wrapper), JupyterLab's ``data-jp-theme-light``. The system's colour scheme
is set to the opposite each time: the host's choice must win, and with no
host choice the system's preference decides.
"""

from __future__ import annotations

from pathlib import Path

import pytest

THEME = Path(__file__).resolve().parents[2] / "nb_hitl" / "static" / "theme.css"
LIGHT_BG, DARK_BG = "rgb(255, 255, 255)", "rgb(30, 30, 30)"
LIGHT_FG, DARK_FG = "rgb(31, 31, 31)", "rgb(230, 230, 230)"

# (body attributes, a wrapper's attributes, the system's scheme, the palette expected)
HOSTS = [
    ("", "", "light", "light"),
    ("", "", "dark", "dark"),
    ('class="vscode-dark"', "", "light", "dark"),
    ('class="vscode-light"', "", "dark", "light"),
    ('class="vscode-high-contrast"', "", "light", "dark"),
    ('class="vscode-high-contrast vscode-high-contrast-light"', "", "dark", "light"),
    ('class="dark dark-theme" data-theme="dark"', "", "light", "dark"),
    ('class="light light-theme" data-theme="light"', "", "dark", "light"),
    ("", 'class="contents dark"', "light", "dark"),
    ('data-jp-theme-light="false"', "", "light", "dark"),
    ('data-jp-theme-light="true"', "", "dark", "light"),
]


@pytest.mark.parametrize(("body", "wrapper", "system", "want"), HOSTS)
def test_host_theme_picks_the_palette(page, body: str, wrapper: str, system: str, want: str) -> None:  # type: ignore[no-untyped-def]
    page.emulate_media(color_scheme=system)
    page.set_content(
        f"<!doctype html><html lang=en><head><title>t</title><style>{THEME.read_text(encoding='utf-8')}</style>"
        f'</head><body {body}><div {wrapper}><div class="nbh" id="root"><input type="checkbox"> text</div></div>'
        "</body></html>"
    )
    got = page.evaluate(
        """() => {
            const s = getComputedStyle(document.getElementById("root"));
            return {bg: s.backgroundColor, fg: s.color, scheme: s.colorScheme};
        }"""
    )
    bg, fg = (LIGHT_BG, LIGHT_FG) if want == "light" else (DARK_BG, DARK_FG)
    # the colours, and the colour scheme the browser draws native controls with
    assert got == {"bg": bg, "fg": fg, "scheme": want}, (body, wrapper, system, got)
