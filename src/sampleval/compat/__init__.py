"""Drop-in replacements for the field's reference tools, output byte for byte:
``trec_eval`` (trec_eval 10's command line over sampleval's measures) and ``sample_eval``
(NIST's sample_eval.pl)."""
