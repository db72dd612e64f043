"""``python -m srelib.env.taskgen``: generate the suite into an empty cache and write the
packaged digests its cache is verified against (:func:`.cache.write_digests`)."""

from srelib.env.taskgen.cache import write_digests

print(write_digests())
