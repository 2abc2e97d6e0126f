"""QA pages, one module per screen family (queue, submission, review_settings, stats, comments, audit, notifications)."""
