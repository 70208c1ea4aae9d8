"""Estimation built on the estimators of :mod:`sampleval.estimators`: the audit of a
machine judge (:mod:`.audit`) and simultaneous rank intervals (:mod:`.ranks`). The engine
redesign moves the estimators here (docs: ../shared/DESIGN.md's layout)."""
