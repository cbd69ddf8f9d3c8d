"""Pure Guts rules: cards, hand ranking, rulesets, the table state machine and its views.

Nothing here does I/O, reads the clock or draws randomness: seeds and `now` come in as arguments,
so replaying a table's events reproduces it exactly.
"""
