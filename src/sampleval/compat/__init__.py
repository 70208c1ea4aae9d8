"""Drop-in command lines: other tools' options and output formats over sampleval's
measures (``trec_eval``)."""
