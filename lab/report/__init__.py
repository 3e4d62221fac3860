"""Stage 4: write reports, the front page's answer and the reports
index."""
