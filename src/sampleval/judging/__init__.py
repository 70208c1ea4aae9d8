"""Judging: the file-based loop (:mod:`.loop`: a sample directory filled batch by batch with
labels people give in their own tool), judging until confident (:mod:`.confident`: stopping and
allocation rules over topics, adaptive and anytime) and the budget planner from a pilot sample
(:mod:`.planning`)."""
