"""Hybrid recall over one relationship's partition: BM25 + vectors, fused with RRF."""
