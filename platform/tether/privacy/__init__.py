"""Privacy filter: masks personal data and secrets in text before it is stored or logged."""
