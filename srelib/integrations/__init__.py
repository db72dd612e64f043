"""Adapters that meet other frameworks on their own terms; each module is a leaf front end,
imported only by its user (``import srelib`` loads none of them)."""
