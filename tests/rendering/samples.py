"""Realistic sample documents of one world (an acquisition), as content + metadata."""

from authoring.rendering import WorldItem

MEMO = """# Project Falcon — Investment Committee Memo

Prepared for the **Investment Committee** on *5 January 2026*.

## Transaction summary

Acme Holdings proposes to acquire **100%** of Zoë Analytics Ltd for €48,500,000 on a cash-free, debt-free basis.

## Key terms

- Enterprise value of **€48.5m**, 9.7x LTM EBITDA
- Locked-box date 30 September 2025
- *Escrow* of 10% for 18 months

## Next steps

1. Confirmatory diligence by 31 January
2. Signing targeted for 15 February
3. Closing after FCA change-of-control approval

| Item | Owner | Due |
|---|---|---|
| Tax diligence | Deloitte | 2026-01-20 |
| SPA first draft | Latham \\| London | 2026-01-23 |
"""

CAP_TABLE = """## Sheet: Cap table
|   | A | B | C |
|---|---|---|---|
| 1 | Holder | Shares | Percent |
| 2 | Founders | 6000000 | =B2/B4 |
| 3 | Investors | 4000000 | =B3/B4 |
| 4 | Total | =SUM(B2:B3) | =SUM(C2:C3) |
Formats: B2:B4 #,##0; C2:C4 0.0%

## Sheet: Valuation
|   | A | B |
|---|---|---|
| 1 | Price per share | 4.85 |
| 2 | Equity value | =B1*'Cap table'!B4 |
| 3 | Net debt | -1500000 |
| 4 | Enterprise value | =B2-B3 |
| 5 | Signing date | 2026-02-15 |
| 6 | Long-stop date | =B5+90 |
| 7 | Above 50m? | =IF(B4>50000000,"yes","no") |
| 8 | Average holding | =AVERAGE('Cap table'!B2:B3) |
Formats: B1 #,##0.00; B2:B4 #,##0; B6 yyyy-mm-dd
"""

DECK = """# Project Falcon — Board update

## Deal status

- Exclusivity signed on **5 January**
- Price: €48.5m enterprise value

Notes: Open with the timeline; the board asked about exclusivity last time.

## Risks

- FCA approval could take *12 weeks*
- Key-person risk: the CTO

Notes: Mention the retention package.

## Ask

- Approve signing up to €50m
"""

CSV = 'Party,Role,Email\nAcme Holdings,Buyer,deals@acme.com\n"Zoë Analytics, Ltd",Target,"cfo@zoe.io"\n'

ROOT = "Mail/01 LOI sent.eml"
EMAILS = [
    WorldItem(ROOT, "Dear Marc,\n\nPlease find attached our non-binding offer.\nFrom our side the price is firm.\n\nBest,\nJane\n", {
        "from": "Jane Doe <jane@acme.com>", "to": "Marc Zoë <marc@zoe.io>", "cc": '"Smith, John" <john@acme.com>',
        "date": "2026-01-05T09:00:00+01:00", "subject": "Project Falcon — LOI", "attachments": "Deal/LOI.docx, Deal/Model.xlsx"}),
    WorldItem("Mail/02 Re LOI.eml", "Jane,\n\nThanks, we will revert by Friday.\n\nMarc", {
        "from": "Marc Zoë <marc@zoe.io>", "to": "Jane Doe <jane@acme.com>", "date": "2026-01-05T14:30:00+00:00",
        "subject": "Re: Project Falcon — LOI", "thread": ROOT}),
    WorldItem("Mail/03 Re Re LOI.eml", "Marc,\n\nNoted.\n\nJane", {
        "from": "Jane Doe <jane@acme.com>", "to": "Marc Zoë <marc@zoe.io>", "bcc": "counsel@firm.law",
        "date": "2026-01-06T08:00:00-05:00", "subject": "Re: Project Falcon — LOI", "thread": ROOT}),
    WorldItem("Mail/04 Diligence.eml", "Team, the data room is open.", {
        "from": "John Smith <john@acme.com>", "to": "deal-team@acme.com", "date": "2026-01-05T12:00:00Z",
        "subject": "Diligence kick-off"}),
]

CHATS = [
    WorldItem("Chat/deal-team/001", "Kick-off call moved to 10:00", {
        "channel": "deal-team", "from": "Jane Doe <jane@acme.com>", "date": "2026-01-05T09:00:00+01:00"}),
    WorldItem("Chat/deal-team/002", "OK, I'll update the invite", {
        "channel": "deal-team", "from": "John Smith <john@acme.com>", "date": "2026-01-05T09:02:00+01:00", "thread": "Chat/deal-team/001"}),
    WorldItem("Chat/deal-team/003", "Anyone seen the QoE report?", {
        "channel": "deal-team", "from": "John Smith <john@acme.com>", "date": "2026-01-05T11:00:00+01:00"}),
    WorldItem("Chat/legal/001", "SPA markup is in the data room", {
        "channel": "legal", "from": "Ana Ruiz <ana@firm.law>", "date": "2026-01-06T16:00:00Z"}),
]

EVENTS = [
    WorldItem("Calendar/IC meeting", "## Agenda\n\n1. Valuation\n2. **Go / no-go**", {
        "subject": "Investment Committee — Project Falcon", "start": "2026-01-12T15:00:00+01:00", "end": "2026-01-12T16:30:00+01:00",
        "location": "Board room, 5th floor", "attendees": 'Jane Doe <jane@acme.com>, "Smith, John" <john@acme.com>'}),
    WorldItem("Calendar/Signing", "Signing call.", {
        "subject": "SPA signing", "start": "2026-02-15T10:00:00Z", "end": "2026-02-15T11:00:00Z",
        "attendees": "Marc Zoë <marc@zoe.io>"}),
]
