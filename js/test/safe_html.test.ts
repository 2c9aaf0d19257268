// lib/safe_html.ts: the kernel's sanitised Markdown HTML, walked again in
// the page; only the allowlist survives, as new nodes (never innerHTML).
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { LINK_REL, safeFragment, safeHref } from "../lib/safe_html";

const dom = installDom();
after(() => dom.window.close());

/** The fragment's HTML, as a test reads it back. */
function html(input: string): string {
  const box = document.createElement("div");
  box.append(safeFragment(input));
  return box.innerHTML;
}

describe("safeHref", () => {
  test("absolute http(s) and mailto links are kept", () => {
    assert.equal(safeHref("https://example.org/a?b=1"), "https://example.org/a?b=1");
    assert.equal(safeHref(" http://example.org "), "http://example.org");
    assert.equal(safeHref("mailto:a@example.org"), "mailto:a@example.org");
  });
  test("scripts, data, relative and malformed links are dropped", () => {
    for (const href of ["javascript:alert(1)", "JaVaScRiPt:alert(1)", "data:text/html,<script>", "/api/kernels", "files/x", "//evil.example", "vbscript:x", "http://[bad"]) {
      assert.equal(safeHref(href), null, href);
    }
  });
});

describe("safeFragment", () => {
  test("allowed tags and their text are kept", () => {
    assert.equal(html("<p>a <strong>b</strong> <em>c</em> <code>d</code></p>"), "<p>a <strong>b</strong> <em>c</em> <code>d</code></p>");
    assert.equal(html('<ol start="3"><li>x</li></ol>'), '<ol start="3"><li>x</li></ol>');
    assert.equal(html('<table><tbody><tr><td align="right">1</td></tr></tbody></table>'), '<table><tbody><tr><td align="right">1</td></tr></tbody></table>');
  });
  test("script, style and embedded documents are dropped with their content", () => {
    assert.equal(html("<p>a</p><script>alert(1)</script><style>p{}</style><iframe src=x>t</iframe><svg><text>s</text></svg>"), "<p>a</p>");
  });
  test("event handlers and other attributes never survive", () => {
    assert.equal(html('<p onclick="alert(1)" style="color:red" class="x">a</p>'), "<p>a</p>");
    assert.equal(html('<img src=x onerror="alert(1)">'), "");
  });
  test("unknown tags keep their text, as text", () => {
    assert.equal(html("<div><span>a</span><marquee>b</marquee></div>"), "ab");
  });
  test("links get a safe href, rel and target; bad ones lose the href", () => {
    assert.equal(html('<a href="https://example.org" title="t">x</a>'), `<a href="https://example.org" title="t" rel="${LINK_REL}" target="_blank">x</a>`);
    assert.equal(html('<a href="javascript:alert(1)">x</a>'), `<a rel="${LINK_REL}" target="_blank">x</a>`);
  });
  test("bad attribute values are dropped", () => {
    assert.equal(html('<ol start="1; x"><li>a</li></ol>'), "<ol><li>a</li></ol>");
    assert.equal(html('<table><tbody><tr><td align="justify">1</td></tr></tbody></table>'), "<table><tbody><tr><td>1</td></tr></tbody></table>");
  });
  test("comments are dropped; entities stay text", () => {
    assert.equal(html("<p>a<!-- c -->&lt;b&gt;</p>"), "<p>a&lt;b&gt;</p>");
  });
});
