"""The report's trace part."""
from lab import report_traces


def test_the_report_counts_traced_runs_that_agree():
    t = {"fs/a": {"agreed": 2, "mismatched": []},
         "fs/b": {"agreed": 1, "mismatched": ["boot 2: 5 windows, 9 "
                                              "samples"]}}
    line = " ".join(report_traces.agreement_line(t))
    assert line.startswith("Traces agree with cyclictest sample for sample "
                           "in 3 of 4 traced runs")
    assert report_traces.agreement_line({"fs/a": {"agreed": 0,
                                                  "mismatched": []}}) == []
