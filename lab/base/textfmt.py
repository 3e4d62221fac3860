"""Plain-text formatting shared by the reports (72 columns, mail-ready)."""

WIDTH = 72


def fmt_us(v) -> str:
    if v != v:           # NaN
        return "-"
    return f"{v:.0f}"


def wrap(text: str, indent: str = "") -> list:
    """Lines of at most WIDTH columns; continuation lines indented by two
    more than the first, so a reader sees where an item ends."""
    words, lines, line = text.split(), [], indent
    for w in words:
        if len(line) + len(w) + 1 > WIDTH and line.strip():
            lines.append(line.rstrip())
            line = indent + "  "
        line += w + " "
    if line.strip():
        lines.append(line.rstrip())
    return lines
