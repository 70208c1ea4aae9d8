"""Drop-in replacements for the field's reference tools, output byte for byte."""
