"""The recall store: the ``memories`` table, a relationship's partition of it hot in Redis
and cold in Postgres, and its ranking (BM25 + vectors, fused, with time decay).

One job per module: ``models`` the table, ``store`` the tiers, ``versions`` which copy is
current, ``cold`` and ``wire`` the reads from Postgres, ``encoding`` the Redis copy,
``local`` this process's copies, ``partition`` what a partition holds, ``index``,
``bm25``, ``fusion``, ``decay``, ``ranker`` and ``weights`` the ranking, ``text`` the
tokenizer, ``services`` and ``search`` the recall the API serves. See
docs/architecture.md and decision 0030.
"""
