"""The prompts that make a model write compaction and branch summaries.

The summary *format* is a protocol shared with pi (docs/compaction.md: the same Markdown
sections, ``<read-files>``/``<modified-files>`` tags, the ``<conversation>`` and
``<previous-summary>`` wrappers, the split-turn separator), so a pitrio summary reads like a pi
summary to the next model and to an extension that parses one. The instructions around it carry
the content of pi 0.73.1's prompts in pitrio's own words.
"""

from __future__ import annotations

from typing import Final

SUMMARIZATION_SYSTEM_PROMPT: Final = (
    "You are a context summarization assistant. You will read a conversation between a user "
    "and an AI coding assistant and write a structured summary of it in exactly the format "
    "you are given.\n"
    "\n"
    "Do NOT continue the conversation and do NOT answer any question asked in it. Output ONLY "
    "the structured summary."
)

_KEEP_PRECISE: Final = (
    "Keep every section brief. Quote file paths, function names and error messages exactly."
)

SUMMARIZATION_PROMPT: Final = (
    (
        "The messages above are a conversation to summarize. Write a structured context "
        "checkpoint that another LLM will use to carry on with the work.\n"
    )
    + f"""
Use EXACTLY this format:

## Goal
[What is the user trying to achieve? List several goals if the session covers several tasks.]

## Constraints & Preferences
- [Constraints, preferences or requirements the user stated]
- [Or "(none)" if there were none]

## Progress
### Done
- [x] [Tasks and changes that are complete]

### In Progress
- [ ] [Work under way]

### Blocked
- [What stands in the way, if anything]

## Key Decisions
- **[Decision]**: [Short rationale]

## Next Steps
1. [What should happen next, in order]

## Critical Context
- [Data, examples or references needed to continue]
- [Or "(none)" if not applicable]

{_KEEP_PRECISE}"""
)

UPDATE_SUMMARIZATION_PROMPT: Final = (
    (
        "The messages above are NEW conversation messages. Fold them into the existing summary "
        "given in the <previous-summary> tags.\n"
    )
    + f"""
Update the structured summary with the new information. RULES:
- KEEP everything the previous summary says
- ADD the new progress, decisions and context
- UPDATE Progress: move items from "In Progress" to "Done" once they are complete
- UPDATE "Next Steps" to match what was accomplished
- KEEP file paths, function names and error messages exactly as written
- You may drop what is clearly no longer relevant

Use EXACTLY this format:

## Goal
[Keep the existing goals; add new ones if the task grew]

## Constraints & Preferences
- [Keep the existing ones; add any new ones]

## Progress
### Done
- [x] [Items done before AND items completed since]

### In Progress
- [ ] [Current work, updated]

### Blocked
- [Current blockers; remove the resolved ones]

## Key Decisions
- **[Decision]**: [Short rationale] (keep the earlier ones, add new ones)

## Next Steps
1. [Updated to the current state]

## Critical Context
- [Keep what matters, add what is new]

{_KEEP_PRECISE}"""
)

TURN_PREFIX_SUMMARIZATION_PROMPT: Final = (
    (
        "This is the PREFIX of a turn that was too large to keep whole. Its SUFFIX (the most "
        "recent work) is kept verbatim.\n"
    )
    + """
Summarize the prefix so that the kept suffix makes sense:

## Original Request
[What did the user ask for in this turn?]

## Early Progress
- [Key decisions and work done in the prefix]

## Context for Suffix
- [What one needs to know to understand the kept recent work]

Be brief. Cover only what the kept suffix needs."""
)

BRANCH_SUMMARY_PROMPT: Final = (
    (
        "Write a structured summary of this conversation branch, to give context when the user "
        "comes back to it later.\n"
    )
    + f"""
Use EXACTLY this format:

## Goal
[What was the user trying to achieve in this branch?]

## Constraints & Preferences
- [Constraints, preferences or requirements stated]
- [Or "(none)" if there were none]

## Progress
### Done
- [x] [Tasks and changes that are complete]

### In Progress
- [ ] [Work started but not finished]

### Blocked
- [What stands in the way, if anything]

## Key Decisions
- **[Decision]**: [Short rationale]

## Next Steps
1. [What should happen next to carry on with this work]

{_KEEP_PRECISE}"""
)

BRANCH_SUMMARY_PREAMBLE: Final = (
    "The user explored a different conversation branch before returning here.\n"
    "Summary of that exploration:\n\n"
)
"""Put before a generated branch summary (pi's wording: the next model reads it)."""

ADDITIONAL_FOCUS: Final = "\n\nAdditional focus: "
"""Joins custom instructions (``/compact <instructions>``) to a prompt."""

SPLIT_TURN_SEPARATOR: Final = "\n\n---\n\n**Turn Context (split turn):**\n\n"
"""Joins the history summary and the turn-prefix summary of a split turn."""

NO_PRIOR_HISTORY: Final = "No prior history."
"""The history part of a split-turn summary when nothing precedes the turn."""
