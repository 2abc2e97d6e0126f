"""The world's consistency check: where do the documents state a fact of the deal (a party,
an amount, a date, a percentage, the governing law, a period) with a value that differs from
the facts sheet, or from the other documents?

values.py reads typed values and normalises them; passages.py cuts a document into
sentences and table rows; roles.py names the facts the check knows and gives a value its
role from the words next to it; parties.py reads parties by role; report.py compares.
Built to report nothing it is unsure of: a value without a role is never compared.
"""

from authoring.consistency.report import Evidence, Fact, Finding, Report, check

__all__ = ["Evidence", "Fact", "Finding", "Report", "check"]
