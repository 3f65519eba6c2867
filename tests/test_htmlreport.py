"""`longpipe report`'s HTML rendering."""

from __future__ import annotations


def test_report_markdown_is_commonmark_with_tables_and_escapes_html() -> None:
    from longpipe.htmlreport import markdown

    page = markdown("# Title\n\nSome `code` and **bold** <script>x</script>.\n\n"
                    "| a | b |\n|---|--:|\n| 1 | 2 |\n\n- one\n- two\n\n```\nfenced <b>\n```\n")
    assert "<h2>Title</h2>" in page and "<h1>" not in page  # the page title is the only h1
    assert "<code>code</code>" in page and "<strong>bold</strong>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<table>" in page and "<th>a</th>" in page and '<td style="text-align:right">2</td>' in page
    assert "<li>one</li>" in page and "fenced &lt;b&gt;" in page
