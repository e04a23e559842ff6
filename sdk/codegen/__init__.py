"""Code generators of the SDKs (run ``python sdk/generate.py``)."""
